// A live number is bound to the workspace that connected it only while the operator honours the
// token that workspace gave. The first refusal of that token (HTTP 401 or code 190), on whatever
// call made with it, marks the binding unverified (`channel_numbers.unverified_since`): inbound
// messages are then recorded without their content, and a caller who proves control of the
// number with the operator may take it over (features/numbers/connect-number.ts). Only an owner's new token,
// confirmed by the operator, verifies the binding again: a token the business revoked never
// earns its holder the number's traffic back by answering once more. Where a refusal is seen:
// tokenRefused (db/channel-numbers.ts), called by the hourly check, the number object's drain and
// its webhook reports, the media lookup (operator/media-access.ts) and the template sync.

/** The operator's codes for a refused token: 190 (invalid or expired) and 0 (could not authenticate). */
const TOKEN_CODES = new Set(["190", "0"]);

/** Whether the operator's error code refuses the token itself (a send's answer, a status webhook). */
export const refusesToken = (code: string | null): boolean => code !== null && TOKEN_CODES.has(code);
