import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createTenant } from "./helpers/fixtures";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import { DAY_MS } from "../src/domain/job-id";
import { nextKeyExpiry, purgeExpiredKeys } from "../src/durable-objects/workspace/idempotency-keys";
import {
  hasUnpublishedEvents,
  nextCheckDue,
  nextEventExpiry,
  purgeOldEvents,
  attemptsOfWebhook,
  attemptsAbout,
  REPORT_WALK,
  SETTLED_WALK,
} from "../src/durable-objects/workspace/event-log";
import { oldestQueuedAt, queuedAcceptedBefore } from "../src/durable-objects/workspace/messages";
import { oldestHotAt, oldestHotRows } from "../src/durable-objects/workspace/history-tiering";
import { hasDirtyCounts } from "../src/durable-objects/workspace/daily-counts";
import { listPage } from "../src/durable-objects/workspace/message-queries";
import {
  nextReady,
  nextReadyAt,
  oldestFinishedAt,
  oldestOrphanAcceptedAt,
  oldestUnknownSince,
  purgeFinished,
  unknownSince,
  acceptedSince,
  promoteHead,
  transition,
  oldestQueuedEntryAt,
  queuedEntriesAcceptedBy,
  WINDOW_REBUILD_ENTRIES,
  finishedFrom,
  unknownFrom,
} from "../src/durable-objects/channel-number/outbox";
import { contactWindow, nextContactExpiry, purgeSilentContacts } from "../src/durable-objects/channel-number/contacts";
import { hasPairs, pairReadyAt, sweepIdlePairs } from "../src/durable-objects/channel-number/pair-pace";

const ROWS = 100_000;
/** Webhooks in the seeded delivery log: 'wh', and 50 more ('wh-0', 'wh-100', … 'wh-4900'). */
const LOGGED_WEBHOOKS = 51;
let clock = Date.UTC(2046, 5, 1);
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  clock += 400 * DAY_MS;
  vi.setSystemTime(clock);
});
afterEach(() => vi.useRealTimers());

/** Wraps an object's SQL so that the rows each statement reads are added up (SqlStorageCursor.rowsRead). */
function counting(sql: SqlStorage) {
  const totals = { read: 0 };
  const wrapped = new Proxy(sql, {
    get(target, prop) {
      if (prop !== "exec") return Reflect.get(target, prop, target);
      return (query: string, ...bindings: SqlStorageValue[]) => {
        const cursor = target.exec(query, ...bindings);
        const rows = cursor.toArray();
        totals.read += cursor.rowsRead;
        // Hand the caller what it asked for, already read.
        return Object.assign(rows[Symbol.iterator](), {
          toArray: () => rows,
          one: () => {
            if (rows.length !== 1) throw new Error(`expected one row, got ${rows.length}`);
            return rows[0];
          },
          rowsRead: cursor.rowsRead,
          rowsWritten: cursor.rowsWritten,
          columnNames: cursor.columnNames,
          raw: () => rows.map((r) => Object.values(r as object))[Symbol.iterator](),
          next: () => ({ done: true, value: undefined }),
        });
      };
    },
  });
  /** Rows read by `fn`. */
  const measure = <T>(fn: (sql: SqlStorage) => T): { value: T; read: number } => {
    totals.read = 0;
    const value = fn(wrapped);
    return { value, read: totals.read };
  };
  return measure;
}

/** `rows` rows through one recursive INSERT … SELECT (fast, inside the object). */
const seed = (sql: SqlStorage, insert: string) =>
  sql.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS}) ${insert}`);

describe(`alarm work stays bounded with ${ROWS.toLocaleString("en")} rows per table`, () => {
  it("the workspace object's steps and lists read a bounded number of rows", async () => {
    const t = await createTenant();
    const stub = workspaceStub(env, t.workspaceId);
    const old = clock - 10 * DAY_MS;
    await runInDurableObject(stub, (_, state) => {
      const sql = state.storage.sql;
      state.storage.transactionSync(() => {
        seed(
          sql,
          `INSERT INTO messages (id, direction, channel_number_id, recipient, type, body, status, created_at, updated_at, version, copy_pending, sent_at)
          SELECT printf('00000000-0000-7000-8000-%012d', i), 'outbound', '${t.numberId}', printf('5511%09d', i % 5000), 'text', 'x', 'sent', ${old} + i, ${old} + i, 1, 0, ${old} + i FROM n`,
        );
        // Backlogs of active messages: unknown outcomes (processing, older than everything: an
        // operator outage) and queued ones (a number that drains slower than it is fed).
        seed(
          sql,
          `INSERT INTO messages (id, direction, channel_number_id, recipient, type, body, status, created_at, updated_at, version, copy_pending, processing_at, outcome_unknown_since)
          SELECT printf('00000000-0000-7000-9000-%012d', i), 'outbound', '${t.numberId}', printf('5599%09d', i % 5000), 'text', 'x', 'processing', ${old} - ${ROWS} + i, ${old} - ${ROWS} + i, 1, 0, ${old} - ${ROWS} + i, ${old} - ${ROWS} + i FROM n`,
        );
        seed(
          sql,
          `INSERT INTO messages (id, direction, channel_number_id, recipient, type, body, status, created_at, updated_at, version, copy_pending)
          SELECT printf('00000000-0000-7000-a000-%012d', i), 'outbound', '${t.numberId}', printf('5588%09d', i % 5000), 'text', 'x', 'queued', ${clock} - ${ROWS} + i, ${clock} - ${ROWS} + i, 1, 0 FROM n`,
        );
        seed(
          sql,
          `INSERT INTO events (id, type, subject, body, created_at, channel_number_id, delivery, delivered_at)
          SELECT printf('evt_%032d', i), 'message.status', printf('00000000-0000-7000-8000-%012d', i), '{}', ${old} + i, '${t.numberId}', 'delivered', ${clock} - 1000 + (i % 10) FROM n`,
        );
        // The delivery log of a new object is keyed (webhook_id, seq); many webhooks' logs (one per number).
        seed(
          sql,
          `INSERT INTO event_attempts (seq, event_id, event_type, subject, webhook_id, attempt, attempted_at, outcome)
          SELECT i, printf('evt_%032d', i), 'message.status', printf('00000000-0000-7000-8000-%012d', i), CASE WHEN i % 100 = 0 THEN printf('wh-%d', i % 5000) ELSE 'wh' END, 1, ${clock} - 1000 + (i % 10), 'delivered' FROM n`,
        );
        seed(
          sql,
          `INSERT INTO idempotency_keys (key, fingerprint, job_id, created_at) SELECT printf('k%d', i), 'f', 'j', ${clock} - 1000 + (i % 10) FROM n`,
        );
        sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('events_published_through', ?)", String(ROWS));
      });
    });
    await runInDurableObject(stub, (_, state) => {
      const measure = counting(state.storage.sql);
      const at = Date.now();
      const checks: [string, number, (sql: SqlStorage) => unknown][] = [
        ["nextKeyExpiry", 2, (s) => nextKeyExpiry(s)],
        // 3 on the WITHOUT ROWID layout of new objects (the key lookup of the empty subquery reads one more row), 2 on the older one.
        ["purgeExpiredKeys (nothing due)", 3, (s) => purgeExpiredKeys(s, at)],
        ["hasUnpublishedEvents", 2, (s) => hasUnpublishedEvents(s)],
        // The report walk (events awaiting a first report are found in sequence order, not through an index).
        ["nextCheckDue (the index, then the report walk)", REPORT_WALK + 5, (s) => nextCheckDue(s, at)],
        // The delivery log is kept per webhook: two rows read per webhook (its key's next step, its oldest row).
        [
          "nextEventExpiry (the settled walk, each webhook's oldest attempt)",
          SETTLED_WALK + 6 + 3 * LOGGED_WEBHOOKS,
          (s) => nextEventExpiry(s),
        ],
        [
          "purgeOldEvents (a batch of 500 and the settled walk, with the rows they delete; each webhook's oldest attempt)",
          2_000 + 2 * SETTLED_WALK + 3 * LOGGED_WEBHOOKS,
          (s) => purgeOldEvents(s, at),
        ],
        ["hasDirtyCounts", 2, (s) => hasDirtyCounts(s)],
        ["oldestQueuedAt", 2, (s) => oldestQueuedAt(s)],
        ["queuedAcceptedBefore", 51, (s) => queuedAcceptedBefore(s, at, 50)],
        [
          "queuedAcceptedBefore (a later page)",
          51,
          (s) =>
            queuedAcceptedBefore(s, at, 50, {
              createdAt: clock - ROWS / 2,
              id: "00000000-0000-7000-a000-000000050000",
            }),
        ],
        ["oldestHotAt", 2, (s) => oldestHotAt(s)],
        ["oldestHotRows (one batch)", 501, (s) => oldestHotRows(s, at, 500)],
        ["attemptsOfWebhook (a page)", 101, (s) => attemptsOfWebhook(s, "wh", null, 100)],
        ["attemptsAbout (one message)", 3, (s) => attemptsAbout(s, "00000000-0000-7000-8000-000000050000")],
        ["listPage, no filter", 21, (s) => listPage(s, {}, null, 20)],
        ["listPage, a rare recipient", 30, (s) => listPage(s, { counterpart: "5511000000007" }, null, 20)],
        ["listPage, queued (its index)", 21, (s) => listPage(s, { status: "queued" }, null, 20)],
        [
          "listPage, processing (no index of its own: the budget)",
          1_001,
          (s) => listPage(s, { status: "processing" }, null, 20),
        ],
        [
          "listPage, an unselective filter with no match (budget)",
          1_001,
          (s) =>
            listPage(
              s,
              {
                direction: "outbound",
                status: "sent",
                counterpart: undefined,
                createdFrom: 0,
                channelNumberId: "00000000-0000-0000-0000-000000000000",
              },
              null,
              20,
            ),
        ],
      ];
      // Every bound is a batch size (or a handful of rows), far below the rows in the tables.
      const over = checks
        .map(([name, bound, fn]) => ({ name, bound, read: measure(fn).read }))
        .filter((c) => c.read > c.bound);
      expect(over).toEqual([]);
    });
    // And the real alarm runs each due step once, within its batches (nothing here scans a table).
    await runDurableObjectAlarm(stub);
  }, 120_000);

  it("the number object's steps read a bounded number of rows", async () => {
    const t = await createTenant();
    const stub = channelNumberStub(env, t.numberId);
    await stub.noteInbound(t.numberId, [{ from: "5511000000000", at: Date.now() }]);
    const old = clock - 3 * DAY_MS;
    await runInDurableObject(stub, (_, state) => {
      const sql = state.storage.sql;
      state.storage.transactionSync(() => {
        seed(
          sql,
          `INSERT INTO outbox (job_id, workspace_id, channel_number_id, recipient, body, accepted_at, state, attempts, next_attempt_at, updated_at, is_head, upstream_message_id)
          SELECT printf('job-%d', i), '${t.workspaceId}', '${t.numberId}', printf('5511%09d', i % 5000), 'x', ${old} + i, 'sent', 1, 0, ${old} + i, 0, printf('wamid.%d', i) FROM n`,
        );
        seed(sql, `INSERT INTO contacts (phone, last_inbound_at) SELECT printf('5522%09d', i), ${clock} - 1000 FROM n`);
        seed(
          sql,
          `INSERT INTO recipient_aliases (recipient, wa_id, updated_at) SELECT printf('5533%09d', i), printf('553%09d', i), ${clock} - 1000 FROM n`,
        );
        seed(sql, `INSERT INTO pair_pace (recipient, tat) SELECT printf('5544%09d', i), ${clock} + 6000 FROM n`);
      });
    });
    await runInDurableObject(stub, (_, state) => {
      const measure = counting(state.storage.sql);
      const at = Date.now();
      const checks: [string, number, (sql: SqlStorage) => unknown][] = [
        ["nextReadyAt", 2, (s) => nextReadyAt(s)],
        ["nextReady", 3, (s) => nextReady(s, at, new Set())],
        ["oldestUnknownSince", 2, (s) => oldestUnknownSince(s)],
        ["unknownSince", 2, (s) => unknownSince(s, at, 100)],
        ["oldestOrphanAcceptedAt", 2, (s) => oldestOrphanAcceptedAt(s)],
        ["oldestQueuedEntryAt", 2, (s) => oldestQueuedEntryAt(s)],
        ["queuedEntriesAcceptedBy (nothing due)", 2, (s) => queuedEntriesAcceptedBy(s, at, 100)],
        ["oldestFinishedAt", 2, (s) => oldestFinishedAt(s)],
        ["finishedFrom (a page of the status relay's recovery)", 202, (s) => finishedFrom(s, at - 1000, -1, 200)],
        ["unknownFrom (a page of the status relay's recovery)", 2, (s) => unknownFrom(s, at - 1000, -1, 200)],
        ["purgeFinished (one batch of 500)", 2_100, (s) => purgeFinished(s, at, 500)],
        // Once per start: the newest keys and the queued entries (no index of its own).
        ["acceptedSince (the window)", WINDOW_REBUILD_ENTRIES + 3, (s) => acceptedSince(s, at - 1000)],
        ["promoteHead", 4, (s) => promoteHead(s, "5511000000007")],
        ["nextContactExpiry", 4, (s) => nextContactExpiry(s)],
        ["purgeSilentContacts (nothing due)", 6, (s) => purgeSilentContacts(s, at)],
        ["contactWindow (through an alias)", 4, (s) => contactWindow(s, "5533000000007", at)],
        ["hasPairs", 2, (s) => hasPairs(s)],
        ["pairReadyAt", 2, (s) => pairReadyAt(s, "5544000000007", at)],
        // No index on tat: one sweep page of 1,000 keys (read twice: the page, then its range deleted).
        ["sweepIdlePairs (one page)", 2_010, (s) => sweepIdlePairs(s, at, "")],
      ];
      // Every bound is a batch size (or a handful of rows), far below the rows in the tables.
      const over = checks
        .map(([name, bound, fn]) => ({ name, bound, read: measure(fn).read }))
        .filter((c) => c.read > c.bound);
      expect(over).toEqual([]);
    });
    await runDurableObjectAlarm(stub);
  }, 120_000);

  it("a conversation with a large queued backlog promotes its next head reading a bounded number of rows", async () => {
    const t = await createTenant();
    const stub = channelNumberStub(env, t.numberId);
    await stub.noteInbound(t.numberId, [{ from: "5511000000000", at: Date.now() }]);
    const recipient = "5511777777777";
    await runInDurableObject(stub, (_, state) => {
      const sql = state.storage.sql;
      state.storage.transactionSync(() => {
        // One recipient's backlog (a paused number, or one user paced by the operator): the oldest is its head.
        seed(
          sql,
          `INSERT INTO outbox (job_id, workspace_id, channel_number_id, recipient, body, accepted_at, state, attempts, next_attempt_at, updated_at, is_head)
          SELECT printf('queued-%d', i), '${t.workspaceId}', '${t.numberId}', '${recipient}', 'x', ${clock} + i, 'queued', 0, ${clock} + i, ${clock} + i, i = 1 FROM n`,
        );
      });
    });
    await runInDurableObject(stub, (_, state) => {
      const measure = counting(state.storage.sql);
      const sql = state.storage.sql;
      const heads = () =>
        sql
          .exec<{ job_id: string }>("SELECT job_id FROM outbox WHERE recipient = ? AND is_head = 1", recipient)
          .toArray()
          .map((r) => r.job_id);
      const at = Date.now();
      // The head is sent; the next entry becomes the head.
      const first = sql.exec<{ seq: number }>("SELECT seq FROM outbox WHERE job_id = 'queued-1'").one().seq;
      const promoted = measure((s) => {
        transition(s, first, ["queued"], "sent", at);
        promoteHead(s, recipient);
      });
      expect(heads()).toEqual(["queued-2"]);
      // An older entry comes back into line (a revived orphan): it becomes the head, the previous one no longer is.
      sql.exec("UPDATE outbox SET state = 'orphan', is_head = 0 WHERE job_id = 'queued-2'");
      promoteHead(sql, recipient);
      expect(heads()).toEqual(["queued-3"]);
      const revived = sql.exec<{ seq: number }>("SELECT seq FROM outbox WHERE job_id = 'queued-2'").one().seq;
      const back = measure((s) => {
        transition(s, revived, ["orphan"], "queued", at);
        promoteHead(s, recipient);
      });
      expect(heads()).toEqual(["queued-2"]);
      const checks = [
        { name: "promoteHead after the head finished", read: promoted.read, bound: 8 },
        { name: "promoteHead after an older entry came back", read: back.read, bound: 8 },
        { name: "nextReadyAt", read: measure((s) => nextReadyAt(s)).read, bound: 2 },
        {
          name: "oldestQueuedAt (the held-bound step's due time)",
          read: measure((s) => oldestQueuedEntryAt(s)).read,
          bound: 2,
        },
        {
          name: "queuedAcceptedBefore (one batch of the held-bound step)",
          read: measure((s) => queuedEntriesAcceptedBy(s, at + ROWS, 100)).read,
          bound: 101,
        },
        { name: "nextReady", read: measure((s) => nextReady(s, at + ROWS, new Set())).read, bound: 3 },
      ];
      expect(checks.filter((c) => c.read > c.bound)).toEqual([]);
    });
  }, 120_000);
});
