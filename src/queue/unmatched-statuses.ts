import type { ChannelNumberRow } from "../db/channel-numbers";
import { matchReports, recipientsKnownAs } from "../engine/operator-events";
import type { OperatorStatus } from "../messages/status";
import { log } from "../lib/log";

/**
 * Every call carries our jobId (`biz_opaque_callback_data`) and the operator echoes it in most of
 * its reports, but not in all: its own reference lists the field for sent, delivered and read
 * only, and its published failure examples carry none. A report without it is routed like one with
 * it, whatever its kind, once its message is found (the workspace's `matchReports`):
 * - by the operator's id of the message (the report's `id`), which our record keeps once the call's
 *   answer named it, among the records of the conversation: the report's `recipient_id`, and the
 *   recipients the number learnt that id for (an alias: the operator knows a recipient under
 *   another number);
 * - for a failure whose call's answer was lost (the outcome is unknown and we never learnt the
 *   operator's id), by the number, the recipient and time, when exactly one message fits.
 * A report that names none of ours (a message sent from the business's own app on the same number)
 * finds nothing and changes nothing. A report without `recipient_id` names no conversation to
 * look in: left as it is (no lookup scans the records).
 *
 * Returns the routed reports with their jobId; the rest are left as they are (ignored, logged).
 */
export async function routeWithoutJobId(
  env: Env,
  number: ChannelNumberRow,
  reports: readonly OperatorStatus[],
): Promise<OperatorStatus[]> {
  const orphans = reports.filter((r): r is OperatorStatus & { recipientId: string } => !r.jobId && !!r.recipientId);
  if (orphans.length === 0) return [];
  const waIds = [...new Set(orphans.map((r) => r.recipientId))];
  const aliases = await recipientsKnownAs(env, number.id, waIds);
  const ids = await matchReports(
    env,
    number.workspace_id,
    number.id,
    orphans.map((r) => ({
      upstreamMessageId: r.upstreamMessageId,
      recipients: [r.recipientId, ...(aliases[r.recipientId] ?? [])],
      at: r.at,
      failed: r.status === "failed",
    })),
  );
  const routed = orphans.flatMap((r, i) => (ids[i] ? [{ ...r, jobId: ids[i] }] : []));
  // A failure that found no message leaves one of ours unsettled, or is about a message of the business's own app.
  const lostFailures = orphans.filter((r, i) => !ids[i] && r.status === "failed").length;
  log(lostFailures > 0 ? "warn" : "info", "operator statuses without our jobId", {
    channelNumberId: number.id,
    reports: orphans.length,
    routed: routed.length,
    failuresNotFound: lostFailures,
  });
  return routed;
}
