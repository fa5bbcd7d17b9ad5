import { recordAudit } from "../audit/record-audit";

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
