import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createTenant } from "./helpers/fixtures";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import { WorkspaceDurableObject } from "../src/durable-objects/workspace/workspace";
import { ChannelNumberDurableObject } from "../src/durable-objects/channel-number/channel-number";
import type { ScheduledStep } from "../src/durable-objects/shared/scheduler";
import { createSlotTable, slotStart, slotTable, SLOTS_PER_DAY } from "../src/durable-objects/workspace/day-tables";
import { createDeliveriesTable } from "../src/durable-objects/workspace/delivery-log";
import { noteUnknown } from "../src/durable-objects/workspace/unknown-outcomes";
import { SCAN_BUDGET } from "../src/durable-objects/workspace/message-queries";
import { PART_ROWS } from "../src/durable-objects/history/archive-writer";
import { createContactsTable } from "../src/durable-objects/channel-number/contacts";
import { createSandboxReportsTable } from "../src/durable-objects/channel-number/sandbox-reports";
import { DAY_MS, utcDay } from "../src/domain/job-id";
import { WORKSPACE_SCHEMA } from "../src/durable-objects/workspace/schema";
import type { SendCommand } from "../src/durable-objects/workspace/contract";
import { RETENTION_SLACK_MS } from "../src/durable-objects/shared/scheduler";
import { testShard, testWorkspace } from "./helpers/objects";
import { fakeClockPerTest } from "./helpers/clock";

const ROWS = 100_000;
const clock = fakeClockPerTest(Date.UTC(2046, 5, 1, 12), (t) => (utcDay(t) + 400) * DAY_MS + 12 * 3_600_000);

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
        // Hands the caller what it asked for, already read.
        const iterator = rows[Symbol.iterator]();
        return {
          toArray: () => rows,
          one: () => {
            if (rows.length !== 1) throw new Error(`expected one row, got ${rows.length}`);
            return rows[0];
          },
          rowsRead: cursor.rowsRead,
          rowsWritten: cursor.rowsWritten,
          columnNames: cursor.columnNames,
          raw: () => rows.map((r) => Object.values(r as object))[Symbol.iterator](),
          next: () => iterator.next(),
          [Symbol.iterator]() {
            return this;
          },
        };
      };
    },
  });
  return { sql: wrapped, totals };
}

interface Measured<T> {
  instance: T;
  /** Rows read by `fn` (awaited). */
  read(fn: () => unknown): Promise<number>;
  steps: ScheduledStep[];
}

/**
 * A second instance of an object's class on the same storage, whose SQL counts the rows it reads:
 * its scheduled steps (what the alarm runs) are measured one by one. Built inside
 * runInDurableObject; the real instance is evicted afterwards (this one may have changed storage
 * under it).
 */
function measured<T extends object>(
  Class: new (ctx: DurableObjectState, env: Env) => T,
  state: DurableObjectState,
): Measured<T> {
  const counter = counting(state.storage.sql);
  const bind = <O extends object>(target: O, replace: Record<PropertyKey, unknown>): O =>
    new Proxy(target, {
      get(t, p) {
        if (p in replace) return replace[p];
        const v = Reflect.get(t, p, t) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
  const storage = bind(state.storage, { sql: counter.sql });
  // The base class takes the runtime's own state object only: its `storage` is shadowed instead,
  // for this instance's constructor (its modules keep what it hands them).
  const own = Object.getOwnPropertyDescriptor(state, "storage");
  Object.defineProperty(state, "storage", { value: storage, configurable: true });
  let instance: T;
  try {
    instance = new Class(state, env);
  } finally {
    if (own) Object.defineProperty(state, "storage", own);
    else delete (state as { storage?: unknown }).storage;
  }
  const steps = (instance as unknown as { scheduler: { steps: ScheduledStep[] } }).scheduler.steps;
  return {
    instance,
    steps,
    async read(fn) {
      counter.totals.read = 0;
      await fn();
      return counter.totals.read;
    },
  };
}

/** `ROWS` rows through one recursive INSERT … SELECT (fast, inside the object); `i` runs 1 … ROWS. */
const seed = (sql: SqlStorage, insert: string, rows = ROWS) =>
  sql.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows}) ${insert}`);

/** A UUIDv7 of `ms` + i (its time in the first 48 bits, as ids are), in SQL; `tag` tells seeds apart. */
const idAt = (ms: number, tag: string) =>
  `printf('%08x-%04x-7${tag}-8000-%012d', (${ms} + i) >> 16, (${ms} + i) & 65535, i)`;

/** `count` records in the table of the 6-hour `slot`, one millisecond apart from its start. */
function seedSlot(
  sql: SqlStorage,
  slot: number,
  numberId: string,
  columns: { status: string; pending?: number; extra?: string; extraValues?: string },
  tag = "000",
  count = ROWS,
): void {
  createSlotTable(sql, slot);
  const at = slotStart(slot);
  seed(
    sql,
    `INSERT INTO ${slotTable(slot)} (id, direction, channel_number_id, recipient, type, body, status, pending, created_at, updated_at${columns.extra ?? ""})
     SELECT ${idAt(at, tag)}, 'outbound', '${numberId}', printf('5511%09d', i % 5000), 'text', 'x', '${columns.status}', ${columns.pending ?? 0}, ${at} + i, ${at} + i${columns.extraValues ?? ""} FROM n`,
    count,
  );
}

/** The first 6-hour slot of a UTC day (00:00–06:00). */
const firstSlot = (day: number) => day * SLOTS_PER_DAY;

/** The id `idAt` gives record `i` of a seed from `ms` (tag `tag`), in JavaScript. */
const idAtJs = (ms: number, tag: string, i: number) => {
  const hex = (ms + i).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8)}-7${tag}-8000-${String(i).padStart(12, "0")}`;
};

/** Runs the move step while it has a slot to move (at the current clock), with the rows its due() and each run() read. */
async function moveRuns(m: Measured<object>): Promise<{ due: number; run: number }[]> {
  const step = m.steps.find((s) => s.name === "move-to-history")!;
  const out: { due: number; run: number }[] = [];
  for (let i = 0; i < 30; i++) {
    let due: number | null = null;
    const dueReads = await m.read(() => {
      due = step.due(clock.now());
    });
    if (due === null) break;
    out.push({ due: dueReads, run: await m.read(() => step.run(clock.now())) });
  }
  return out;
}

interface StepReads {
  step: string;
  due: number;
  run: number | null;
}

/** Measures each step's due() and, when it is due by `until`, its run() (once, at its due time); returns the rows each read. */
async function measureSteps(m: Measured<object>, at: number, until = at): Promise<StepReads[]> {
  const out: StepReads[] = [];
  for (const step of m.steps) {
    let due: number | null = null;
    const dueReads = await m.read(() => {
      due = step.due(at);
    });
    const when: number | null = due;
    let runReads: number | null = null;
    if (when !== null && when <= until) {
      clock.set(Math.max(at, when));
      runReads = await m.read(() => step.run(Math.max(at, when)));
      clock.set(at);
    }
    out.push({ step: step.name, due: dueReads, run: runReads });
  }
  return out;
}

/**
 * A GROUP BY over a table reads each row twice (the table, then its sorter): the one pass that
 * counts a day (counts.ts: once per instance, when the day's counts are first needed, or frozen as
 * its table leaves).
 */
const COUNT_PASS = 2 * ROWS;
/** Rows of the object's schema (sqlite_master) a table lookup reads: a few dozen here (5 per slot table). */
const SCHEMA = 30;

type Bounds = Record<string, { due: number; run: number }>;

/** The steps whose due() or run() read more than their bound (or have none). */
const overBounds = (reads: StepReads[], bounds: Bounds) =>
  reads.filter((r) => {
    const b = bounds[r.step];
    return !b || r.due > b.due || (r.run !== null && r.run > b.run);
  });

describe(`alarm work stays bounded with ${ROWS.toLocaleString("en")} rows per table`, () => {
  it("the workspace's steps and reads: archive, counts, unknown outcomes, delivery log, lists and the work list", async () => {
    const t = await createTenant();
    const stub = workspaceStub(env, t.workspaceId);
    const today = utcDay(clock.now());
    const old = today - 40;
    const unknownDay = today - 8;
    const oldSlots: [number, string][] = [
      [firstSlot(old), "001"],
      [firstSlot(old) + 2, "007"],
    ];
    await runInDurableObject(stub, (_, state) => {
      const sql = state.storage.sql;
      state.storage.transactionSync(() => {
        // A day past the plan's window, to archive: two of its four slot tables (00:00 and 12:00).
        for (const [slot, tag] of oldSlots)
          seedSlot(
            sql,
            slot,
            t.numberId,
            { status: "sent", extra: ", sent_at", extraValues: `, ${slotStart(slot)} + i` },
            tag,
          );
        // Outcomes unknown for longer than the operator's window: the expiry's backlog.
        seedSlot(
          sql,
          firstSlot(unknownDay),
          t.numberId,
          { status: "processing", extra: ", outcome_unknown_since", extraValues: `, ${unknownDay * DAY_MS} + i` },
          "002",
        );
        noteUnknown(sql, "-", 0);
        sql.exec("DELETE FROM unknowns");
        seed(
          sql,
          `INSERT INTO unknowns (id, since) SELECT ${idAt(unknownDay * DAY_MS, "002")}, ${unknownDay * DAY_MS} + i FROM n`,
        );
        // Today's first slot: a number's queue of queued records (the `_work` index), each with its key.
        seedSlot(
          sql,
          firstSlot(today),
          t.numberId,
          { status: "queued", pending: 1, extra: ", idem_key, fingerprint", extraValues: ", printf('k%d', i), 'f'" },
          "003",
        );
        // Yesterday's delivery log: one row per consumer report.
        createDeliveriesTable(sql, today - 1);
        seed(
          sql,
          `INSERT INTO d_${today - 1} (channel_number_id, seq, attempts)
           SELECT '${t.numberId}', ${(today - 1) * DAY_MS} + i,
                  json_array(json_object('e', printf('evt_%032d', i), 't', 'message.status', 's', 'x', 'w', 'wh', 'n', 1, 'a', ${(today - 1) * DAY_MS} + i, 'o', 'delivered', 'c', 204, 'l', 10, 'x', NULL, 'r', NULL)) FROM n`,
        );
      });
    });
    await evictDurableObject(stub);
    const at = clock.now();
    const idOf = (slot: number, tag: string, i: number) => idAtJs(slotStart(slot), tag, i);
    const results = await runInDurableObject(stub, async (_, state) => {
      const m = measured(WorkspaceDurableObject, state);
      const w = m.instance;
      const reads: [string, number, number][] = [];
      const check = async (name: string, bound: number, fn: () => unknown) =>
        reads.push([name, await m.read(fn), bound]);
      // Lists read a page (and the row after it), or at most the scan budget when filters match little.
      await check("listMessages, no filter", 30, () => w.listMessages({}, null, 20));
      await check("listMessages, a later page", 30, () =>
        w.listMessages({}, { createdAt: today * DAY_MS + 50_000, id: idOf(firstSlot(today), "003", 50_000) }, 20),
      );
      await check("listMessages, a rare recipient", 30, () =>
        w.listMessages({ counterpart: "5511000000007" }, null, 20),
      );
      await check("listMessages, failed (its index)", 30, () => w.listMessages({ status: "failed" }, null, 20));
      await check("listMessages, no match (the scan budget)", SCAN_BUDGET + 10, () =>
        w.listMessages({ channelNumberId: crypto.randomUUID() }, null, 20),
      );
      await check("getMessage", 3, () => w.getMessage(idOf(firstSlot(today), "003", 7)));
      // A number's queue is rebuilt from the `_work` index, a page of 500 at a time.
      await check("workOf, the first page", 510, () => w.workOf(t.numberId, "", 500));
      await check("workOf, a later page", 510, () => w.workOf(t.numberId, idOf(firstSlot(today), "003", 50_000), 500));
      // The delivery log reads a page, or its budget of 200 rows (per event looked for).
      await check("listDeliveries, a page", 100 + SCHEMA, () => w.listDeliveries(t.numberId, "wh", null, 100));
      await check("lastFailedAttempt (all delivered: its read budget)", 200 + SCHEMA, () =>
        w.lastFailedAttempt(t.numberId, "wh"),
      );
      await check("deliveriesAbout, a sent message (not in the log: its read budget)", 2 * 200 + SCHEMA, () =>
        w.deliveriesAbout(idOf(firstSlot(old), "001", 7)),
      );
      // Every step due within the next minute (counts ship to D1 once a minute) runs once, at its time.
      const steps = await measureSteps(m, at, at + 61_000);
      // The archive goes on, 4 parts a run, and finishes: the day's counts are frozen as its tables are dropped.
      const archiveRuns: number[] = [];
      const archiveStep = m.steps.find((s) => s.name === "archive-history")!;
      const tablesLeft = () =>
        state.storage.sql
          .exec<{ n: number }>(
            `SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name IN (${oldSlots.map(([slot]) => `'${slotTable(slot)}'`).join(", ")})`,
          )
          .one().n;
      while (tablesLeft() > 0 && archiveRuns.length < 5) archiveRuns.push(await m.read(() => archiveStep.run(at)));
      const archived = { tablesLeft: tablesLeft(), day: await w.archive(old) };
      // More unknown outcomes expire; their day was counted once (when the first expired): not again.
      await m.read(() => m.steps.find((s) => s.name === "unknown-outcomes")!.run(at));
      const countsFirst = await m.read(() => m.steps.find((s) => s.name === "counts-to-d1")!.run(at));
      await m.read(() => m.steps.find((s) => s.name === "unknown-outcomes")!.run(at));
      const countsAgain = await m.read(() => m.steps.find((s) => s.name === "counts-to-d1")!.run(at));
      return { reads, steps, archiveRuns, archived, countsFirst, countsAgain };
    });
    expect(results.reads.filter(([, read, bound]) => read > bound)).toEqual([]);
    expect(
      overBounds(results.steps, {
        "publish-events": { due: 0, run: 0 },
        // The first time: today's counts (the days still changing ship again after a restart), one count pass.
        "counts-to-d1": { due: 0, run: COUNT_PASS + 10 },
        // 100 per run, each a few key reads and a look at the schema.
        "unknown-outcomes": { due: 100 + SCHEMA, run: 100 * SCHEMA },
        "move-to-history": { due: 5, run: 0 },
        // 4 parts of PART_ROWS per run.
        "archive-history": { due: 5, run: 4 * PART_ROWS + 10 },
        "moved-keys-purge": { due: SCHEMA, run: 0 },
        "delivery-log-purge": { due: 5, run: 5 },
        "legacy-events": { due: SCHEMA, run: 0 },
        "legacy-move": { due: SCHEMA, run: 0 },
        "legacy-expiry": { due: 3 * SCHEMA, run: 0 },
      }),
    ).toEqual([]);
    // Steps that had work did it (a bound met by doing nothing proves nothing).
    expect(results.steps.filter((s) => s.run !== null).map((s) => s.step)).toEqual(
      expect.arrayContaining(["counts-to-d1", "unknown-outcomes", "archive-history"]),
    );
    // The day's 200,000 records are 10 parts: 4 more in the second run; the last 2, the manifest,
    // the day's counts (one pass per slot table) and the drop of its two tables (each a look at the
    // schema) in the third.
    expect(results.archiveRuns).toHaveLength(2);
    expect(results.archiveRuns[0]).toBeLessThanOrEqual(4 * PART_ROWS + 10);
    expect(results.archiveRuns[1]).toBeLessThanOrEqual(2 * PART_ROWS + 2 * COUNT_PASS + 2 * SCHEMA);
    expect(results.archived).toMatchObject({ tablesLeft: 0, day: { day: old, messages: 2 * ROWS, parts: 10 } });
    // The unknown outcomes' day, counted the first time it changed, then kept in memory.
    expect(results.countsFirst).toBeLessThanOrEqual(COUNT_PASS + 10);
    expect(results.countsAgain).toBeLessThanOrEqual(10);
  }, 120_000);

  it("a workspace over its budget moves a slot to history in bounded runs", async () => {
    const t = await createTenant();
    const stub = workspaceStub(env, t.workspaceId);
    const day = utcDay(clock.now()) - 10;
    await runInDurableObject(stub, (_, state) => {
      state.storage.transactionSync(() => {
        seedSlot(state.storage.sql, firstSlot(day), t.numberId, { status: "sent" }, "004");
        state.storage.sql.exec("INSERT INTO meta (k, v) VALUES ('hot_bytes_budget', '1')");
      });
    });
    await evictDurableObject(stub);
    const runs = await runInDurableObject(stub, async (_, state) => {
      const m = measured(WorkspaceDurableObject, state);
      return moveRuns(m);
    });
    // The object's own instance read the day's ledger row before the move: it starts again from storage.
    await evictDurableObject(stub);
    // 50 chunks of 200 records per run; the slot's 100,000 records in 10 runs, and one more that
    // finds none left, freezes the slot's counts (one count pass) and its record count (a COUNT(*)
    // pass over the table it drops).
    expect(runs).toHaveLength(11);
    expect(runs.filter((r) => r.due > 5)).toEqual([]);
    expect(runs.slice(0, 10).filter((r) => r.run > 50 * 200 + 10)).toEqual([]);
    expect(runs[10]!.run).toBeLessThanOrEqual(COUNT_PASS + ROWS + 50);
    expect(await testShard(t.workspaceId, day).size()).toMatchObject({ messages: ROWS });
    expect(await testWorkspace(t.workspaceId).dayState(day)).toMatchObject({
      moved: { "0": "*" },
      history: { records: ROWS },
    });
  }, 120_000);

  it("under the size guard, a slot's live Idempotency-Keys stay behind in bounded runs, are found by one key read, and leave 24 hours after their send in bounded batches", async () => {
    const t = await createTenant();
    const stub = workspaceStub(env, t.workspaceId);
    // Yesterday's last slot (18:00–24:00) ended 12 hours ago: past the guard's 6 hours, its records within their 24.
    const slot = firstSlot(utcDay(clock.now())) - 1;
    const sentAt = slotStart(slot);
    await runInDurableObject(stub, (_, state) => {
      state.storage.transactionSync(() => {
        seedSlot(
          state.storage.sql,
          slot,
          t.numberId,
          { status: "sent", extra: ", idem_key, fingerprint", extraValues: ", printf('g%d', i), 'f'" },
          "008",
        );
        // A budget of one byte: the object is over 3.5 times it.
        state.storage.sql.exec("INSERT INTO meta (k, v) VALUES ('hot_bytes_budget', '1')");
      });
    });
    await evictDurableObject(stub);
    const at = clock.now();
    const results = await runInDurableObject(stub, async (_, state) => {
      const m = measured(WorkspaceDurableObject, state);
      const moves = await moveRuns(m);
      const kept = state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM moved_keys").one().n;
      // A replay of a moved record's key is answered from its kept key (one key read), with no hand-off.
      const command = (key: string, fingerprint: string): SendCommand => ({
        workspaceId: t.workspaceId,
        idempotencyKey: key,
        fingerprint,
        request: { channelNumberId: t.numberId, to: "5511000000001", type: "text", text: { body: "x" } },
      });
      let replay: unknown = null;
      let conflict: unknown = null;
      const replayReads = await m.read(async () => {
        replay = await m.instance.send(command("g50000", "f"));
      });
      const conflictReads = await m.read(async () => {
        conflict = await m.instance.send(command("g50001", "other"));
      });
      // The purge: due when the oldest kept key is 24 hours old (its age index, one row), then 1,000 a run.
      const purge = m.steps.find((s) => s.name === "moved-keys-purge")!;
      let due: number | null = null;
      const dueReads = await m.read(() => {
        due = purge.due(at);
      });
      const before = await m.read(() => purge.run(at));
      const keptBefore = state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM moved_keys").one().n;
      const purgeAt = due ?? at;
      clock.set(purgeAt);
      const runs: number[] = [];
      while (purge.due(purgeAt) !== null && runs.length < 150) runs.push(await m.read(() => purge.run(purgeAt)));
      clock.set(at);
      const tables = state.storage.sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE name LIKE 'moved_keys%'")
        .toArray();
      return {
        moves,
        kept,
        replay,
        replayReads,
        conflict,
        conflictReads,
        due,
        dueReads,
        before,
        keptBefore,
        runs,
        tables,
      };
    });
    expect(results.moves).toHaveLength(11);
    expect(results.moves.filter((r) => r.due > 5)).toEqual([]);
    // As without keys: each chunk's 200 keys are written apart (an insert reads no row).
    expect(results.moves.slice(0, 10).filter((r) => r.run > 50 * 200 + 10)).toEqual([]);
    expect(results.moves[10]!.run).toBeLessThanOrEqual(COUNT_PASS + ROWS + 50);
    expect(results.kept).toBe(ROWS);
    expect(results.replay).toEqual({ kind: "duplicate", jobId: idAtJs(sentAt, "008", 50_000) });
    expect(results.conflict).toEqual({ kind: "conflict", jobId: idAtJs(sentAt, "008", 50_001) });
    expect(results.replayReads).toBeLessThanOrEqual(SCHEMA + 5);
    expect(results.conflictReads).toBeLessThanOrEqual(SCHEMA + 5);
    // Due 24 hours after the oldest key's send (and the retention slack); nothing goes before.
    expect(results.due).toBe(sentAt + 1 + DAY_MS + RETENTION_SLACK_MS);
    expect(results.dueReads).toBeLessThanOrEqual(SCHEMA + 2);
    expect(results.keptBefore).toBe(ROWS);
    expect(results.before).toBeLessThanOrEqual(SCHEMA + 5);
    // 100 runs of 1,000 keys, each found through the age index and deleted with its index entry
    // (a few rows each, not the table); then the table goes.
    expect(results.runs).toHaveLength(ROWS / 1_000);
    expect(results.runs.filter((r) => r > 1_000 * 4 + SCHEMA)).toEqual([]);
    expect(results.tables).toEqual([]);
  }, 120_000);

  it("an upgraded workspace's steps over the earlier layout's tables", async () => {
    const t = await createTenant();
    const stub = workspaceStub(env, t.workspaceId);
    const threeDaysAgo = clock.now() - 3 * DAY_MS;
    await runInDurableObject(stub, (_, state) => {
      const sql = state.storage.sql;
      state.storage.transactionSync(() => {
        // The first versioned release's layout (its step 1), at its version.
        for (const name of sql
          .exec<{ name: string }>(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%'",
          )
          .toArray()
          .map((r) => r.name))
          sql.exec(`DROP TABLE ${name}`);
        WORKSPACE_SCHEMA.steps[0]!.up(sql);
        sql.exec("CREATE TABLE schema_version (only INTEGER PRIMARY KEY CHECK (only = 1), version INTEGER NOT NULL)");
        sql.exec("INSERT INTO schema_version (only, version) VALUES (1, 1)");
        // Records of three days ago (due to move to history), events (the newest 10 unpublished), delivery log, keys.
        seed(
          sql,
          `INSERT INTO messages (id, direction, channel_number_id, recipient, type, body, status, created_at, updated_at, version, copy_pending, sent_at)
           SELECT ${idAt(utcDay(threeDaysAgo) * DAY_MS, "005")}, 'outbound', '${t.numberId}', printf('5511%09d', i % 5000), 'text', 'x', 'sent', ${threeDaysAgo} + i, ${threeDaysAgo} + i, 1, 0, ${threeDaysAgo} + i FROM n`,
        );
        seed(
          sql,
          `INSERT INTO events (rowid, id, type, subject, body, created_at, channel_number_id, delivery, delivered_at)
           SELECT i, printf('evt_%032d', i), 'message.status', 'x', '{"id":"evt"}', ${threeDaysAgo} + i, '${t.numberId}', 'delivered', ${threeDaysAgo} + i FROM n`,
        );
        sql.exec(
          "INSERT INTO meta (k, v) VALUES ('events_published_through', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
          String(ROWS - 10),
        );
        seed(
          sql,
          `INSERT INTO event_attempts (seq, event_id, event_type, subject, webhook_id, attempt, attempted_at, outcome)
           SELECT ${threeDaysAgo} + i, printf('evt_%032d', i), 'message.status', 'x', CASE WHEN i % 100 = 0 THEN printf('wh-%d', i % 5000) ELSE 'wh' END, 1, ${threeDaysAgo} + i, 'delivered' FROM n`,
        );
        seed(
          sql,
          `INSERT INTO idempotency_keys (key, fingerprint, job_id, created_at) SELECT printf('k%d', i), 'f', 'j', ${clock.now()} - 1000 - i FROM n`,
        );
      });
    });
    await evictDurableObject(stub);
    const at = clock.now();
    const { steps, workFirst, workLater } = await runInDurableObject(stub, async (_, state) => {
      const m = measured(WorkspaceDurableObject, state);
      // A number's queue rebuilt while the earlier layout's table is here: its records there have
      // no work index, so the first page reads the number's records of that table once (at most
      // the 48 hours before the upgrade; they move to history then); later pages only the `_work` index.
      const workFirst = await m.read(() => m.instance.workOf(t.numberId, "", 500));
      const workLater = await m.read(() => m.instance.workOf(t.numberId, "ffffffff-ffff-7fff-8000-000000000000", 500));
      return { steps: await measureSteps(m, at), workFirst, workLater };
    });
    expect(workFirst).toBeLessThanOrEqual(ROWS + 510);
    expect(workLater).toBeLessThanOrEqual(510);
    expect(
      overBounds(steps, {
        "publish-events": { due: 0, run: 0 },
        "counts-to-d1": { due: 0, run: 0 },
        "unknown-outcomes": { due: SCHEMA, run: 0 },
        "move-to-history": { due: 5, run: 0 },
        "archive-history": { due: 5, run: 0 },
        "moved-keys-purge": { due: SCHEMA, run: 0 },
        "delivery-log-purge": { due: 5, run: 0 },
        // The events recorded and not published before the upgrade: a batch of 500 at most.
        "legacy-events": { due: SCHEMA, run: 500 + SCHEMA },
        // 500 records per run, each read, then deleted once its shard has it.
        "legacy-move": { due: 5, run: 2 * 500 + SCHEMA },
        // No look at the events or the delivery log (they have no index by time).
        "legacy-expiry": { due: 3 * SCHEMA, run: 0 },
      }),
    ).toEqual([]);
    expect(steps.filter((s) => s.run !== null).map((s) => s.step)).toEqual(["legacy-events", "legacy-move"]);
  }, 120_000);

  it("the number's steps, with a queue of 100,000 rebuilt from its workspace's records", async () => {
    const t = await createTenant();
    const today = utcDay(clock.now());
    await runInDurableObject(workspaceStub(env, t.workspaceId), (_, state) => {
      state.storage.transactionSync(() =>
        seedSlot(state.storage.sql, firstSlot(today), t.numberId, { status: "queued", pending: 1 }, "006"),
      );
    });
    await evictDurableObject(workspaceStub(env, t.workspaceId));
    const number = channelNumberStub(env, t.numberId);
    // The number's own tables: contacts and aliases (a month of inbound users), the sandbox's reports.
    await number.noteInbound(t.numberId, [{ from: "5511000000000", at: clock.now() }]);
    await runInDurableObject(number, (_, state) => {
      const sql = state.storage.sql;
      state.storage.transactionSync(() => {
        createContactsTable(sql);
        createSandboxReportsTable(sql);
        seed(
          sql,
          `INSERT INTO contacts (phone, last_inbound_at) SELECT printf('5522%09d', i), ${clock.now()} - 1000 FROM n`,
        );
        seed(
          sql,
          `INSERT INTO recipient_aliases (recipient, wa_id, updated_at) SELECT printf('5533%09d', i), printf('553%09d', i), ${clock.now()} - 1000 FROM n`,
        );
        seed(
          sql,
          `INSERT INTO sandbox_reports (job_id, upstream_message_id, due_at, status) SELECT printf('job-%d', i), printf('sandbox.%d', i), ${clock.now()} + 3600000 + i, 'delivered' FROM n`,
        );
      });
    });
    await evictDurableObject(number);
    const at = clock.now();
    const results = await runInDurableObject(number, async (_, state) => {
      const m = measured(ChannelNumberDurableObject, state);
      const steps = await measureSteps(m, at);
      const queued = (m.instance as unknown as { queue: { size: number } }).queue.size;
      // A month later: silent contacts and aliases are purged a batch at a time; due reports applied a batch at a time.
      const later = at + 31 * DAY_MS;
      const purge = await m.read(() => m.steps.find((s) => s.name === "purge")!.run(later));
      const reports = await m.read(() => m.steps.find((s) => s.name === "sandbox-reports")!.run(later));
      return { steps, queued, purge, reports };
    });
    expect(
      overBounds(results.steps, {
        "legacy-handover": { due: 0, run: 0 },
        // Its pages are the workspace's workOf (bounded above): none of the number's rows.
        reload: { due: 0, run: 5 },
        "held-bound": { due: 0, run: 0 },
        // One session: the calls the pace allows (a contact-window lookup each).
        drain: { due: 0, run: 50 },
        "hand-off": { due: 0, run: 0 },
        // MIN through the index.
        "sandbox-reports": { due: 2 + SCHEMA, run: 0 },
        purge: { due: 4 + SCHEMA, run: 0 },
      }),
    ).toEqual([]);
    expect(results.steps.filter((s) => s.run !== null).map((s) => s.step)).toEqual(["reload", "drain"]);
    // The whole queue was rebuilt (less what the drain took to the operator).
    expect(results.queued).toBeGreaterThan(ROWS - 10);
    // 1,000 contacts and 1,000 aliases, each found and deleted through its index; 100 reports.
    expect(results.purge).toBeLessThanOrEqual(2 * 1_000 * 4 + 50);
    expect(results.reports).toBeLessThanOrEqual(100 * 2 + SCHEMA);
  }, 120_000);
});
