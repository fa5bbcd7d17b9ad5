import type { MessageStatus } from "../../domain/message";
import type { StatusUpdate } from "./contract";

/** The parts of a message record that status reports change. */
export interface LifecycleState {
  status: MessageStatus;
  upstream_message_id: string | null;
  processing_at: number | null;
  sent_at: number | null;
  failed_at: number | null;
  delivered_at: number | null;
  read_at: number | null;
  outcome_unknown_since: number | null;
  error_code: string | null;
  error_message: string | null;
  error_retriable: number | null;
  upstream_error_code: string | null;
}

/**
 * Statuses only move forward: queued → processing → sent → failed. `sent`
 * means the operator accepted the message; the operator may still report a
 * delivery failure afterwards (its asynchronous `failed` status), which moves
 * it to `failed` unless it was already reported delivered or read. `failed` is final. So duplicates, retries and reports that
 * arrive out of order are harmless, and nothing ever moves a message back to a
 * state from which it could be sent again.
 *
 * A user on several devices may be reported both failed (one device) and delivered or read
 * (another), in either order. The first of the two decides the status: a failure after a
 * delivery or read is stale (the user has the message); a delivery or read after a failure is
 * recorded (`delivered_at`, `read_at`) and the message stays `failed`, with its error.
 */
const RANK: Record<MessageStatus, number> = { queued: 0, processing: 1, sent: 2, failed: 3 };

export interface Transition {
  next: LifecycleState;
  /** Anything to write. */
  changed: boolean;
  /** Worth a `message.status` event: a new status, or a first delivery or read report. */
  announce: boolean;
}

export function applyTransition(current: LifecycleState, update: StatusUpdate): Transition {
  const reported: MessageStatus | undefined =
    update.status ?? (update.deliveredAt !== undefined || update.readAt !== undefined ? "sent" : undefined);
  // A message the operator reported delivered or read reached its recipient: a failure reported later is stale.
  const reachedRecipient = current.delivered_at !== null || current.read_at !== null;
  const status =
    reported !== undefined && RANK[reported] > RANK[current.status] && !(reported === "failed" && reachedRecipient)
      ? reported
      : current.status;
  const becameFailed = status === "failed" && current.status !== "failed";
  // Where a delivery or read report is recorded: a sent message, or one failed before (see above).
  const reached = status === "sent" || (status === "failed" && current.status === "failed");
  const settled = status === "sent" || status === "failed";

  const next: LifecycleState = {
    status,
    upstream_message_id: current.upstream_message_id ?? update.upstreamMessageId ?? null,
    processing_at: current.processing_at ?? (status !== "queued" ? update.at : null),
    sent_at: current.sent_at ?? (status === "sent" ? update.at : null),
    failed_at: current.failed_at ?? (status === "failed" ? update.at : null),
    // Delivered or read on a sent message, or on one the operator failed before (another device);
    // a read report may come without a delivery report.
    delivered_at: current.delivered_at ?? (reached ? (update.deliveredAt ?? null) : null),
    read_at: current.read_at ?? (reached ? (update.readAt ?? null) : null),
    outcome_unknown_since: settled
      ? null
      : (current.outcome_unknown_since ?? (update.outcomeUnknown && status === "processing" ? update.at : null)),
    error_code: becameFailed ? (update.error?.code ?? null) : current.error_code,
    error_message: becameFailed ? (update.error?.message ?? null) : current.error_message,
    error_retriable: becameFailed ? (update.error ? (update.error.retriable ? 1 : 0) : null) : current.error_retriable,
    upstream_error_code: becameFailed ? (update.error?.upstreamCode ?? null) : current.upstream_error_code,
  };
  const changed = (Object.keys(next) as (keyof LifecycleState)[]).some((k) => next[k] !== current[k]);
  const announce =
    status !== current.status || next.delivered_at !== current.delivered_at || next.read_at !== current.read_at;
  return { next, changed, announce };
}
