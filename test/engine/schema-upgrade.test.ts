import { PACE_WINDOW_MS, RETRY_POLICY } from "../../src/durable-objects/channel-number/delivery-policy";
import { abortAllDurableObjects, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { api, json } from "../helpers/http";
import { send, textMessage } from "../helpers/send";
import { accepted, operatorError, type OperatorCall } from "../helpers/operator";
import { inboundPayload, postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { liveNumberOnEdge } from "../helpers/number-edge";
import { eventsOfMessage } from "../helpers/events";
import { testNumber, testShard, testWorkspace } from "../helpers/objects";
import { fakeClockPerTest } from "../helpers/clock";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { historyStub } from "../../src/durable-objects/history/history";
import type { Schema, SchemaStep } from "../../src/durable-objects/shared/schema-version";
import { WORKSPACE_SCHEMA } from "../../src/durable-objects/workspace/schema";
import { HISTORY_SCHEMA } from "../../src/durable-objects/history/schema";
import { CHANNEL_NUMBER_SCHEMA } from "../../src/durable-objects/channel-number/schema";
import { createSlotTable, slotOf, slotTable, slotTallyKey } from "../../src/durable-objects/workspace/day-tables";
import { TALLY_MIN_RECORDS } from "../../src/durable-objects/workspace/counts";
import { WorkspaceDurableObject } from "../../src/durable-objects/workspace/workspace";
import { setMeta } from "../../src/durable-objects/shared/meta";
import { measuring } from "../helpers/counted-reads";
import { firstSlot, seedSlot, seedStorage } from "../fixtures/bulk-rows";
import { UNKNOWN_OUTCOME_WINDOW_MS } from "../../src/durable-objects/workspace/unknown-outcomes";
import { RETENTION_SLACK_MS } from "../../src/durable-objects/shared/scheduler";
import type { MessageRow } from "../../src/messages/record";
import { DAY_MS, newJobId, utcDay } from "../../src/lib/job-id";

// Storage outlives deploys: a layout change ships as the next step of its object's ladder
// (shared/schema-version.ts), which runs once, in place, when an object of the earlier layout
// wakes. Step 1 of each ladder is the baseline (the workspace has steps 2, 3 and 4 since: engine/unknown-outcomes.test.ts,
// and the slot tallies and the order of changes below);
// these tests put one more step on top (as the next layout change will), fill objects with data in every state, and let
// them wake under the longer ladder: nothing may be lost, changed, sent twice or left unsent.
// The objects run in the tests' isolate, so the ladder they read is the one these tests extend.

const clock = fakeClockPerTest(Date.UTC(2049, 0, 1, 9), (t) => utcDay(t) * DAY_MS + 60 * DAY_MS + 9 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

/** Puts `step` on top of `schema`'s ladder until the test ends; returns how often it ran. */
function laterStep(schema: Schema, up: (sql: SqlStorage) => void): { runs: () => number } {
  const steps = schema.steps as SchemaStep[];
  let runs = 0;
  steps.push({
    version: steps.length + 1,
    description: "a later layout change (test)",
    up: (sql) => {
      runs++;
      up(sql);
    },
  });
  onTestFinished(() => {
    steps.pop();
  });
  return { runs: () => runs };
}

/** A step that rebuilds every slot table with one more column, the way SQLite changes a table's layout: copy, drop, rename. */
const rebuildSlotTables = (sql: SqlStorage): void => {
  const slots = sql
    .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'm_[0-9]*'")
    .toArray()
    .map((r) => Number(r.name.slice(2)));
  for (const slot of slots) {
    const t = slotTable(slot);
    sql.exec(`CREATE TABLE ${t}_next AS SELECT *, NULL AS note FROM ${t}`);
    sql.exec(`DROP TABLE ${t}`);
    createSlotTable(sql, slot);
    sql.exec(`ALTER TABLE ${t} ADD COLUMN note TEXT`);
    sql.exec(`INSERT INTO ${t} SELECT * FROM ${t}_next`);
    sql.exec(`DROP TABLE ${t}_next`);
  }
};

const callsFor = (calls: OperatorCall[], jobId: string) =>
  calls.filter((c) => c.body.biz_opaque_callback_data === jobId);

type State = "sent" | "delivered" | "failed" | "retrying" | "unknown" | "claimed" | "queued";

describe("a later schema step upgrades objects of the baseline layout in place", () => {
  it("a workspace with messages in every state: each record kept as it was, the queued and the retrying one called once each, the unknown ones never", async () => {
    const retried = new Set<string>();
    const t = await liveNumberOnEdge((call) => {
      const jobId = call.body.biz_opaque_callback_data;
      if (call.body.text.body === "failed") return operatorError(400, 131026, "Message undeliverable.");
      if (call.body.text.body === "retrying" && !retried.has(jobId)) {
        retried.add(jobId);
        return operatorError(500, 131000, "Something went wrong");
      }
      return accepted(`wamid.${jobId}`);
    });
    const ids = {} as Record<State, string>;
    const sendOne = async (state: State, to: string) => {
      // Past the number's 2-per-second window.
      clock.advance(1_000);
      const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, state, to));
      expect(res.status).toBe(201);
      ids[state] = (await json<{ jobId: string }>(res)).jobId;
    };
    const alarm = () => runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    const ws = () => workspaceStub(env, t.workspaceId);

    // Called and settled: sent, delivered (the operator's report), failed (refused for good).
    await sendOne("sent", "5511900000001");
    await sendOne("delivered", "5511900000002");
    await sendOne("failed", "5511900000003");
    for (let i = 0; i < 5 && t.calls.length < 3; i++) {
      await alarm();
      clock.advance(1_000);
    }
    expect(t.calls).toHaveLength(3);
    const delivered = statusPayload(t.phoneNumberId, [
      {
        id: `wamid.${ids.delivered}`,
        status: "delivered",
        timestamp: seconds(clock.now()),
        recipient_id: "5511900000002",
        biz_opaque_callback_data: ids.delivered,
      },
    ]);
    expect((await postOperator(delivered)).status).toBe(200);
    // Called once, answered "try again": its retry waits (RETRY_POLICY's first delay).
    await sendOne("retrying", "5511900000004");
    await alarm();
    expect(callsFor(t.calls, ids.retrying)).toHaveLength(1);
    // A claim granted and never answered (the number restarted mid-call), and one whose answer was lost.
    await sendOne("claimed", "5511900000005");
    expect(await ws().claim(ids.claimed, 1)).toMatchObject({ kind: "go" });
    await sendOne("unknown", "5511900000006");
    expect(await ws().claim(ids.unknown, 1)).toMatchObject({ kind: "go" });
    await ws().answer([{ jobId: ids.unknown, at: clock.now(), attempt: 1, outcomeUnknown: true }]);
    // Accepted, not called yet.
    await sendOne("queued", "5511900000007");
    // And an inbound message.
    const inbound = inboundPayload(
      t.phoneNumberId,
      [
        {
          from: "5511912345678",
          id: "wamid.IN.1",
          timestamp: seconds(clock.now()),
          type: "text",
          text: { body: "hi" },
        },
      ],
      [{ wa_id: "5511912345678", profile: { name: "Ana" } }],
    );
    expect((await postOperator(inbound)).status).toBe(200);

    const list = async () =>
      (await json<{ data: { id: string; status: string }[] }>(await api("/messages?limit=50", t.key))).data;
    const stored = async () =>
      Object.fromEntries(
        await Promise.all(
          Object.entries(ids).map(async ([s, id]) => [s, await testWorkspace(t.workspaceId).storedRecord(id)] as const),
        ),
      ) as Record<State, MessageRow | null>;
    const listed = await list();
    expect(listed.map((m) => m.status).sort()).toEqual(
      ["failed", "processing", "processing", "processing", "queued", "received", "sent", "sent"].sort(),
    );
    const inboundId = listed.find((m) => m.status === "received")!.id;
    const before = await stored();
    const inboundBefore = await testWorkspace(t.workspaceId).storedRecord(inboundId);
    const workBefore = await ws().workOf(t.numberId, "", 100);
    expect(workBefore.map((w) => w.jobId).sort()).toEqual([ids.claimed, ids.queued, ids.retrying].sort());

    // The next release: a step on top of the ladder; every object restarts under it (a deploy).
    const step = laterStep(WORKSPACE_SCHEMA, rebuildSlotTables);
    await abortAllDurableObjects();
    expect(await testWorkspace(t.workspaceId).schemaVersion()).toBe(WORKSPACE_SCHEMA.steps.length);
    expect(step.runs()).toBe(1);

    // Every record as it was (with the new column), listed and read as before, the work list the same.
    const after = await stored();
    for (const s of Object.keys(ids) as State[]) expect(after[s]).toEqual({ ...before[s], note: null });
    expect(await testWorkspace(t.workspaceId).storedRecord(inboundId)).toEqual({ ...inboundBefore, note: null });
    expect(await list()).toEqual(listed);
    expect(await ws().workOf(t.numberId, "", 100)).toEqual(workBefore);

    // The number rebuilds its queue from the upgraded records: the queued message and the retry
    // (once due) are called once each; the claimed one is never called (its outcome is unknown).
    for (let i = 0; i < 5; i++) {
      await alarm();
      clock.advance(RETRY_POLICY.delaysMs[0]!);
    }
    for (const s of ["sent", "delivered", "failed", "queued"] as const)
      expect(callsFor(t.calls, ids[s]), s).toHaveLength(1);
    // The retry: its first call before the upgrade, its second after.
    expect(callsFor(t.calls, ids.retrying)).toHaveLength(2);
    for (const s of ["claimed", "unknown"] as const) expect(callsFor(t.calls, ids[s]), s).toHaveLength(0);
    const view = async (s: State) =>
      json<{ status: string; outcomeUnknownSince: string | null; deliveredAt: string | null }>(
        await api(`/messages/${ids[s]}`, t.key),
      );
    expect(await view("queued")).toMatchObject({ status: "sent" });
    expect(await view("retrying")).toMatchObject({ status: "sent" });
    expect(await view("delivered")).toMatchObject({ status: "sent", deliveredAt: expect.any(String) });
    expect(await view("failed")).toMatchObject({ status: "failed" });
    for (const s of ["claimed", "unknown"] as const)
      expect(await view(s)).toMatchObject({ status: "processing", outcomeUnknownSince: expect.any(String) });

    // The unknown outcomes' list came through: both fail when the operator's window ends.
    clock.advance(UNKNOWN_OUTCOME_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    await runDurableObjectAlarm(ws());
    for (const s of ["claimed", "unknown"] as const) expect(await view(s)).toMatchObject({ status: "failed" });

    // Woken again: the step does not run twice.
    await evictDurableObject(ws());
    expect(await testWorkspace(t.workspaceId).schemaVersion()).toBe(WORKSPACE_SCHEMA.steps.length);
    expect(step.runs()).toBe(1);
    // Every event published so far reached the customer's receiver before the test's network goes.
    await t.hook.settled();
  });

  it("a history shard holding a day and a number holding contacts keep what they hold", async () => {
    const workspaceId = `ws-${crypto.randomUUID()}`;
    const day = utcDay(clock.now());
    const id = newJobId(clock.now());
    const row = {
      id,
      direction: "outbound",
      channel_number_id: "n-1",
      recipient: "5511900000001",
      type: "text",
      body: "kept",
      status: "sent",
      created_at: clock.now(),
      updated_at: clock.now(),
    } as MessageRow;
    const shard = historyStub(env, workspaceId, day);
    await shard.putChunk([row]);
    // A shard nothing was moved to has no storage, and gets none from a later step.
    const empty = historyStub(env, workspaceId, day - 1);
    expect(await empty.get(id)).toBeNull();

    const step = laterStep(HISTORY_SCHEMA, (sql) => sql.exec("CREATE INDEX chunks_by_hi ON chunks (hi)"));
    await evictDurableObject(shard);
    await evictDurableObject(empty);
    expect(await shard.get(id)).toEqual(row);
    expect((await shard.list({}, null, 10, 100)).rows).toEqual([row]);
    expect(await testShard(workspaceId, day).schemaVersion()).toBe(2);
    expect(await testShard(workspaceId, day - 1).tableNames()).toEqual([]);
    expect(step.runs()).toBe(1);
  });
});

describe("a later schema step of a number", () => {
  it("runs once over a number's contacts, which stay", async () => {
    const t = await liveNumberOnEdge((call) => accepted(`wamid.${call.body.biz_opaque_callback_data}`));
    const from = "5511912345678";
    const inbound = inboundPayload(
      t.phoneNumberId,
      [{ from, id: "wamid.IN.2", timestamp: seconds(clock.now()), type: "text", text: { body: "hi" } }],
      [{ wa_id: from, profile: { name: "Ana" } }],
    );
    expect((await postOperator(inbound)).status).toBe(200);
    const contact = async () =>
      json<{ lastInboundAt: string | null; windowOpen: boolean }>(
        await api(`/channel-numbers/${t.numberId}/contacts/${from}`, t.key),
      );
    const before = await contact();
    expect(before).toMatchObject({ lastInboundAt: expect.any(String), windowOpen: true });
    const step = laterStep(CHANNEL_NUMBER_SCHEMA, (sql) => sql.exec("ALTER TABLE contacts ADD COLUMN note TEXT"));
    await evictDurableObject(channelNumberStub(env, t.numberId));
    expect(await contact()).toEqual(before);
    expect(await testNumber(t.numberId).schemaVersion()).toBe(2);
    // And it sends as before: a message accepted now is called once.
    const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "reply", from));
    expect(res.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(res);
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
    expect(step.runs()).toBe(1);
    await t.hook.settled();
  });
});

describe("step 3 of a workspace: slot tallies", () => {
  /** The tally rows of a workspace object, by key, as stored. */
  const tallies = (workspaceId: string) =>
    runInDurableObject(workspaceStub(env, workspaceId), (_, state) =>
      Object.fromEntries(
        state.storage.sql
          .exec<{ k: string; v: string }>("SELECT k, v FROM meta WHERE k GLOB 'tally:*' ORDER BY k")
          .toArray()
          .map((r) => [r.k, JSON.parse(r.v) as unknown]),
      ),
    );
  /** Storage as the step before left it: version 2, no tally. */
  const atBaseline = (sql: SqlStorage) => {
    sql.exec("DELETE FROM meta WHERE k GLOB 'tally:*'");
    setMeta(sql, "schema_version", "2");
  };

  it("a workspace of step 2 with records in every kind of slot: counts as before, the slots big enough keep a tally, a restart reads them no more", async () => {
    const workspaceId = `ws-${crypto.randomUUID()}`;
    const number = "n-1";
    const today = utcDay(clock.now());
    const big = firstSlot(today);
    const current = slotOf(clock.now());
    expect(current).toBeGreaterThan(big);
    const ws = workspaceStub(env, workspaceId);
    await seedStorage(ws, (sql) => {
      // A day whose tables left (its counts in its ledger row), a small slot, a big one, the current one.
      setMeta(sql, `day:${String(today - 2).padStart(6, "0")}`, JSON.stringify({ counts: { [number]: [5, 4, 1, 0] } }));
      seedSlot(sql, firstSlot(today - 1), number, { status: "failed" }, "011", 10);
      seedSlot(sql, big, number, { status: "sent", sent: true }, "012", TALLY_MIN_RECORDS * 3);
      seedSlot(sql, current, number, { status: "queued", pending: 1 }, "013", 5);
      atBaseline(sql);
    });
    await evictDurableObject(ws);
    expect(await testWorkspace(workspaceId).schemaVersion()).toBe(WORKSPACE_SCHEMA.steps.length);
    expect(await tallies(workspaceId)).toEqual({
      [slotTallyKey(big)]: {
        before: expect.any(Number),
        counts: { [number]: [TALLY_MIN_RECORDS * 3, TALLY_MIN_RECORDS * 3, 0, 0] },
      },
    });
    const day = (d: number, accepted: number, sent: number, failed: number) => ({
      day: new Date(d * DAY_MS).toISOString().slice(0, 10),
      accepted,
      sent,
      failed,
      received: 0,
    });
    const expected = [
      day(today - 2, 5, 4, 1),
      day(today - 1, 10, 0, 10),
      day(today, TALLY_MIN_RECORDS * 3 + 5, TALLY_MIN_RECORDS * 3, 0),
    ];
    expect(await ws.usageHistory((today - 2) * DAY_MS, (today + 1) * DAY_MS)).toEqual(expected);
    // The tables kept their indexes, and the reads that name them find them.
    expect((await ws.workOf(number, "", 100)).map((w) => w.jobId)).toHaveLength(5);
    expect((await ws.listMessages({ status: "failed" }, null, 100)).rows).toHaveLength(10);
    expect((await ws.listMessages({ counterpart: "5511000000007" }, null, 500)).rows.length).toBeGreaterThan(0);
    // Woken again: the big slot is read from its tally.
    await evictDurableObject(ws);
    const reads = await measuring(ws, WorkspaceDurableObject, async (m) =>
      m.read(() => m.instance.usageHistory((today - 2) * DAY_MS, (today + 1) * DAY_MS)),
    );
    expect(reads).toBeLessThan(TALLY_MIN_RECORDS);
    await evictDurableObject(ws);
    expect(await ws.usageHistory((today - 2) * DAY_MS, (today + 1) * DAY_MS)).toEqual(expected);
  });

  it("a workspace of step 2 without a record upgrades writing nothing", async () => {
    const workspaceId = `ws-${crypto.randomUUID()}`;
    const ws = workspaceStub(env, workspaceId);
    await seedStorage(ws, atBaseline);
    await evictDurableObject(ws);
    expect(await testWorkspace(workspaceId).schemaVersion()).toBe(WORKSPACE_SCHEMA.steps.length);
    expect(await tallies(workspaceId)).toEqual({});
    // No tally; the later step's owed list is its only table besides meta.
    expect(await testWorkspace(workspaceId).tableNames()).toEqual(["meta", "owed_events"]);
  });
});

describe("the workspace's step 4: the order of each record's changes and the owed list", () => {
  it("records of step 3's layout in every state keep their events, get their sequence from their times once, and their next change appends to it and is announced", async () => {
    const t = await liveNumberOnEdge((call) =>
      call.body.text.body === "refused"
        ? operatorError(400, 131026, "Message undeliverable.")
        : accepted(`wamid.${call.body.biz_opaque_callback_data}`),
    );
    const ids: Record<string, string> = {};
    const sendOne = async (name: string, to: string) => {
      clock.advance(1_000); // past the number's 2-per-second window
      const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, name, to));
      ids[name] = (await json<{ jobId: string }>(res)).jobId;
      await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    };
    const report = async (name: string, status: string, extra: Record<string, unknown> = {}) => {
      clock.advance(1_000);
      const payload = statusPayload(t.phoneNumberId, [
        {
          id: `wamid.${ids[name]}`,
          status,
          timestamp: seconds(clock.now()),
          recipient_id: "5511900000001",
          biz_opaque_callback_data: ids[name],
          ...extra,
        },
      ]);
      expect((await postOperator(payload)).status).toBe(200);
    };
    const undeliverable = { errors: [{ code: 131026, title: "Message undeliverable." }] };
    await sendOne("sent", "5511900000001");
    await sendOne("delivered", "5511900000002");
    await report("delivered", "delivered");
    await sendOne("read", "5511900000003");
    await report("read", "read");
    await sendOne("refused", "5511900000004");
    await sendOne("failedLater", "5511900000005");
    await report("failedLater", "failed", undeliverable);
    await sendOne("failedThenDelivered", "5511900000006");
    await report("failedThenDelivered", "failed", undeliverable);
    await report("failedThenDelivered", "delivered");
    clock.advance(1_000);
    const queued = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "queued", "5511900000007"));
    ids.queued = (await json<{ jobId: string }>(queued)).jobId;
    const inbound = inboundPayload(
      t.phoneNumberId,
      [
        {
          from: "5511912345678",
          id: "wamid.IN.3",
          timestamp: seconds(clock.now()),
          type: "text",
          text: { body: "hi" },
        },
      ],
      [{ wa_id: "5511912345678", profile: { name: "Ana" } }],
    );
    expect((await postOperator(inbound)).status).toBe(200);
    await t.hook.settled();

    // The storage as step 3 left it: no `changes` column, no owed list.
    const stub = workspaceStub(env, t.workspaceId);
    await runInDurableObject(stub, (_, state) => {
      const sql = state.storage.sql;
      for (const { name } of sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'm_[0-9]*'")
        .toArray())
        sql.exec(`ALTER TABLE ${name} DROP COLUMN changes`);
      sql.exec("DROP TABLE owed_events");
      sql.exec("UPDATE meta SET v = '3' WHERE k = 'schema_version'");
    });
    const eventsBefore = Object.fromEntries(
      await Promise.all(Object.entries(ids).map(async ([k, id]) => [k, await eventsOfMessage(t.workspaceId, id)])),
    );
    const deliveredBefore = t.hook.events().length;

    await abortAllDurableObjects(); // a deploy
    expect(await testWorkspace(t.workspaceId).schemaVersion()).toBe(4);
    expect(await testWorkspace(t.workspaceId).owedEvents()).toEqual([]);
    // Every record's events rebuild as before (ids, order, content), their order derived from their times.
    for (const [k, id] of Object.entries(ids)) {
      expect((await testWorkspace(t.workspaceId).storedRecord(id))?.changes, k).toBeNull();
      expect(await eventsOfMessage(t.workspaceId, id), k).toEqual(eventsBefore[k]);
    }

    // Their next change is appended to that order, stored, and announced (once, and only it).
    await report("sent", "delivered");
    await report("failedLater", "delivered");
    // The restarted number (its alarm armed for the queued one) starts its pace full: the queued
    // one is called a window after the new instance started.
    await testNumber(t.numberId).alarmAt();
    clock.advance(PACE_WINDOW_MS);
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    const stored = async (k: string) => (await testWorkspace(t.workspaceId).storedRecord(ids[k]!))?.changes;
    expect(await stored("sent")).toBe("psd");
    expect(await stored("failedLater")).toBe("psfd");
    expect(await stored("queued")).toBe("ps");
    await t.hook.settled();
    const newly = t.hook
      .events()
      .slice(deliveredBefore)
      .filter((e) => e.type === "message.status")
      .map((e) => `${String(e.data.messageId)}:${String(e.data.previousStatus)}>${String(e.data.status)}`);
    expect(newly.sort()).toEqual(
      [
        `${ids.sent}:sent>sent`,
        `${ids.failedLater}:failed>failed`,
        `${ids.queued}:queued>processing`,
        `${ids.queued}:processing>sent`,
      ].sort(),
    );
  });
});
