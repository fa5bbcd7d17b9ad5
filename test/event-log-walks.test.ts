import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { workspaceStub } from "../src/durable-objects/stubs";
import {
  CONFIRM_WITHIN_MS,
  FIRST_REPORT_WALK,
  KEEP_SETTLED_EVENTS_MS,
  KEEP_EVENTS_MS,
  REPORT_WALK,
  SETTLED_WALK,
  attemptsAbout,
  attemptsKeyedByWebhook,
  attemptsOfWebhook,
  nextCheckDue,
  nextEventExpiry,
  publishEvents,
  purgeOldEvents,
  recordDeliveries,
  recordEvent,
  republishOverdue,
} from "../src/durable-objects/workspace/event-log";
import { getMeta } from "../src/durable-objects/shared/meta";
import { eventsOf, newEventId, type WebhookEvent, type WebhookQueueMessage } from "../src/domain/events";
import type { DeliveryReport } from "../src/durable-objects/workspace/contract";

/**
 * The event log without indexes on check_at-at-insert and delivered_at: an event awaiting its first
 * report is found by a walk in sequence order, settled events are purged by one. These tests drive
 * the log's functions on a fresh workspace object's storage, with a queue that records what it gets.
 */

const T0 = Date.UTC(2048, 2, 1);

function recordingQueue() {
  const sent: WebhookEvent[] = [];
  const queue = {
    send: async (body: unknown) => void sent.push(...eventsOf(body as WebhookQueueMessage)),
    sendBatch: async (messages: Iterable<MessageSendRequest>) => {
      for (const m of messages) sent.push(...eventsOf(m.body as WebhookQueueMessage));
    },
  } as unknown as Queue;
  return { queue, sent };
}

const event = (i: number): WebhookEvent => ({
  id: newEventId(),
  type: "webhook.test",
  workspaceId: "ws",
  channelNumberId: "num",
  createdAt: new Date(T0 + i).toISOString(),
  data: { message: `event ${i}` },
});

const delivered = (e: WebhookEvent, at: number): DeliveryReport => ({
  eventId: e.id,
  webhookId: "wh_1",
  attempt: 1,
  attemptedAt: at,
  outcome: "delivered",
  statusCode: 200,
  latencyMs: 12,
  error: null,
  nextRetryAt: null,
});

/** Rows written by `fn` (every statement's rowsWritten). */
function written(sql: SqlStorage, fn: (s: SqlStorage) => void): number {
  let total = 0;
  const wrapped = new Proxy(sql, {
    get(target, prop) {
      if (prop !== "exec") return Reflect.get(target, prop, target);
      return (query: string, ...bindings: SqlStorageValue[]) => {
        const cursor = target.exec(query, ...bindings);
        const rows = cursor.toArray();
        total += cursor.rowsWritten;
        return Object.assign(rows[Symbol.iterator](), {
          toArray: () => rows,
          one: () => rows[0],
          rowsWritten: cursor.rowsWritten,
          rowsRead: cursor.rowsRead,
        });
      };
    },
  });
  fn(wrapped);
  return total;
}

const fresh = () => workspaceStub(env, `walks-${crypto.randomUUID()}`);

describe("the event log's walks", () => {
  it("an event writes its row and its id's key only, and a delivered report only its row", async () => {
    await runInDurableObject(fresh(), async (_, state) => {
      const sql = state.storage.sql;
      const e = event(1);
      expect(written(sql, (s) => recordEvent(s, e, "subject-1", T0, 0))).toBe(2);
      expect(sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events WHERE check_at IS NOT NULL").one().n).toBe(0);
      await publishEvents(sql, recordingQueue().queue);
      // The delivered report: its row, and the attempt in the delivery log (kept in its webhook's order: its row and its subject entry).
      expect(written(sql, (s) => recordDeliveries(s, [delivered(e, T0 + 1_000)], T0 + 1_000))).toBe(1 + 2);
      const indexes = sql
        .exec<{ name: string }>(
          "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND sql IS NOT NULL",
        )
        .toArray()
        .map((r) => r.name);
      expect(indexes).toEqual(["events_to_check"]);
    });
  });

  it("an event the queue lost behind more than a walk of delivered ones is published again once its report is overdue, and the walk moves on", async () => {
    await runInDurableObject(fresh(), async (_, state) => {
      const sql = state.storage.sql;
      const { queue, sent } = recordingQueue();
      const count = REPORT_WALK * 2 + 50;
      const lost = REPORT_WALK * 2 + 10;
      const events = Array.from({ length: count }, (_, i) => event(i));
      events.forEach((e, i) => recordEvent(sql, e, `subject-${i}`, T0 + i, 0));
      await publishEvents(sql, queue);
      expect(sent).toHaveLength(count);
      sent.length = 0;
      recordDeliveries(
        sql,
        events.filter((_, i) => i !== lost).map((e) => delivered(e, T0 + 5_000)),
        T0 + 5_000,
      );
      // Nothing is overdue yet; the full walk asks to run at once only to move its start.
      let at = T0 + 6_000;
      for (let i = 0; i < 10; i++) {
        const due = nextCheckDue(sql, at);
        if (due === null || due > at) break;
        await republishOverdue(sql, queue, at);
      }
      expect(sent).toEqual([]);
      // Moved a walk at a time, up to the walk that holds the lost event (sequence lost + 1).
      expect(Number(getMeta(sql, FIRST_REPORT_WALK))).toBe(2 * REPORT_WALK + 1);
      expect(nextCheckDue(sql, at)).toBe(T0 + lost + CONFIRM_WITHIN_MS);
      // Overdue: published again with the same id and body, now watched through check_at.
      at = T0 + lost + CONFIRM_WITHIN_MS;
      await republishOverdue(sql, queue, at);
      expect(sent).toEqual([events[lost]]);
      expect(nextCheckDue(sql, at)).toBe(at + CONFIRM_WITHIN_MS);
      expect(Number(getMeta(sql, FIRST_REPORT_WALK))).toBe(count + 1);
      // Its report settles it: nothing is due any more.
      recordDeliveries(sql, [delivered(events[lost]!, at + 1)], at + 1);
      expect(nextCheckDue(sql, at + 2)).toBeNull();
    });
  });

  it("settled events are purged in sequence order once their window passed, not before", async () => {
    await runInDurableObject(fresh(), async (_, state) => {
      const sql = state.storage.sql;
      const count = SETTLED_WALK + 50;
      const events = Array.from({ length: count }, (_, i) => event(i));
      events.forEach((e, i) => recordEvent(sql, e, `subject-${i}`, T0 + i, 0));
      await publishEvents(sql, recordingQueue().queue);
      const settledAt = T0 + 5_000;
      recordDeliveries(
        sql,
        events.map((e) => delivered(e, settledAt)),
        settledAt,
      );
      const left = () => sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events").one().n;
      expect(nextEventExpiry(sql)).toBe(settledAt + KEEP_SETTLED_EVENTS_MS);
      purgeOldEvents(sql, settledAt + KEEP_SETTLED_EVENTS_MS);
      expect(left()).toBe(count);
      purgeOldEvents(sql, settledAt + KEEP_SETTLED_EVENTS_MS + 1);
      expect(left()).toBe(count - SETTLED_WALK);
      purgeOldEvents(sql, settledAt + KEEP_SETTLED_EVENTS_MS + 1);
      expect(left()).toBe(0);
    });
  });

  it("a settled event behind the settled walk's worth of events still retried waits for them, at most until the age window", async () => {
    await runInDurableObject(fresh(), async (_, state) => {
      const sql = state.storage.sql;
      const events = Array.from({ length: SETTLED_WALK + 1 }, (_, i) => event(i));
      events.forEach((e, i) => recordEvent(sql, e, `subject-${i}`, T0 + i, 0));
      await publishEvents(sql, recordingQueue().queue);
      const failing = events.slice(0, SETTLED_WALK).map((e) => ({
        ...delivered(e, T0 + 5_000),
        outcome: "failed" as const,
        statusCode: 500,
        nextRetryAt: T0 + 60_000,
      }));
      recordDeliveries(sql, [...failing, delivered(events[SETTLED_WALK]!, T0 + 5_000)], T0 + 5_000);
      purgeOldEvents(sql, T0 + 5_000 + KEEP_SETTLED_EVENTS_MS + 1);
      expect(sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events").one().n).toBe(SETTLED_WALK + 1);
    });
  });
});

/** The same storage seen as another handle (the layout is remembered per handle). */
const handle = (sql: SqlStorage): SqlStorage =>
  new Proxy(sql, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });

async function logAttempts(
  sql: SqlStorage,
  webhookOf: (i: number) => string,
  count: number,
  at: number,
): Promise<WebhookEvent[]> {
  const events = Array.from({ length: count }, (_, i) => event(i));
  events.forEach((e, i) => recordEvent(sql, e, `subject-${i % 2}`, at + i, 0));
  await publishEvents(sql, recordingQueue().queue);
  for (const [i, e] of events.entries()) {
    recordDeliveries(
      sql,
      [
        {
          ...delivered(e, at + 10 * i),
          webhookId: webhookOf(i),
          outcome: "failed",
          statusCode: 500,
          nextRetryAt: at + 60_000,
        },
      ],
      at + 10 * i,
    );
    recordDeliveries(sql, [{ ...delivered(e, at + 10 * i + 5), webhookId: webhookOf(i), attempt: 2 }], at + 10 * i + 5);
  }
  return events;
}

describe("the delivery log's two layouts", () => {
  for (const layout of ["keyed (webhook_id, seq), new objects", "rowid, objects created before"] as const) {
    it(`${layout}: every attempt listed per webhook newest first across pages, per message oldest first, and purged only past its window`, async () => {
      await runInDurableObject(fresh(), async (_, state) => {
        let sql = state.storage.sql;
        expect(attemptsKeyedByWebhook(sql)).toBe(true);
        if (layout === "rowid, objects created before") {
          sql.exec("DROP TABLE event_attempts");
          sql.exec(`CREATE TABLE event_attempts (
            seq INTEGER PRIMARY KEY, event_id TEXT NOT NULL, event_type TEXT NOT NULL, subject TEXT NOT NULL,
            webhook_id TEXT NOT NULL, attempt INTEGER NOT NULL,
            attempted_at INTEGER NOT NULL, outcome TEXT NOT NULL, status_code INTEGER, latency_ms INTEGER, error TEXT,
            next_retry_at INTEGER)`);
          sql.exec("CREATE INDEX event_attempts_by_webhook ON event_attempts (webhook_id, seq)");
          sql.exec("CREATE INDEX event_attempts_by_subject ON event_attempts (subject, seq)");
          sql = handle(sql);
          expect(attemptsKeyedByWebhook(sql)).toBe(false);
        }
        // Two webhooks (the second replaced the first halfway): 20 events, two attempts each.
        const events = await logAttempts(sql, (i) => (i < 10 ? "wh_old" : "wh_new"), 20, T0);
        for (const webhook of ["wh_old", "wh_new"]) {
          const listed: string[] = [];
          let before: number | null = null;
          for (;;) {
            const page = attemptsOfWebhook(sql, webhook, before, 3);
            listed.push(...page.map((r) => `${r.event_id}#${r.attempt}`));
            if (page.length < 3) break;
            before = page[page.length - 1]!.seq;
          }
          const mine = (webhook === "wh_old" ? events.slice(0, 10) : events.slice(10)).flatMap((e) => [
            `${e.id}#1`,
            `${e.id}#2`,
          ]);
          expect(listed).toEqual(mine.reverse());
        }
        const about = attemptsAbout(sql, "subject-0").map((r) => `${r.event_id}#${r.attempt}`);
        expect(about).toEqual(events.filter((_, i) => i % 2 === 0).flatMap((e) => [`${e.id}#1`, `${e.id}#2`]));
        const left = () => sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM event_attempts").one().n;
        // The first ten attempts (five events of wh_old) are past the window; nothing else is.
        purgeOldEvents(sql, T0 + 10 * 4 + 6 + KEEP_EVENTS_MS);
        expect(left()).toBe(40 - 10);
        expect(nextEventExpiry(sql)).toBeLessThanOrEqual(T0 + 50 + KEEP_EVENTS_MS);
        purgeOldEvents(sql, T0 + 10 * 20 + KEEP_EVENTS_MS);
        expect(left()).toBe(0);
      });
    });
  }
});
