import { PACE_WINDOW_MS } from "../../src/durable-objects/channel-number/delivery-policy";
import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createTenant } from "../helpers/fixtures";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { WorkspaceDurableObject } from "../../src/durable-objects/workspace/workspace";
import { ChannelNumberDurableObject } from "../../src/durable-objects/channel-number/channel-number";
import { slotStart, slotTable } from "../../src/durable-objects/workspace/day-tables";
import { SCAN_BUDGET } from "../../src/durable-objects/workspace/message-queries";
import { PART_ROWS } from "../../src/durable-objects/history/archive-writer";
import { PUBLISH_PAGE } from "../../src/durable-objects/workspace/event-publisher";
import { DAY_MS, utcDay } from "../../src/lib/job-id";
import type { SendCommand } from "../../src/messages/send";
import { RETENTION_SLACK_MS } from "../../src/durable-objects/shared/scheduler";
import { testShard, testWorkspace } from "../helpers/objects";
import { fakeClockPerTest } from "../helpers/clock";
import { measureSteps, measuring, moveRuns, type StepReads } from "../helpers/counted-reads";
import {
  firstSlot,
  seededId,
  seedDeliveryLogDay,
  seedHotBytesBudget,
  seedNumberTables,
  seedSlot,
  seedStorage,
  seedUnknownIndex,
} from "../fixtures/bulk-rows";

const ROWS = 100_000;
const clock = fakeClockPerTest(Date.UTC(2046, 5, 1, 12), (t) => (utcDay(t) + 400) * DAY_MS + 12 * 3_600_000);

/**
 * A GROUP BY over a table reads each row twice (the table, then its sorter): the one pass that
 * counts the records of a slot its tally does not cover (counts.ts: once per instance, when the
 * day's counts are first needed, or frozen as its table leaves; these seeded tables have no tally).
 */
const COUNT_PASS = 2 * ROWS;
/** Per slot counted: its tally row, and the look at the range of the last minute's records. */
const TALLY_READS = 5;
/** Rows of the object's schema (sqlite_master) a table lookup reads: a few dozen here (5 per slot table, and the owed list). */
const SCHEMA = 31;

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
    await seedStorage(stub, (sql) => {
      // A day past the plan's window, to archive: two of its four slot tables (00:00 and 12:00).
      for (const [slot, tag] of oldSlots) seedSlot(sql, slot, t.numberId, { status: "sent", sent: true }, tag, ROWS);
      // Outcomes unknown for longer than the operator's window: the expiry's backlog.
      const unknownSlot = firstSlot(unknownDay);
      seedSlot(sql, unknownSlot, t.numberId, { status: "processing", unknownSince: unknownDay * DAY_MS }, "002", ROWS);
      seedUnknownIndex(sql, unknownSlot, "002", ROWS, t.numberId);
      // Today's first slot: a number's queue of queued records (the `_work` index), each with its key.
      seedSlot(sql, firstSlot(today), t.numberId, { status: "queued", pending: 1, keys: "k" }, "003", ROWS);
      // Yesterday's delivery log: one row per consumer report.
      seedDeliveryLogDay(sql, today - 1, t.numberId, "wh", ROWS);
    });
    await evictDurableObject(stub);
    const at = clock.now();
    const idOf = (slot: number, tag: string, i: number) => seededId(slotStart(slot), tag, i);
    const results = await measuring(stub, WorkspaceDurableObject, async (m) => {
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
      // API v2's delivered and read: sent records by their delivery and read times, within the same budget.
      await check("listMessages, v2's read (the scan budget)", SCAN_BUDGET + 10, () =>
        w.listMessages({ status: "sent", reached: "read" }, null, 20),
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
      const steps = await measureSteps(m, clock, at, at + 61_000);
      // The expiry's events, owed as it ran, are published in the background: their page is done
      // before the archive is measured (one page: the owed list sorted, each record read once).
      const publish = () => m.steps.find((s) => s.name === "publish-events")!.run(at);
      const published = await m.read(publish);
      // The archive goes on, 4 parts a run, and finishes: the day's counts are frozen as its tables are dropped.
      const archiveRuns: number[] = [];
      const archiveStep = m.steps.find((s) => s.name === "archive-history")!;
      const oldTables = oldSlots.map(([slot]) => slotTable(slot));
      const tablesLeft = () => m.schemaNames().filter((name) => oldTables.includes(name)).length;
      while (tablesLeft() > 0 && archiveRuns.length < 5) archiveRuns.push(await m.read(() => archiveStep.run(at)));
      const archived = { tablesLeft: tablesLeft(), day: await w.archive(old) };
      // More unknown outcomes expire; their day was counted once (when the first expired): not again.
      await m.read(() => m.steps.find((s) => s.name === "unknown-outcomes")!.run(at));
      await publish(); // their events, before the counts are measured
      const countsFirst = await m.read(() => m.steps.find((s) => s.name === "counts-to-d1")!.run(at));
      await m.read(() => m.steps.find((s) => s.name === "unknown-outcomes")!.run(at));
      await publish();
      const countsAgain = await m.read(() => m.steps.find((s) => s.name === "counts-to-d1")!.run(at));
      return { reads, steps, published, archiveRuns, archived, countsFirst, countsAgain };
    });
    expect(results.reads.filter(([, read, bound]) => read > bound)).toEqual([]);
    expect(
      overBounds(results.steps, {
        "publish-events": { due: 0, run: 0 },
        // The first time: today's counts (the days still changing ship again after a restart), one count pass.
        "counts-to-d1": { due: 0, run: COUNT_PASS + 10 },
        // 100 per run (the first 100 of the `since` index), each a few key reads (its entries in the
        // list's two indexes among them) and a look at the schema.
        "unknown-outcomes": { due: 100 + SCHEMA, run: 100 * (SCHEMA + 2) + 100 * 3 },
        "move-to-history": { due: 5, run: 0 },
        // 4 parts of PART_ROWS per run.
        // (Meanwhile, in the background, the events the expiry owed are published: one page.)
        "archive-history": { due: 5, run: 4 * PART_ROWS + 10 + 3 * PUBLISH_PAGE },
        "moved-keys-purge": { due: SCHEMA, run: 0 },
        "delivery-log-purge": { due: 5, run: 5 },
        // The next day whose media copies leave R2: one range of meta rows.
        "media-purge": { due: 1, run: 1 },
      }),
    ).toEqual([]);
    // Steps that had work did it (a bound met by doing nothing proves nothing).
    expect(results.steps.filter((s) => s.run !== null).map((s) => s.step)).toEqual(
      expect.arrayContaining(["counts-to-d1", "unknown-outcomes", "archive-history"]),
    );
    // The day's 200,000 records are 10 parts: 4 more in the second run; the last 2, the manifest,
    // the day's counts (one pass per slot table) and the drop of its two tables (each a look at the
    // schema) in the third; each run first looks for records still listed and for unknown outcomes
    // of the day (two index ranges, empty here).
    expect(results.archiveRuns).toHaveLength(2);
    expect(results.published).toBeLessThanOrEqual(3 * PUBLISH_PAGE + SCHEMA);
    expect(results.archiveRuns[0]).toBeLessThanOrEqual(4 * PART_ROWS + 10);
    expect(results.archiveRuns[1]).toBeLessThanOrEqual(
      2 * PART_ROWS + 2 * COUNT_PASS + 2 * SCHEMA + 10 + 2 * TALLY_READS,
    );
    expect(results.archived).toMatchObject({ tablesLeft: 0, day: { day: old, messages: 2 * ROWS, parts: 10 } });
    // The unknown outcomes' day, counted the first time it changed, then kept in memory.
    expect(results.countsFirst).toBeLessThanOrEqual(COUNT_PASS + 10);
    expect(results.countsAgain).toBeLessThanOrEqual(10);
  }, 120_000);

  it("a workspace over its budget moves a slot to history in bounded runs", async () => {
    const t = await createTenant();
    const stub = workspaceStub(env, t.workspaceId);
    const day = utcDay(clock.now()) - 10;
    await seedStorage(stub, (sql) => {
      seedSlot(sql, firstSlot(day), t.numberId, { status: "sent" }, "004", ROWS);
      seedHotBytesBudget(sql, 1);
    });
    await evictDurableObject(stub);
    const runs = await measuring(stub, WorkspaceDurableObject, (m) => moveRuns(m, clock));
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
    await seedStorage(stub, (sql) => {
      seedSlot(sql, slot, t.numberId, { status: "sent", keys: "g" }, "008", ROWS);
      // A budget of one byte: the object is over 3.5 times it.
      seedHotBytesBudget(sql, 1);
    });
    await evictDurableObject(stub);
    const at = clock.now();
    const results = await measuring(stub, WorkspaceDurableObject, async (m) => {
      const moves = await moveRuns(m, clock);
      const kept = m.rowCount("moved_keys");
      // A replay of a moved record's key is answered from its kept key (one key read), with no hand-off.
      const command = (key: string, fingerprint: string): SendCommand => ({
        workspaceId: t.workspaceId,
        idempotencyKey: key,
        fingerprint,
        request: { channelNumberId: t.numberId, to: "5511000000001" },
        content: { type: "text", body: "x", content: null, details: null },
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
      const keptBefore = m.rowCount("moved_keys");
      const purgeAt = due ?? at;
      clock.set(purgeAt);
      const runs: number[] = [];
      while (purge.due(purgeAt) !== null && runs.length < 150) runs.push(await m.read(() => purge.run(purgeAt)));
      clock.set(at);
      const tables = m.schemaNames().filter((name) => name.startsWith("moved_keys"));
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
    expect(results.replay).toEqual({ kind: "duplicate", jobId: seededId(sentAt, "008", 50_000) });
    expect(results.conflict).toEqual({ kind: "conflict", jobId: seededId(sentAt, "008", 50_001) });
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

  it("the number's steps, with a queue of 100,000 rebuilt from its workspace's records", async () => {
    const t = await createTenant();
    const today = utcDay(clock.now());
    await seedStorage(workspaceStub(env, t.workspaceId), (sql) =>
      seedSlot(sql, firstSlot(today), t.numberId, { status: "queued", pending: 1 }, "006", ROWS),
    );
    await evictDurableObject(workspaceStub(env, t.workspaceId));
    const number = channelNumberStub(env, t.numberId);
    // The number's own tables: contacts and aliases (a month of inbound users), the sandbox's reports.
    await number.noteInbound(t.numberId, [{ from: "5511000000000", at: clock.now() }]);
    await seedStorage(number, (sql) => seedNumberTables(sql, clock.now(), ROWS));
    await evictDurableObject(number);
    const at = clock.now();
    const results = await measuring(number, ChannelNumberDurableObject, async (m) => {
      // A restarted number (its alarm was armed) starts its pace full: its first call a window later.
      const steps = await measureSteps(m, clock, at, at + PACE_WINDOW_MS);
      const queued = (m.instance as unknown as { queue: { size: number } }).queue.size;
      // A failure reported without our jobId: the recipients the operator knows by its id, through an index.
      const known = await m.instance.recipientsKnownAs(["553000000500"]);
      const reverse = await m.read(() => m.instance.recipientsKnownAs(["553000000500"]));
      // A month later: silent contacts and aliases are purged a batch at a time; due reports applied a batch at a time.
      const later = at + 31 * DAY_MS;
      const purge = await m.read(() => m.steps.find((s) => s.name === "purge")!.run(later));
      const reports = await m.read(() => m.steps.find((s) => s.name === "sandbox-reports")!.run(later));
      return { steps, queued, purge, reports, known, reverse };
    });
    expect(
      overBounds(results.steps, {
        // Its pages are the workspace's workOf (bounded above): none of the number's rows.
        reload: { due: 0, run: 5 },
        "held-bound": { due: 0, run: 0 },
        // One session: the calls the pace allows (a contact-window lookup each).
        drain: { due: 0, run: 50 },
        "hand-off": { due: 0, run: 0 },
        // MIN through the index.
        "sandbox-reports": { due: 2 + SCHEMA, run: 0 },
        purge: { due: 4 + SCHEMA, run: 0 },
        // In memory.
        "pace-lease": { due: 0, run: 0 },
      }),
    ).toEqual([]);
    expect(results.steps.filter((s) => s.run !== null).map((s) => s.step)).toEqual(["reload", "drain"]);
    // The whole queue was rebuilt (less what the drain took to the operator).
    expect(results.queued).toBeGreaterThan(ROWS - 10);
    // 1,000 contacts and 1,000 aliases, each found and deleted through its index; 100 reports.
    expect(results.purge).toBeLessThanOrEqual(2 * 1_000 * 4 + 50);
    expect(results.reports).toBeLessThanOrEqual(100 * 2 + SCHEMA);
    expect(results.known).toEqual({ "553000000500": ["5533000000500"] });
    expect(results.reverse).toBeLessThanOrEqual(2 + SCHEMA);
  }, 120_000);
});
