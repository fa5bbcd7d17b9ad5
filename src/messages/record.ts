import type { Message } from "./message";
import type { Direction, MessageStatus } from "./status";
import { inboundExtrasOf } from "./inbound-details";
import { isPhoneNumber } from "./recipient";
import { templateFactsOf } from "./content";
import { mediaViewOf, storedMediaOf, type InboundMedia } from "./inbound-media";

// A message's record as the engine keeps it and hands it out, and the views made of it.

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
  /**
   * The record's changes in the order they were committed, one letter each (`ps`, `psf`, `psfd`):
   * written in the same UPDATE as the change it adds. Events, `previousStatus` and the timeline
   * follow it, never the times (which come from three clocks, the operator's in whole seconds).
   * Null on records written before the column: their order is derived from their times once, and
   * stored with their next change.
   */
  changes: string | null;
}

/**
 * A message record as stored: outbound (a send) or inbound (a user writing to a number). The same
 * columns in the slot tables and in history shards.
 *
 * `recipient` is the other party: `to` when outbound, `from` when inbound. It is a phone number (E.164
 * digits) or, for a user known only by it, the operator's user id (`toUserId` of a send, the
 * sender's `from_user_id` when no phone number came): messages/recipient.ts tells them apart.
 * The send's work state (`pending`, `attempts`, `answered`, `next_attempt_at`) and its
 * Idempotency-Key stay behind when a record moves to a history shard: its rows there read them as absent.
 */
export interface MessageRow extends Omit<LifecycleState, "status"> {
  id: string;
  direction: Direction;
  channel_number_id: string;
  recipient: string;
  type: string;
  body: string;
  content: string | null;
  status: MessageStatus | "received";
  created_at: number;
  updated_at: number;
  received_at: number | null;
  // The columns below are read as absent (undefined) from records in history shards, whatever their type says.
  idem_key: string | null;
  fingerprint: string | null;
  /** 1 while the number has work for it: queued, retrying, or in a call. */
  pending: number | null;
  /** Calls the number claimed (each claim is one possible operator call). */
  attempts: number | null;
  /** Calls whose outcome the number reported. A claim beyond the last answer may have left. */
  answered: number | null;
  next_attempt_at: number | null;
  /**
   * An inbound message's further facts as JSON (the sender's user id and profile, what it replies
   * to, its media): null when there are none.
   */
  details: string | null;
  [key: string]: SqlStorageValue;
}

export type OutboundRow = MessageRow & { direction: "outbound"; status: MessageStatus };

export const isOutbound = (row: MessageRow): row is OutboundRow =>
  row.direction === "outbound" && row.status !== "received";

export const lifecycleOf = (row: OutboundRow): LifecycleState => ({
  status: row.status,
  upstream_message_id: row.upstream_message_id,
  processing_at: row.processing_at,
  sent_at: row.sent_at,
  failed_at: row.failed_at,
  delivered_at: row.delivered_at,
  read_at: row.read_at,
  outcome_unknown_since: row.outcome_unknown_since,
  error_code: row.error_code,
  error_message: row.error_message,
  error_retriable: row.error_retriable,
  upstream_error_code: row.upstream_error_code,
  changes: row.changes ?? null,
});

/** The media of an inbound record as GET /messages shows it, or null. */
const mediaOfRow = (row: MessageRow): InboundMedia | null => {
  const stored = storedMediaOf(row.details);
  return stored ? mediaViewOf(row.id, stored) : null;
};

const iso = (ms: number | null | undefined): string | null =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();

export function toMessageView(row: MessageRow): Message {
  if (!isOutbound(row)) {
    return {
      id: row.id,
      direction: "inbound",
      channelNumberId: row.channel_number_id,
      ...inboundExtrasOf(row.recipient, row.details),
      type: row.type,
      text: row.type === "text" ? { body: row.body } : null,
      content: row.content === null ? null : (JSON.parse(row.content) as Record<string, unknown>),
      status: "received",
      upstreamMessageId: row.upstream_message_id,
      receivedAt: iso(row.received_at ?? row.created_at)!,
      createdAt: iso(row.created_at)!,
      media: mediaOfRow(row),
    };
  }
  const template = templateFactsOf(row);
  return {
    id: row.id,
    direction: "outbound",
    channelNumberId: row.channel_number_id,
    to: isPhoneNumber(row.recipient) ? row.recipient : null,
    toUserId: isPhoneNumber(row.recipient) ? null : row.recipient,
    type: template ? "template" : "text",
    text: { body: row.body },
    // Only template messages have it: a text message's view stays as it always was.
    ...(template ? { template } : {}),
    status: row.status,
    upstreamMessageId: row.upstream_message_id,
    error: row.error_code
      ? {
          code: row.error_code,
          message: row.error_message ?? "",
          retriable: row.error_retriable === 1,
          upstreamCode: row.upstream_error_code,
        }
      : null,
    outcomeUnknownSince: iso(row.outcome_unknown_since),
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
    processingAt: iso(row.processing_at),
    sentAt: iso(row.sent_at),
    failedAt: iso(row.failed_at),
    deliveredAt: iso(row.delivered_at),
    readAt: iso(row.read_at),
  };
}
