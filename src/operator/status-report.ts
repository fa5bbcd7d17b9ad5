import type { OperatorStatus, StatusUpdate } from "../messages/status";
import { permanentError } from "./error-codes";

/**
 * The change an operator status report asks of our record (its webhooks, or the sandbox's
 * simulation of them), routed by our jobId (`biz_opaque_callback_data`, on every call we make).
 * A report without it names nothing of ours: null.
 */
export function operatorStatusUpdate(s: OperatorStatus): StatusUpdate | null {
  if (!s.jobId) return null;
  const update: StatusUpdate = { jobId: s.jobId, at: s.at, upstreamMessageId: s.upstreamMessageId };
  if (s.status === "sent") update.status = "sent";
  if (s.status === "delivered") update.deliveredAt = s.at;
  if (s.status === "read") update.readAt = s.at;
  if (s.status === "failed") {
    update.status = "failed";
    update.error = permanentError(s.errorCode, s.errorMessage ?? undefined, s.errorDetails ?? undefined);
  }
  return update;
}
