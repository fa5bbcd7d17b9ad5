import type { LifecycleState } from "../../messages/record";
import type { MessageStatus, OutboundChange, StatusUpdate } from "../../messages/status";

/** One letter per change in the record's `changes` column (a few bytes: at most five letters). */
const LETTER: Record<OutboundChange, string> = { processing: "p", sent: "s", delivered: "d", read: "r", failed: "f" };
const KIND_OF: Record<string, OutboundChange> = { p: "processing", s: "sent", d: "delivered", r: "read", f: "failed" };
/** The lifecycle's order: that of changes one update makes at once, and of same-time changes of records from before `changes`. */
const LIFECYCLE: readonly OutboundChange[] = ["processing", "sent", "delivered", "read", "failed"];
const FAILED_FIRST: readonly OutboundChange[] = ["processing", "sent", "failed", "delivered", "read"];

const timeColumn = (
  s: Pick<LifecycleState, "processing_at" | "sent_at" | "delivered_at" | "read_at" | "failed_at">,
  kind: OutboundChange,
): number | null =>
  kind === "processing"
    ? s.processing_at
    : kind === "sent"
      ? s.sent_at
      : kind === "delivered"
        ? s.delivered_at
        : kind === "read"
          ? s.read_at
          : s.failed_at;

/** A record's changes in the order they were committed. */
export function sequenceOf(s: LifecycleState): OutboundChange[] {
  if (s.changes !== null && s.changes !== undefined) return [...s.changes].map((c) => KIND_OF[c]!);
  // A record from before the column: by time, a delivery or read reported after a failure after
  // it, same-time changes in the lifecycle's order (what the events of those records always said).
  const order = s.status === "failed" ? FAILED_FIRST : LIFECYCLE;
  const afterFailure = (k: OutboundChange) => s.status === "failed" && (k === "delivered" || k === "read");
  const at = (k: OutboundChange) => {
    const t = timeColumn(s, k)!;
    return afterFailure(k) ? Math.max(t, s.failed_at ?? t) : t;
  };
  return LIFECYCLE.filter((k) => timeColumn(s, k) !== null).sort(
    (a, b) => at(a) - at(b) || order.indexOf(a) - order.indexOf(b),
  );
}

/** The time of the record's last change (the floor of the next one's), or null before any. */
export function lastChangeAt(s: LifecycleState): number | null {
  let at: number | null = null;
  for (const k of sequenceOf(s)) {
    const t = timeColumn(s, k)!;
    at = at === null ? t : Math.max(at, t);
  }
  return at;
}

/** The changes `kinds` appended to the record's sequence (the value of its `changes` column after them). */
export function appendChanges(s: LifecycleState, kinds: readonly OutboundChange[]): string {
  const had = sequenceOf(s);
  return [...had, ...kinds.filter((k) => !had.includes(k))].map((k) => LETTER[k]).join("");
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
  // Our times of a change never go before the record's last change: the operator dates its reports
  // in whole seconds, and the number's clock is not the workspace's.
  const floor = lastChangeAt(current);
  const at = floor === null ? update.at : Math.max(update.at, floor);

  const next: LifecycleState = {
    status,
    upstream_message_id: current.upstream_message_id ?? update.upstreamMessageId ?? null,
    processing_at: current.processing_at ?? (status !== "queued" ? at : null),
    sent_at: current.sent_at ?? (status === "sent" ? at : null),
    failed_at: current.failed_at ?? (status === "failed" ? at : null),
    // Delivered or read on a sent message, or on one the operator failed before (another device);
    // a read report may come without a delivery report.
    delivered_at: current.delivered_at ?? (reached ? (update.deliveredAt ?? null) : null),
    read_at: current.read_at ?? (reached ? (update.readAt ?? null) : null),
    outcome_unknown_since: settled
      ? null
      : (current.outcome_unknown_since ?? (update.outcomeUnknown && status === "processing" ? at : null)),
    error_code: becameFailed ? (update.error?.code ?? null) : current.error_code,
    error_message: becameFailed ? (update.error?.message ?? null) : current.error_message,
    error_retriable: becameFailed ? (update.error ? (update.error.retriable ? 1 : 0) : null) : current.error_retriable,
    upstream_error_code: becameFailed ? (update.error?.upstreamCode ?? null) : current.upstream_error_code,
    changes: current.changes,
  };
  // The delivery and read times are the operator's own (events carry them as `deliveredAt`, `readAt`).
  const added = LIFECYCLE.filter((k) => timeColumn(current, k) === null && timeColumn(next, k) !== null);
  if (added.length > 0) next.changes = appendChanges(current, added);
  const changed = (Object.keys(next) as (keyof LifecycleState)[]).some((k) => next[k] !== current[k]);
  const announce =
    status !== current.status || next.delivered_at !== current.delivered_at || next.read_at !== current.read_at;
  return { next, changed, announce };
}
