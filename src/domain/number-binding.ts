import { markUnverified, type ChannelNumberRow } from "../db/channel-numbers";
import { isoNow } from "../lib/clock";
import { log } from "../lib/log";
import { locateMedia, type MediaAnswer, type MediaLocation, type OperatorMediaConfig } from "../upstream/cloud-media";
import { recordAudit } from "./audit";

// A live number is bound to the workspace that connected it only while the operator honours the
// token that workspace gave. The first refusal of that token (HTTP 401 or code 190), on whatever
// call made with it, marks the binding unverified (`channel_numbers.unverified_since`): inbound
// messages are then recorded without their content, and a caller who proves control of the
// number with the operator may take it over (number-connection.ts). Only an owner's new token,
// confirmed by the operator, verifies the binding again: a token the business revoked never
// earns its holder the number's traffic back by answering once more.

/** The operator's codes for a refused token: 190 (invalid or expired) and 0 (could not authenticate). */
const TOKEN_CODES = new Set(["190", "0"]);

/** Whether the operator's error code refuses the token itself (a send's answer, a status webhook). */
export const refusesToken = (code: string | null): boolean => code !== null && TOKEN_CODES.has(code);

/**
 * Marks the number's binding unverified after the operator refused its token (`what`: where, in
 * words with the operator's status and code, never the token). Idempotent; a disconnected or
 * sandbox number is left alone. Throws only when D1 fails.
 */
export async function tokenRefused(env: Env, numberId: string, what: string): Promise<void> {
  const row = await markUnverified(env.DB, numberId, isoNow(), what.slice(0, 300));
  if (row) log("warn", "operator refused a number's token; its binding is unverified", { channelNumberId: numberId });
}

/**
 * The claim's trace in the workspace that lost the number (the claimant's own entry is its
 * route's, `channel_number.claimed`): what went and why, never who took it.
 */
export function auditClaimedAway(db: D1Database, old: ChannelNumberRow, requestId: string): Promise<void> {
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

/** The operator's media lookup with the number's token; a refusal of the token itself marks the number's binding unverified. */
export async function locateNumberMedia(
  env: Env,
  channelNumberId: string,
  access: { cfg: OperatorMediaConfig; token: string },
  mediaId: string,
): Promise<MediaAnswer<MediaLocation>> {
  const located = await locateMedia(access.cfg, access.token, mediaId);
  if (located.kind === "retry" && located.tokenRefused) await tokenRefused(env, channelNumberId, located.message);
  return located;
}
