import { now } from "../../lib/clock";
import { newUuidV7, utcDay } from "../../domain/job-id";
import { derivedEventId, newEventId, type MessageStatusData, type WebhookEvent } from "../../domain/events";
import { historyStub } from "../history/history";
import type { InboundRecord, StatusResult, StatusUpdate } from "./contract";
import type { WorkspaceContext } from "./context";
import { countOne } from "./daily-counts";
import { recordEvent } from "./event-log";
import { historyBoundary, historyDayOf, historyDays } from "./history-tiering";
import {
  findInboundByUpstreamId,
  findMessage,
  insertInbound,
  isOutbound,
  lifecycleOf,
  toMessageView,
  writeLifecycle,
  type MessageRow,
} from "./messages";
import { applyTransition } from "./status-transition";

/**
 * Events wait up to this long before publishing, so that the changes of that
 * second go out packed in one queue message (billed per message): a number
 * sending at its 2/s puts about two messages' events in each pack instead of
 * one. The cost: a customer's webhook hears of a change up to 1 s later.
 */
export const PUBLISH_DELAY_MS = 1_000;
/** The operator retries an inbound webhook for up to 7 days (one more: our record may fall on the next UTC day). */
const OPERATOR_RETRY_DAYS = 8;
/** How far the operator's clock may run ahead of ours. */
const OPERATOR_CLOCK_SKEW_MS = 60 * 60_000;

/**
 * Applying what happens to messages: status changes from the number (its claim,
 * the operator's answers and reports), inbound messages, test events; and
 * deriving the customer events they announce (recorded in the event log).
 */
export class StatusLedger {
  /** Reports being applied to messages in history, per jobId (applyInHistory). */
  private readonly historyUpdates = new Map<string, Promise<StatusResult>>();

  constructor(private readonly w: WorkspaceContext) {}

  /**
   * Moves messages forward (see status-transition.ts): duplicates and late or
   * out-of-order reports are harmless. Each effective change records one
   * `message.status` event in the same transaction.
   */
  async applyStatuses(updates: StatusUpdate[]): Promise<StatusResult[]> {
    let announced = false;
    const results = this.w.storage.transactionSync(() =>
      updates.map((u): StatusResult => {
        const row = findMessage(this.w.sql, u.jobId);
        if (!row && historyDayOf(this.w.sql, u.jobId) !== null) return { known: true, status: null }; // applied below, in its shard
        if (!row || !isOutbound(row)) return { known: false, status: null };
        const t = applyTransition(lifecycleOf(row), u);
        if (!t.changed) return { known: true, status: row.status };
        const at = now();
        writeLifecycle(this.w.sql, row.id, t.next, Math.max(u.at, row.updated_at));
        if (t.next.status !== row.status && (t.next.status === "sent" || t.next.status === "failed")) {
          countOne(this.w.sql, u.at, row.channel_number_id, t.next.status);
        }
        if (t.announce) {
          const fresh = findMessage(this.w.sql, row.id)!;
          recordEvent(this.w.sql, this.statusEvent(fresh, row), row.id, at, PUBLISH_DELAY_MS, this.w.confirmWithinMs);
          announced = true;
        }
        return { known: true, status: t.next.status };
      }),
    );
    for (let i = 0; i < updates.length; i++) {
      if (results[i]!.known && results[i]!.status === null) {
        results[i] = await this.applyInHistory(updates[i]!);
        announced = true;
      }
    }
    if (announced) await this.w.wake(now() + PUBLISH_DELAY_MS);
    return results;
  }

  /**
   * A late report about a message already in its day's history shard. The change is decided from
   * the shard's row, its event and count are recorded here first, then the shard is written: a
   * crash in between leaves the shard unchanged, and the retry derives the same change and the
   * same event id, which is recorded once (the count goes with the event). One report per message
   * at a time, so that two reports never derive their changes from the same row.
   */
  private async applyInHistory(u: StatusUpdate): Promise<StatusResult> {
    const day = historyDayOf(this.w.sql, u.jobId);
    const workspaceId = this.w.workspaceId();
    if (day === null || !workspaceId) return { known: false, status: null };
    const earlier = this.historyUpdates.get(u.jobId) ?? Promise.resolve();
    const mine = earlier
      .catch(() => undefined)
      .then(async (): Promise<StatusResult> => {
        const shard = historyStub(this.w.env, workspaceId, day);
        const row = await shard.get(u.jobId);
        if (!row || !isOutbound(row)) return { known: false, status: null };
        const t = applyTransition(lifecycleOf(row), u);
        if (!t.changed) return { known: true, status: row.status };
        if (t.announce) {
          const after: MessageRow = {
            ...row,
            ...t.next,
            updated_at: Math.max(u.at, row.updated_at),
            version: row.version + 1,
          };
          this.w.storage.transactionSync(() => {
            const recorded = recordEvent(
              this.w.sql,
              this.statusEvent(after, row),
              row.id,
              now(),
              PUBLISH_DELAY_MS,
              this.w.confirmWithinMs,
            );
            if (recorded && after.status !== row.status && (after.status === "sent" || after.status === "failed"))
              countOne(this.w.sql, u.at, row.channel_number_id, after.status);
          });
        }
        await shard.applyStatus(u);
        return { known: true, status: t.next.status };
      });
    this.historyUpdates.set(u.jobId, mine);
    try {
      return await mine;
    } finally {
      if (this.historyUpdates.get(u.jobId) === mine) this.historyUpdates.delete(u.jobId);
    }
  }

  /**
   * Records inbound messages once each (the operator retries its webhooks) and
   * announces each with a `message.received` event. Returns our ids, in order.
   */
  async recordInbound(workspaceId: string, records: InboundRecord[]): Promise<string[]> {
    this.w.rememberWorkspace(workspaceId);
    const moved = await this.inboundInHistory(workspaceId, records);
    const ids = this.w.storage.transactionSync(() =>
      records.map((m) => {
        const seen = findInboundByUpstreamId(this.w.sql, m.upstreamMessageId)?.id ?? moved.get(m.upstreamMessageId);
        if (seen) return seen;
        const at = now();
        const id = newUuidV7(at);
        insertInbound(this.w.sql, id, m, at);
        countOne(this.w.sql, at, m.channelNumberId, "received");
        recordEvent(
          this.w.sql,
          {
            id: derivedEventId(workspaceId, "message.received", m.channelNumberId, m.upstreamMessageId),
            type: "message.received",
            workspaceId,
            channelNumberId: m.channelNumberId,
            createdAt: new Date(now()).toISOString(),
            data: {
              messageId: id,
              channelNumberId: m.channelNumberId,
              from: m.from,
              type: m.type,
              text: m.text === null ? null : { body: m.text },
              content: m.content,
              upstreamMessageId: m.upstreamMessageId,
              receivedAt: new Date(m.at).toISOString(),
            },
          },
          id,
          now(),
          PUBLISH_DELAY_MS,
          this.w.confirmWithinMs,
        );
        return id;
      }),
    );
    await this.w.wake(now() + PUBLISH_DELAY_MS);
    return ids;
  }

  /**
   * Inbound messages the operator delivers again after our record of them moved to history (it
   * retries a webhook for up to 7 days): their ids, by upstream id. Our record is never older
   * than the operator's time of the message (less a clock skew), so only a message whose time is
   * at or before the newest moved record can be in history, and only on the days from its time
   * to 7 days later; the usual inbound message is newer and costs no lookup. No row is kept for it.
   */
  private async inboundInHistory(workspaceId: string, records: InboundRecord[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    const boundary = historyBoundary(this.w.sql);
    if (!boundary) return found;
    for (const m of records) {
      const earliest = m.at - OPERATOR_CLOCK_SKEW_MS;
      if (earliest > boundary.createdAt || findInboundByUpstreamId(this.w.sql, m.upstreamMessageId)) continue;
      const from = utcDay(earliest);
      for (const day of historyDays(
        this.w.sql,
        from,
        Math.min(utcDay(boundary.createdAt), from + OPERATOR_RETRY_DAYS),
      )) {
        const row = await historyStub(this.w.env, workspaceId, day).findInbound(m.upstreamMessageId);
        if (row) {
          found.set(m.upstreamMessageId, row.id);
          break;
        }
      }
    }
    return found;
  }

  /** A `webhook.test` event for a number's webhook, recorded and published like any other. */
  async recordTestEvent(workspaceId: string, channelNumberId: string): Promise<string> {
    this.w.rememberWorkspace(workspaceId);
    const event: WebhookEvent = {
      id: newEventId(),
      type: "webhook.test",
      workspaceId,
      channelNumberId,
      createdAt: new Date(now()).toISOString(),
      data: { message: "This is a test event. Your endpoint received and can verify our webhooks." },
    };
    recordEvent(this.w.sql, event, event.id, now(), 0, this.w.confirmWithinMs);
    await this.w.wake(now());
    return event.id;
  }

  /** The `message.status` event of the change from `before` to `row`; its id is derived from the message and what changed. */
  private statusEvent(row: MessageRow, before: MessageRow): WebhookEvent {
    const message = toMessageView(row);
    const previous = before.status;
    if (message.direction !== "outbound" || previous === "received")
      throw new Error("status events are about outbound messages");
    const data: MessageStatusData = {
      messageId: message.id,
      channelNumberId: message.channelNumberId,
      to: message.to,
      status: message.status,
      previousStatus: previous,
      upstreamMessageId: message.upstreamMessageId,
      error: message.error,
      deliveredAt: message.deliveredAt,
      readAt: message.readAt,
      updatedAt: message.updatedAt,
    };
    // Each of these happens once per message (statuses only move forward; delivery and read times are set once).
    const what = row.status !== before.status ? row.status : row.read_at !== before.read_at ? "read" : "delivered";
    const workspaceId = this.w.workspaceId() ?? "";
    return {
      id: derivedEventId(workspaceId, "message.status", message.id, what),
      type: "message.status",
      workspaceId,
      channelNumberId: message.channelNumberId,
      createdAt: new Date(now()).toISOString(),
      data,
    };
  }
}
