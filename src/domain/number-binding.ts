import { recordAudit } from "./audit";

// A live number is bound to the workspace that connected it only while the operator honours the
// token that workspace gave. The first refusal of that token (HTTP 401 or code 190), on whatever
// call made with it, marks the binding unverified (`channel_numbers.unverified_since`): inbound
// messages are then recorded without their content, and a caller who proves control of the
// number with the operator may take it over (number-connection.ts). Only an owner's new token,
// confirmed by the operator, verifies the binding again: a token the business revoked never
// earns its holder the number's traffic back by answering once more. Where a refusal is seen:
// tokenRefused (db/channel-numbers.ts), called by the hourly check, the number object's drain and
// its webhook reports, the media lookup (upstream/media-access.ts) and the template sync.

/** The operator's codes for a refused token: 190 (invalid or expired) and 0 (could not authenticate). */
const TOKEN_CODES = new Set(["190", "0"]);

/** Whether the operator's error code refuses the token itself (a send's answer, a status webhook). */
export const refusesToken = (code: string | null): boolean => code !== null && TOKEN_CODES.has(code);

/**
 * The claim's trace in the workspace that lost the number (the claimant's own entry is its
 * route's, `channel_number.claimed`): what went and why, never who took it.
 */
export function auditClaimedAway(
  db: D1Database,
  old: { id: string; workspace_id: string; display_phone_number: string; unverified_since: string | null },
  requestId: string,
): Promise<void> {
  return recordAudit(
    db,
    {
      workspaceId: old.workspace_id,
      actor: { type: "admin", id: "number-claim" },
      actorLabel: "another workspace that proved control of the number with the operator",
      clientAddress: null,
      requestId,
    },
    {
      action: "channel_number.claimed_away",
      target: { type: "channel_number", id: old.id },
      detail: `${old.display_phone_number}: the operator refused this workspace's token since ${old.unverified_since ?? "?"}`,
    },
  );
}
