import type { ChannelNumberRow } from "../db/channel-numbers";
import type { OperatorStatus } from "../durable-objects/channel-number/contract";
import { channelNumberStub, workspaceStub } from "../durable-objects/stubs";
import { log } from "../lib/log";

/**
 * Every call carries our jobId (`biz_opaque_callback_data`) and the operator echoes it in its
 * reports; a `failed` report may still come without it. If its message's call was answered, the
 * report is about a message already settled by that answer. If the answer was lost (a timeout: the
 * outcome is unknown and we never learnt the operator's id for the message), this report is all
 * that will ever settle it: matched by the number, the recipient (the report's `recipient_id`, or
 * the recipients the number learnt that id for) and time, when exactly one message fits
 * (workspace unknown-outcomes.ts). Only failures: a delivery or read without our jobId may be
 * about a message sent from the business's own app on the same number.
 *
 * Returns the matched reports with their jobId; the rest are left as they are (ignored, logged).
 */
export async function matchUnknownOutcomes(
  env: Env,
  number: ChannelNumberRow,
  reports: readonly OperatorStatus[],
): Promise<OperatorStatus[]> {
  const orphans = reports.filter(
    (r): r is OperatorStatus & { recipientId: string } => !r.jobId && r.status === "failed" && !!r.recipientId,
  );
  if (orphans.length === 0) return [];
  const waIds = [...new Set(orphans.map((r) => r.recipientId))];
  const aliases = await channelNumberStub(env, number.id).recipientsKnownAs(waIds);
  const ids = await workspaceStub(env, number.workspace_id).matchUnknownOutcomes(
    number.id,
    orphans.map((r) => ({ recipients: [r.recipientId, ...(aliases[r.recipientId] ?? [])], at: r.at })),
  );
  const matched = orphans.flatMap((r, i) => (ids[i] ? [{ ...r, jobId: ids[i] }] : []));
  log(matched.length < orphans.length ? "warn" : "info", "operator failures without our jobId", {
    channelNumberId: number.id,
    failures: orphans.length,
    matched: matched.length,
  });
  return matched;
}
