import { eventIdOf, type EventKind, type MessageStatusData, type WebhookEvent } from "../../domain/events";
import type { MessageStatus } from "../../domain/message";
import { receivedMediaOf, storedMediaOf, type ReceivedMedia } from "../../domain/inbound-media";
import { isOutbound, toMessageView, type MessageRow } from "./record";

/**
 * Events are not stored: each is a function of the message record. A record's timestamps say what
 * happened to it and when (each change happens at most once: statuses only move forward, delivery
 * and read are reported once), so the event of each change can be rebuilt at any time, with the
 * same id and the same content: "as of" that change, every later fact left out.
 */

const ORDER: readonly EventKind[] = ["processing", "sent", "delivered", "read", "failed"];
/** A failed record's delivery or read was reported after its failure (status-transition.ts): it comes after it. */
const ORDER_FAILED_FIRST: readonly EventKind[] = ["processing", "sent", "failed", "delivered", "read"];

/** Whether this change of the record is a delivery or read reported after its failure (a user on several devices). */
const afterFailure = (row: MessageRow, kind: EventKind): boolean =>
  row.status === "failed" && (kind === "delivered" || kind === "read");

export interface Change {
  kind: EventKind;
  at: number;
}

/** What happened to a record, in causal order (by time; at the same instant, in the order of the lifecycle). */
export function changesOf(row: MessageRow): Change[] {
  if (!isOutbound(row)) return [{ kind: "received", at: row.created_at }];
  const all: (Change | null)[] = [
    row.processing_at !== null ? { kind: "processing", at: row.processing_at } : null,
    row.sent_at !== null ? { kind: "sent", at: row.sent_at } : null,
    row.delivered_at !== null ? { kind: "delivered", at: row.delivered_at } : null,
    row.read_at !== null ? { kind: "read", at: row.read_at } : null,
    row.failed_at !== null ? { kind: "failed", at: row.failed_at } : null,
  ];
  const order = row.status === "failed" ? ORDER_FAILED_FIRST : ORDER;
  // Reported after the failure, a delivery or read comes after it whatever time the operator gave it.
  const at = (c: Change): number => (afterFailure(row, c.kind) ? Math.max(c.at, row.failed_at ?? c.at) : c.at);
  return all
    .filter((c): c is Change => c !== null)
    .sort((a, b) => at(a) - at(b) || order.indexOf(a.kind) - order.indexOf(b.kind));
}

/** The changes of `after` that `before` did not have (what an update did), in causal order. */
export function newChanges(before: MessageRow | null, after: MessageRow): Change[] {
  const had = new Set(before ? changesOf(before).map((c) => c.kind) : []);
  return changesOf(after).filter((c) => !had.has(c.kind));
}

/** An inbound record's media as its event shows it: the facts known on receipt, never the copy's later state. */
const receivedMediaOfRow = (row: MessageRow): ReceivedMedia | null => {
  const stored = storedMediaOf(row.details);
  return stored ? receivedMediaOf(row.id, stored) : null;
};

const iso = (ms: number): string => new Date(ms).toISOString();

function statusAsOf(row: MessageRow, kind: EventKind): MessageStatus {
  return kind === "processing" ? "processing" : kind === "failed" || afterFailure(row, kind) ? "failed" : "sent";
}

function previousOf(row: MessageRow, change: Change): MessageStatus {
  if (change.kind === "processing") return "queued";
  if (change.kind === "sent") return "processing";
  if (afterFailure(row, change.kind)) return "failed";
  if (change.kind === "delivered" || change.kind === "read") return "sent";
  // failed: whatever the record was just before.
  if (row.sent_at !== null && row.sent_at <= change.at) return "sent";
  return row.processing_at !== null && row.processing_at <= change.at ? "processing" : "queued";
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
  const asOf = (t: number | null): string | null => (t !== null && t <= change.at ? iso(t) : null);
  const data: MessageStatusData = {
    messageId: view.id,
    channelNumberId: view.channelNumberId,
    to: view.to,
    toUserId: view.toUserId,
    status: statusAsOf(row, change.kind),
    previousStatus: previousOf(row, change),
    upstreamMessageId: change.kind === "processing" ? null : view.upstreamMessageId,
    error: change.kind === "failed" || afterFailure(row, change.kind) ? view.error : null,
    deliveredAt: change.kind === "delivered" || change.kind === "read" ? asOf(row.delivered_at) : null,
    readAt: change.kind === "read" ? asOf(row.read_at) : null,
    updatedAt: iso(change.at),
    ...(view.template ? { type: "template" as const, template: view.template, text: view.text } : {}),
  };
  return {
    id: eventIdOf(row.id, change.kind),
    type: "message.status",
    workspaceId,
    channelNumberId: view.channelNumberId,
    createdAt: iso(change.at),
    data,
  };
}
