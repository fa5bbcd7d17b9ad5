import {
  eventIdOf,
  kindFieldsOf,
  type MessageStatusData,
  type StatusFieldsV2,
  type WebhookEvent,
} from "../../messages/events";
import { statusesAfter, type EventKind, type MessageStatusV2, type OutboundChange } from "../../messages/status";
import { receivedMediaOf, storedMediaOf, type ReceivedMedia } from "../../messages/inbound-media";
import { isOutbound, lifecycleOf, toMessageView, type MessageRow, type OutboundRow } from "../../messages/record";
import { sequenceOf } from "./status-transition";

/**
 * Events are not stored: each is a function of the message record. A record keeps each change once
 * (statuses only move forward, delivery and read are reported once), the time of each, and the
 * order they were committed in (`changes`, status-transition.ts), so the event of each change can
 * be rebuilt at any time, with the same id and the same content: "as of" that change, every later
 * change left out. Order and `previousStatus` come from that sequence, never from comparing times:
 * the times come from three clocks (the workspace's, the number's, the operator's whole seconds).
 */

export interface Change {
  kind: EventKind;
  /** When it happened as events say it (`updatedAt`): never before the change before it. */
  at: number;
}

const timeOf = (row: OutboundRow, kind: OutboundChange): number =>
  (kind === "processing"
    ? row.processing_at
    : kind === "sent"
      ? row.sent_at
      : kind === "delivered"
        ? row.delivered_at
        : kind === "read"
          ? row.read_at
          : row.failed_at)!;

/** What happened to a record, in the order it was committed. */
export function changesOf(row: MessageRow): Change[] {
  if (!isOutbound(row)) return [{ kind: "received", at: row.created_at }];
  let floor = -Infinity;
  return sequenceOf(lifecycleOf(row)).map((kind) => {
    floor = Math.max(floor, timeOf(row, kind));
    return { kind, at: floor };
  });
}

/** The changes of `after` that `before` did not have (what an update did), in order. */
export function newChanges(before: MessageRow | null, after: MessageRow): Change[] {
  return changesOf(after).slice(before ? changesOf(before).length : 0);
}

/** An inbound record's media as its event shows it: the facts known on receipt, never the copy's later state. */
const receivedMediaOfRow = (row: MessageRow): ReceivedMedia | null => {
  const stored = storedMediaOf(row.details);
  return stored ? receivedMediaOf(row.id, stored) : null;
};

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * The v2 status a record has after each change of `kinds`: a delivery or read moves a sent message
 * on (a read without a delivery before it straight to `read`), and leaves a failed or read one as it was.
 */
function statusesV2After(kinds: readonly EventKind[]): MessageStatusV2[] {
  let status: MessageStatusV2 = "queued";
  return kinds.map((k) => {
    if (k === "processing" || k === "sent" || k === "failed") status = k;
    else if (k === "read" && status !== "failed") status = "read";
    else if (k === "delivered" && status !== "failed" && status !== "read") status = "delivered";
    return status;
  });
}

/**
 * What the event of a delivery or read says in API v2 (the other changes' events say the same in
 * both versions, and carry nothing more): the status that changed and its predecessor, the
 * delivery and the read as of this change, and the delivery a read report implies.
 */
function statusFieldsV2(row: MessageRow, kinds: readonly EventKind[], i: number): StatusFieldsV2 {
  const statuses = statusesV2After(kinds);
  const asOf = (kind: EventKind, t: number | null): string | null => {
    const j = kinds.indexOf(kind);
    return t !== null && j !== -1 && j <= i ? iso(t) : null;
  };
  const readAt = asOf("read", row.read_at);
  return {
    status: statuses[i] ?? "queued",
    previousStatus: i > 0 ? statuses[i - 1]! : "queued",
    deliveredAt: asOf("delivered", row.delivered_at) ?? readAt,
    readAt,
  };
}

/** The event of one change of a record, as of that change. */
export function eventOf(workspaceId: string, row: MessageRow, change: Change): WebhookEvent {
  const view = toMessageView(row);
  if (view.direction === "inbound") {
    return {
      id: eventIdOf(row.id, "received"),
      type: "message.received",
      workspaceId,
      channelNumberId: view.channelNumberId,
      createdAt: view.createdAt,
      data: {
        messageId: view.id,
        channelNumberId: view.channelNumberId,
        from: view.from,
        fromUserId: view.fromUserId,
        profileName: view.profileName,
        username: view.username,
        replyTo: view.replyTo,
        forwarded: view.forwarded,
        reaction: view.reaction,
        referral: view.referral,
        system: view.system,
        type: view.type,
        text: view.text,
        content: view.content,
        upstreamMessageId: view.upstreamMessageId,
        receivedAt: view.receivedAt,
        media: receivedMediaOfRow(row),
      },
    };
  }
  const kinds = changesOf(row).map((c) => c.kind);
  const i = kinds.indexOf(change.kind);
  const statuses = statusesAfter(kinds);
  const status = statuses[i] ?? "queued";
  // The operator's own times of a delivery and a read, once they happened as of this change.
  const asOf = (kind: EventKind, t: number | null): string | null => {
    const j = kinds.indexOf(kind);
    return t !== null && j !== -1 && j <= i ? iso(t) : null;
  };
  const data: MessageStatusData = {
    messageId: view.id,
    channelNumberId: view.channelNumberId,
    to: view.to,
    toUserId: view.toUserId,
    status,
    previousStatus: i > 0 ? statuses[i - 1]! : "queued",
    upstreamMessageId: change.kind === "processing" ? null : view.upstreamMessageId,
    error: status === "failed" ? view.error : null,
    deliveredAt: change.kind === "delivered" || change.kind === "read" ? asOf("delivered", row.delivered_at) : null,
    readAt: change.kind === "read" ? asOf("read", row.read_at) : null,
    updatedAt: iso(change.at),
    ...kindFieldsOf(view),
  };
  return {
    id: eventIdOf(row.id, change.kind),
    type: "message.status",
    workspaceId,
    channelNumberId: view.channelNumberId,
    createdAt: iso(change.at),
    data,
    ...(change.kind === "delivered" || change.kind === "read" ? { v2: statusFieldsV2(row, kinds, i) } : {}),
  };
}
