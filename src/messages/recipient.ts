/**
 * Who a message is to or from, as one string (a record's `recipient`, a contact's key in its
 * number's windows, the operator's recipient): a phone number in E.164 digits, or, for users who
 * withhold their number behind a username, the operator's business-scoped user id (BSUID, e.g.
 * `US.13491208655302741918`). The two never look alike: a phone number is digits only, a user id
 * starts with a two-letter country code and a dot.
 */
export const isPhoneNumber = (id: string): boolean => /^[0-9]+$/.test(id);

/**
 * A business-scoped user id as the operator writes it: two capital letters (the country), then
 * dot-separated letters and digits (a parent id adds `ENT.`). 160 characters at most, well above
 * the operator's 128 after the country. The shapes, from the operator's "Business-scoped user IDs"
 * page (developers.facebook.com/documentation/business-messaging/whatsapp/business-scoped-user-ids/):
 * an ISO 3166 alpha-2 code, a period and up to 128 alphanumeric characters (`US.13491208655302741918`),
 * and the parent id of linked portfolios (`US.ENT.11815799212886844830`). Read loosely past that
 * (more dot-separated parts), so that a shape the operator adds still reaches its user.
 */
export const USER_ID = /^[A-Z]{2}(\.[A-Za-z0-9]+)+$/;
export const MAX_USER_ID_LENGTH = 160;

/** E.164 without '+': a country code (never 0) and at most 32 digits in all. Documented as `to`'s pattern. */
export const E164_DIGITS = /^[1-9][0-9]{0,31}$/;

/** The send's recipient as records, numbers and the operator know it: the phone number, or the user id. */
export function recipientOf(request: { to?: string | undefined; toUserId?: string | undefined }): string {
  const recipient = request.to ?? request.toUserId;
  if (recipient === undefined) throw new Error("a validated send has a recipient");
  return recipient;
}
