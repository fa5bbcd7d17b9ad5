import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ndjsonText } from "../helpers/ndjson";
import { api, call, expectError, json } from "../helpers/http";
import { accepted, liveNumberTenant, mockOperator, operatorError } from "../helpers/operator";
import { inboundPayload, postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { testNumber, testShard, testWorkspace } from "../helpers/objects";
import { createTenant } from "../helpers/fixtures";
import { getMeta } from "../../src/durable-objects/shared/meta";
import { send, textMessage, usedMessages } from "../helpers/send";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { MessageHistoryDurableObject } from "../../src/durable-objects/history/history";
import { manifestKey, partKey } from "../../src/durable-objects/history/archive-keys";
import {
  SLOTS_PER_DAY,
  slotOf,
  slotOfId,
  slotStart,
  slotTable,
  SLOT_MS,
} from "../../src/durable-objects/workspace/day-tables";
import { HELD_BOUND_MS } from "../../src/durable-objects/channel-number/delivery-policy";
import { RETENTION_SLACK_MS } from "../../src/durable-objects/shared/scheduler";
import { DAY_MS, utcDay } from "../../src/lib/job-id";
import { eventsOf, type WebhookQueueMessage } from "../../src/messages/events";
import { expectRuntimeLog } from "../helpers/runtime-log";
import { queuedEvents } from "../helpers/events";
import { firstSlot, seededId, seedSlot, seedStorage, seedUnknownIndex } from "../fixtures/bulk-rows";
import { UNKNOWN_OUTCOME_WINDOW_MS } from "../../src/durable-objects/workspace/unknown-outcomes";
import { fakeClockPerTest } from "../helpers/clock";

// A workspace keeps its messages in one table per 6-hour slot (m_<slot>, four to a UTC day). A
// small one keeps its slots there until their day leaves the plan's window (pro: 30 days), then
// writes the day to R2 (NDJSON parts and a manifest) from its slot tables and drops them. One over
// its storage budget (1 GB; set here per workspace with meta `hot_bytes_budget`) moves each slot to
// its day's history shard 48 hours after the slot ends, in chunks, and archives the day from there.
// One over its size guard (3.5 times its budget) moves each slot 6 hours after it ends, and keeps
// the Idempotency-Keys of its records still within their 24 hours apart until they expire. A slot
// with work left for a number does not move.
//
// (The earlier "over budget keeps 6 hours hot, settled events and delivery logs 1 hour" test is not
// here: engine v2 stores no events.)

// A fresh stretch of time for each test, at 10:00 UTC.
const clock = fakeClockPerTest(Date.UTC(2045, 2, 1, 10), (t) => (utcDay(t) + 100) * DAY_MS + 10 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

type Tenant = Awaited<ReturnType<typeof liveNumberTenant>>;

const dayName = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);
/** The 6-hour slot `index` (0–3) of a UTC day, and when it ends. */
const slotOfDay = (day: number, index: number) => day * SLOTS_PER_DAY + index;
const slotEnd = (slot: number) => slotStart(slot) + SLOT_MS;
// The windows as the storage budget's rules state them (written out here: a test of the rules
// must not move with the constants it checks).
const HOUR = 3_600_000;
/** Over its budget, a slot moves this long after it ends. */
const OVER_BUDGET_WINDOW_MS = 48 * HOUR;
/** Over its size guard (this many times its budget), a slot moves this long after it ends. */
const GUARD_FACTOR = 3.5;
const GUARD_WINDOW_MS = 6 * HOUR;
const view = async (t: Tenant, id: string) => json<Record<string, unknown>>(await api(`/messages/${id}`, t.key));

/** Every page of GET /messages (`limit` per page, `query` filters), ids in order. */
async function listAll(t: Tenant, limit = 100, query = ""): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | null = null;
  do {
    const page: { data: { id: string }[]; nextCursor: string | null } = await json(
      await api(`/messages?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, t.key),
    );
    out.push(...page.data.map((m) => m.id));
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

/** Runs the workspace's alarm until its due steps are done (moving and archiving re-arm until finished). */
async function workspaceAlarms(t: Pick<Tenant, "workspaceId">, rounds = 8): Promise<void> {
  for (let i = 0; i < rounds; i++) await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
}

/** Sends `n` messages (one recipient each, 600 ms apart) and lets the number call them all: each is sent. */
async function sendSome(t: Tenant, n: number, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    clock.advance(600);
    const res = await send(
      t.key,
      crypto.randomUUID(),
      textMessage(t.numberId, `${prefix} ${i}`, `55119${prefix.length}${String(i).padStart(6, "0")}`),
    );
    expect(res.status).toBe(201);
    ids.push((await json<{ jobId: string }>(res)).jobId);
  }
  for (let i = 0; i <= n; i++) {
    clock.advance(1_100);
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
  }
  for (const id of ids) expect(await view(t, id)).toMatchObject({ status: "sent" });
  return ids;
}

/** The workspace object's storage size now, and the budget it is held to. */
const pressure = (t: Tenant): Promise<{ size: number; budget: number }> => testWorkspace(t.workspaceId).sizeAndBudget();

/**
 * Sets the workspace's budget to half its storage now: over its budget, under its size guard. Its
 * size moves with its tables (a dropped table gives its pages back): set again before each step.
 */
async function overBudget(t: Tenant): Promise<void> {
  const { size } = await pressure(t);
  await testWorkspace(t.workspaceId).setHotBytesBudget(Math.floor(size / 2));
  const now = await pressure(t);
  expect(now.size).toBeGreaterThan(now.budget);
  expect(now.size).toBeLessThanOrEqual(now.budget * GUARD_FACTOR);
}

/** The lines of an archived day, parsed. */
async function archiveLines(t: Tenant, day: number): Promise<{ id: string }[]> {
  const res = await api(`/message-archives/${dayName(day)}`, t.key);
  expect(res.status).toBe(200);
  expect(res.headers.get("Content-Type")).toBe("application/x-ndjson; charset=utf-8");
  return (await ndjsonText(res))
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { id: string });
}

const archivesOf = async (t: Pick<Tenant, "key">) =>
  (await json<{ data: { day: string; messages: number; archivedAt: string }[] }>(await api("/message-archives", t.key)))
    .data;

describe("a workspace under its budget", () => {
  it("keeps each slot in its table until the plan's window ends, then archives the day to R2 from its slot tables and drops them", async () => {
    const t = await liveNumberTenant(); // pro: 30 days
    mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const day = utcDay(clock.now());
    // Two slots of the day: 10:00 (06:00–12:00) and 19:00 (18:00–24:00).
    const morning = await sendSome(t, 2, "kept");
    clock.set(day * DAY_MS + 19 * 3_600_000);
    const evening = await sendSome(t, 2, "evening");
    const ids = [...morning, ...evening];
    const slots = [slotOfDay(day, 1), slotOfDay(day, 3)];
    expect(ids.map((id) => slotOfId(id))).toEqual([slots[0], slots[0], slots[1], slots[1]]);
    const records = await Promise.all(ids.map((id) => view(t, id)));
    const workspace = testWorkspace(t.workspaceId);
    expect(await workspace.tableNames()).toEqual(expect.arrayContaining(slots.map(slotTable)));

    // Days later (each slot far past 48 hours, well under the budget): the slots stay in their tables, nothing moves.
    clock.set(slotEnd(slots[1]!) + OVER_BUDGET_WINDOW_MS + 5 * DAY_MS);
    await workspaceAlarms(t);
    expect(await workspace.tableNames()).toEqual(expect.arrayContaining(slots.map(slotTable)));
    expect(await workspace.dayState(day)).toEqual({});
    expect(await testShard(t.workspaceId, day).tableNames()).toEqual([]);
    expect(await Promise.all(ids.map((id) => view(t, id)))).toEqual(records);
    expect(await archivesOf(t)).toEqual([]);

    // The day's last moment plus 30 days: archived, both tables dropped.
    clock.set((day + 1 + 30) * DAY_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t);
    expect(await archivesOf(t)).toEqual([
      { day: dayName(day), messages: 4, archivedAt: new Date(clock.now()).toISOString() },
    ]);
    const tables = await workspace.tableNames();
    for (const slot of slots) expect(tables).not.toContain(slotTable(slot));
    expect(await workspace.dayState(day)).toMatchObject({ archived: { messages: 4, parts: 1 } });
    // In R2: one gzip NDJSON part and the manifest written last.
    const manifest = await env.ARCHIVE.get(manifestKey(t.workspaceId, day));
    expect(JSON.parse(await manifest!.text())).toEqual({
      day: dayName(day),
      parts: 1,
      messages: 4,
      archivedAt: new Date(clock.now()).toISOString(),
    });
    expect(await env.ARCHIVE.head(partKey(t.workspaceId, day, 0))).not.toBeNull();
    expect(await env.ARCHIVE.head(partKey(t.workspaceId, day, 1))).toBeNull();
    // The archive holds exactly the records of both slots, as GET /messages/{id} showed them, oldest first.
    expect(await archiveLines(t, day)).toEqual(records);
    for (const id of ids) await expectError(await api(`/messages/${id}`, t.key), 404, "not_found");
    expect(await listAll(t)).toEqual([]);
    expect(await testShard(t.workspaceId, day).tableNames()).toEqual([]);
  });

  it("keeps the plan's window as its own row only when it is not the usual 30 days: a 7-day plan's day leaves after 7 days", async () => {
    const historyDaysRow = (workspaceId: string) =>
      runInDurableObject(workspaceStub(env, workspaceId), (_, state) => getMeta(state.storage.sql, "history_days"));
    const pro = await createTenant({ plan: "pro" });
    const free = await createTenant({ plan: "free" });
    const day = utcDay(clock.now());
    for (const t of [pro, free])
      expect((await send(t.key, crypto.randomUUID(), textMessage(t.numberId))).status).toBe(201);
    expect(await historyDaysRow(pro.workspaceId)).toBeUndefined();
    expect(await historyDaysRow(free.workspaceId)).toBe("7");
    // The day's last moment plus 7 days: the free plan's day is archived, the pro plan's stays.
    clock.set((day + 1 + 7) * DAY_MS + RETENTION_SLACK_MS + 60_000);
    for (const t of [pro, free]) await workspaceAlarms(t, 3);
    expect(await archivesOf(free)).toEqual([expect.objectContaining({ day: dayName(day), messages: 1 })]);
    expect(await archivesOf(pro)).toEqual([]);
    expect(await historyDaysRow(pro.workspaceId)).toBeUndefined();
  });

  it("a failure between writing the archive and dropping the tables loses nothing and duplicates nothing", async () => {
    const t = await liveNumberTenant();
    mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const day = utcDay(clock.now());
    const morning = await sendSome(t, 2, "fragile");
    clock.set(day * DAY_MS + 19 * 3_600_000);
    const evening = await sendSome(t, 1, "evening");
    const ids = [...morning, ...evening];
    const slots = [slotOfDay(day, 1), slotOfDay(day, 3)];
    expect(ids.map((id) => slotOfId(id))).toEqual([slots[0], slots[0], slots[1]]);
    const records = await Promise.all(ids.map((id) => view(t, id)));
    clock.set((day + 31) * DAY_MS + RETENTION_SLACK_MS + 60_000);

    // The part goes to R2, then the manifest write fails: the day is not complete and nothing is dropped.
    const original = env.ARCHIVE.put.bind(env.ARCHIVE);
    const put = vi.spyOn(env.ARCHIVE, "put").mockImplementation(async (key, value, options) => {
      if (String(key).endsWith("manifest.json")) throw new Error("R2 unavailable");
      return original(key, value, options);
    });
    await workspaceAlarms(t, 3);
    expect(put.mock.calls.some(([key]) => String(key) === partKey(t.workspaceId, day, 0))).toBe(true);
    expect(await archivesOf(t)).toEqual([]);
    expect(await testWorkspace(t.workspaceId).tableNames()).toEqual(expect.arrayContaining(slots.map(slotTable)));
    expect(await Promise.all(ids.map((id) => view(t, id)))).toEqual(records);
    expect(await listAll(t)).toEqual([...ids].reverse());

    // R2 back (after the step's back-off): the day is written again over the same keys, then dropped.
    put.mockRestore();
    clock.advance(120_000);
    await workspaceAlarms(t, 3);
    expect(await archivesOf(t)).toMatchObject([{ day: dayName(day), messages: 3 }]);
    const lines = await archiveLines(t, day);
    expect(lines.map((l) => l.id)).toEqual(ids);
    expect(lines).toEqual(records);
    expect(await env.ARCHIVE.head(partKey(t.workspaceId, day, 1))).toBeNull();
    const tables = await testWorkspace(t.workspaceId).tableNames();
    for (const slot of slots) expect(tables).not.toContain(slotTable(slot));
  });

  it.each([
    ["from its slot tables", false],
    ["from its history shard", true],
  ])(
    "a report that changes a record while its day's archive is being written (%s) is in the archive: the day is written again",
    async (_, inShard) => {
      const t = await liveNumberTenant();
      mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
      const day = utcDay(clock.now());
      const [id, other] = await sendSome(t, 2, "late-read");
      if (inShard) {
        await testWorkspace(t.workspaceId).setHotBytesBudget(1);
        clock.set(slotEnd(slotOfId(id!)!) + GUARD_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
        await workspaceAlarms(t, 3);
        expect(await testWorkspace(t.workspaceId).dayState(day)).toMatchObject({ history: { records: 2 } });
      }
      clock.set((day + 31) * DAY_MS + RETENTION_SLACK_MS + 60_000);
      // While the day's first part goes to R2, the operator reports the message read.
      const readAt = clock.now() - 60_000;
      const original = env.ARCHIVE.put.bind(env.ARCHIVE);
      const reported: Response[] = [];
      vi.spyOn(env.ARCHIVE, "put").mockImplementation(async (key, value, options) => {
        if (reported.length === 0 && String(key) === partKey(t.workspaceId, day, 0)) {
          reported.push(
            await postOperator(
              statusPayload(t.phoneNumberId, [
                { id: `wamid.${id}`, status: "read", timestamp: seconds(readAt), biz_opaque_callback_data: id },
              ]),
            ),
          );
        }
        return original(key, value, options);
      });
      await workspaceAlarms(t, 4);
      expect(reported.map((r) => r.status)).toEqual([200]);
      expect(await archivesOf(t)).toMatchObject([{ day: dayName(day), messages: 2 }]);
      const lines = (await archiveLines(t, day)) as { id: string; readAt: string | null }[];
      expect(lines.map((l) => [l.id, l.readAt])).toEqual([
        [id, new Date(Math.floor(readAt / 1000) * 1000).toISOString()],
        [other, null],
      ]);
    },
  );

  it("one workspace's archives are never visible to another", async () => {
    const a = await liveNumberTenant();
    const b = await liveNumberTenant();
    mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    await sendSome(a, 1, "private");
    const day = utcDay(clock.now());
    clock.set((day + 31) * DAY_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(a);
    await workspaceAlarms(b);
    expect((await api(`/message-archives/${dayName(day)}`, a.key)).status).toBe(200);
    expect(await archivesOf(b)).toEqual([]);
    await expectError(await api(`/message-archives/${dayName(day)}`, b.key), 404, "not_found");
    await expectError(await api("/message-archives/2026-02-30", a.key), 404, "not_found");
    await expectError(await api("/message-archives/../../x", a.key), 404, "not_found");
    expect((await call(`/api/v1/message-archives/${dayName(day)}`)).status).toBe(401);
  });
});

describe("a workspace over its budget", () => {
  it("moves each slot to its day's history shard 48 hours after the slot ends, in chunks; reads, lists and late reports work across tiers, also mid-move and with the day split between tiers; then archives the day from the shard", async () => {
    const t = await liveNumberTenant();
    mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const published = vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch");
    const sentOne = vi.spyOn(env.WEBHOOK_QUEUE, "send");
    const events = () => [
      ...published.mock.calls.flatMap(([items]) => [...items].flatMap((i) => eventsOf(i.body as WebhookQueueMessage))),
      ...sentOne.mock.calls.flatMap(([body]) => eventsOf(body as WebhookQueueMessage)),
    ];
    const day = utcDay(clock.now());
    const morning = slotOfDay(day, 1);
    const afternoon = slotOfDay(day, 2);
    const old = await sendSome(t, 3, "old");
    // 250 inbound messages of the same slot (more than one chunk of 200), as the operator posts them.
    const inboundAt = clock.now() + 60_000;
    for (let batch = 0; batch < 5; batch++) {
      const res = await postOperator(
        inboundPayload(
          t.phoneNumberId,
          Array.from({ length: 50 }, (_, i) => ({
            from: "5511912345678",
            id: `wamid.IN${batch * 50 + i}`,
            timestamp: seconds(inboundAt + (batch * 50 + i) * 1_000),
            type: "text",
            text: { body: `in ${batch * 50 + i}` },
          })),
        ),
      );
      expect(res.status).toBe(200);
    }
    await vi.waitFor(async () => expect(await listAll(t, 100, "&direction=inbound")).toHaveLength(250), {
      timeout: 15_000,
      interval: 100,
    });
    // The same day's next slot (12:00–18:00), the next day, and two days later.
    clock.set(day * DAY_MS + 13 * 3_600_000);
    const later = await sendSome(t, 1, "afternoon");
    clock.set((day + 1) * DAY_MS + 10 * 3_600_000);
    const middle = await sendSome(t, 1, "middle");
    clock.set(slotEnd(morning) + OVER_BUDGET_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    const recent = await sendSome(t, 1, "recent");

    const all = await listAll(t);
    expect(all).toHaveLength(256);
    // Newest first: ids are UUIDv7s of their time.
    expect(all).toEqual([...all].sort().reverse());
    expect(all.slice(0, 3)).toEqual([...recent, ...middle, ...later]);
    const morningIds = all.slice(3);
    expect(new Set(morningIds.map((id) => slotOfId(id)))).toEqual(new Set([morning]));
    const dayIds = all.slice(2);
    const before = new Map(await Promise.all(all.map(async (id) => [id, await view(t, id)] as const)));

    const workspace = testWorkspace(t.workspaceId);
    await overBudget(t);
    // The shard takes the first chunk, then fails: the slot is half moved (its cursor in the day's ledger row).
    const putChunk = MessageHistoryDurableObject.prototype.putChunk;
    const chunks = vi.spyOn(MessageHistoryDurableObject.prototype, "putChunk");
    chunks.mockImplementationOnce(function (this: MessageHistoryDurableObject, rows) {
      return putChunk.call(this, rows);
    });
    chunks.mockImplementationOnce(() => Promise.reject(new Error("shard unavailable")));
    // The shard's failed call is reported by the runtime: expected here, captured and checked.
    const trace = await expectRuntimeLog(/shard unavailable/);
    await workspaceAlarms(t, 1);
    await trace.seen();
    await trace.end();
    expect(await workspace.dayState(day)).toEqual({ moved: { "1": [...morningIds].sort()[199] } });
    expect(await workspace.tableNames()).toContain(slotTable(morning));
    expect(await testShard(t.workspaceId, day).tableNames()).toContain("chunks");
    // Mid-move: every record reads the same and is listed once, in order (those up to the cursor from the shard).
    for (const [id, v] of before) expect(await view(t, id), id).toEqual(v);
    expect(await listAll(t)).toEqual(all);
    expect(await listAll(t, 7)).toEqual(all);
    expect(await listAll(t, 50, "&direction=outbound")).toEqual([
      ...recent,
      ...middle,
      ...later,
      ...[...old].reverse(),
    ]);

    // The shard back (after the step's back-off): the rest moves, the slot's table is dropped.
    chunks.mockRestore();
    clock.advance(120_000);
    await workspaceAlarms(t, 3);
    expect(await workspace.dayState(day)).toMatchObject({ moved: { "1": "*" }, history: { records: 253 } });
    expect(await workspace.tableNames()).not.toContain(slotTable(morning));
    // The newer slots stay here, the object still over its budget: the afternoon's ended 42 hours
    // ago (it moves once 48 hours have passed).
    await overBudget(t);
    await workspaceAlarms(t, 3);
    const tables = await workspace.tableNames();
    expect(tables).toEqual(
      expect.arrayContaining([afternoon, slotOfId(middle[0]!)!, slotOfId(recent[0]!)!].map(slotTable)),
    );
    // The day is split between the shard (its morning) and its table (its afternoon): read and listed as one.
    for (const [id, v] of before) expect(await view(t, id), id).toEqual(v);
    expect(await listAll(t)).toEqual(all);
    expect(await listAll(t, 7)).toEqual(all);
    // Counts of the day: the moved slot's, frozen in the day's ledger row, with the afternoon's table.
    const usage = await json<{ daily: { day: string; accepted: number; sent: number; received: number }[] }>(
      await api("/usage", t.key),
    );
    expect(usage.daily.find((u) => u.day === dayName(day))).toMatchObject({ accepted: 4, sent: 4, received: 250 });

    // A read receipt days later reaches the record in its shard, and is announced.
    const readAt = clock.now() - 5_000;
    const report = await postOperator(
      statusPayload(t.phoneNumberId, [
        { id: `wamid.${old[0]}`, status: "read", timestamp: seconds(readAt), biz_opaque_callback_data: old[0] },
      ]),
    );
    expect(report.status).toBe(200);
    const readIso = new Date(Math.floor(readAt / 1000) * 1000).toISOString();
    await vi.waitFor(async () => expect(await view(t, old[0]!)).toMatchObject({ status: "sent", readAt: readIso }), {
      timeout: 10_000,
      interval: 50,
    });
    expect(
      events()
        .filter((e) => e.type === "message.status" && e.data.messageId === old[0])
        .at(-1),
    ).toMatchObject({
      data: { status: "sent", readAt: readIso },
    });
    before.set(old[0]!, await view(t, old[0]!));

    // 48 hours after the afternoon's slot ended, it follows to the same shard.
    clock.set(slotEnd(afternoon) + OVER_BUDGET_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    await overBudget(t);
    await workspaceAlarms(t, 3);
    expect(await workspace.dayState(day)).toMatchObject({ moved: { "1": "*", "2": "*" }, history: { records: 254 } });
    expect(await workspace.tableNames()).not.toContain(slotTable(afternoon));
    for (const [id, v] of before) expect(await view(t, id), id).toEqual(v);
    expect(await listAll(t, 7)).toEqual(all);

    // Past the plan's window: archived from the shard, then the shard is dropped.
    clock.set((day + 1 + 30) * DAY_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t);
    expect((await archivesOf(t)).find((a) => a.day === dayName(day))).toMatchObject({ messages: 254 });
    const lines = await archiveLines(t, day);
    expect(lines.map((l) => l.id)).toEqual([...dayIds].sort());
    for (const l of lines) expect(l, l.id).toEqual(before.get(l.id));
    expect(await testShard(t.workspaceId, day).tableNames()).toEqual([]);
    for (const id of dayIds.slice(0, 3)) await expectError(await api(`/messages/${id}`, t.key), 404, "not_found");
    expect(await workspace.dayState(day)).toMatchObject({ archived: { messages: 254 }, counts: expect.any(Object) });
    expect(await workspace.dayState(day)).not.toHaveProperty("history");
    expect(await workspace.dayState(day)).not.toHaveProperty("moved");
  }, 120_000);

  it("a failure between the shard's archive and its drop loses nothing and duplicates nothing", async () => {
    const t = await liveNumberTenant();
    mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const ids = await sendSome(t, 3, "shard");
    const day = utcDay(clock.now());
    clock.set(slotEnd(slotOfDay(day, 1)) + OVER_BUDGET_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    await overBudget(t);
    await workspaceAlarms(t, 2);
    expect(await testWorkspace(t.workspaceId).dayState(day)).toMatchObject({
      moved: { "1": "*" },
      history: { records: 3 },
    });
    const records = await Promise.all(ids.map((id) => view(t, id)));

    // The archive is written (parts and manifest), then dropping the shard fails: the day stays where it was.
    clock.set((day + 31) * DAY_MS + RETENTION_SLACK_MS + 60_000);
    const drop = vi
      .spyOn(MessageHistoryDurableObject.prototype, "drop")
      .mockImplementationOnce(() => Promise.reject(new Error("shard unavailable")));
    const trace = await expectRuntimeLog(/shard unavailable/);
    await workspaceAlarms(t, 1);
    await trace.seen();
    await trace.end();
    expect(drop).toHaveBeenCalledTimes(1);
    expect(await env.ARCHIVE.head(manifestKey(t.workspaceId, day))).not.toBeNull();
    expect(await archivesOf(t)).toEqual([]);
    expect(await testWorkspace(t.workspaceId).dayState(day)).toMatchObject({ history: { records: 3 } });
    expect(await Promise.all(ids.map((id) => view(t, id)))).toEqual(records);
    expect(await listAll(t)).toEqual([...ids].reverse());

    // Next run: written again over the same keys, dropped; the archive holds each record once.
    drop.mockRestore();
    clock.advance(120_000);
    await workspaceAlarms(t, 3);
    expect(await archivesOf(t)).toMatchObject([{ day: dayName(day), messages: 3 }]);
    expect(await archiveLines(t, day)).toEqual(records);
    expect(await env.ARCHIVE.head(partKey(t.workspaceId, day, 1))).toBeNull();
    expect(await testShard(t.workspaceId, day).tableNames()).toEqual([]);
  });

  it("keeps a slot younger than 48 hours in its table, however long past the guard's 6 hours", async () => {
    const t = await liveNumberTenant();
    mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const [id] = await sendSome(t, 1, "young");
    const slot = slotOf(clock.now());
    const record = await view(t, id!);
    const workspace = testWorkspace(t.workspaceId);

    // Past the guard's window (it would move now if the object were over 3.5 times its budget): it stays.
    clock.set(slotEnd(slot) + GUARD_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    await overBudget(t);
    await workspaceAlarms(t, 3);
    expect(await workspace.tableNames()).toContain(slotTable(slot));
    expect(await workspace.dayState(utcDay(slotStart(slot)))).toEqual({});
    // A second before its 48 hours: still here.
    clock.set(slotEnd(slot) + OVER_BUDGET_WINDOW_MS - 1_000);
    await overBudget(t);
    await workspaceAlarms(t, 3);
    expect(await workspace.tableNames()).toContain(slotTable(slot));
    expect(await workspace.dayState(utcDay(slotStart(slot)))).toEqual({});
    expect(await testShard(t.workspaceId, utcDay(slotStart(slot))).tableNames()).toEqual([]);
    // Past them: moved.
    clock.set(slotEnd(slot) + OVER_BUDGET_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    await overBudget(t);
    await workspaceAlarms(t, 3);
    expect(await workspace.tableNames()).not.toContain(slotTable(slot));
    expect(await workspace.dayState(utcDay(slotStart(slot)))).toMatchObject({
      moved: { [slot % SLOTS_PER_DAY]: "*" },
      history: { records: 1 },
    });
    expect(await view(t, id!)).toEqual(record);
  });
});

describe("a workspace over its size guard (3.5 times its budget)", () => {
  it("moves a slot 6 hours after it ends, not before; the Idempotency-Keys of its records stay behind for the rest of their 24 hours (a replay answers 200 duplicado_identico with the original jobId, another payload 409), then their rows go", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const payload = textMessage(t.numberId, "guarded", "5511900000001");
    clock.advance(600);
    const sentAt = clock.now();
    const slot = slotOf(sentAt);
    const day = utcDay(sentAt);
    const first = await send(t.key, "order-guard-1", payload);
    expect(first.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(first);
    for (let i = 0; i < 2; i++) {
      clock.advance(1_100);
      await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    }
    expect(calls).toHaveLength(1);
    const record = await view(t, jobId);
    expect(record).toMatchObject({ status: "sent" });
    const workspace = testWorkspace(t.workspaceId);
    // A budget of one byte: the object is far over 3.5 times it.
    await workspace.setHotBytesBudget(1);
    const now = await pressure(t);
    expect(now.size).toBeGreaterThan(now.budget * GUARD_FACTOR);

    // A second before 6 hours have passed since the slot ended: it stays.
    clock.set(slotEnd(slot) + GUARD_WINDOW_MS - 1_000);
    await workspaceAlarms(t);
    expect(await workspace.tableNames()).toContain(slotTable(slot));
    expect(await workspace.dayState(day)).toEqual({});

    // Past them: the slot is in its day's shard, its table dropped; its record's key stays here.
    clock.set(slotEnd(slot) + GUARD_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t);
    const tables = await workspace.tableNames();
    expect(tables).not.toContain(slotTable(slot));
    expect(tables).toContain("moved_keys");
    expect(await workspace.dayState(day)).toMatchObject({
      moved: { [slot % SLOTS_PER_DAY]: "*" },
      history: { records: 1 },
    });
    expect(await testShard(t.workspaceId, day).tableNames()).toContain("chunks");
    expect(await view(t, jobId)).toEqual(record);

    // A retry with the same key and payload: the original jobId, nothing sent again; another payload: a conflict.
    const replay = await send(t.key, "order-guard-1", payload);
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual({ jobId, status: "duplicado_identico" });
    const conflict = await expectError(
      await send(t.key, "order-guard-1", textMessage(t.numberId, "something else", "5511900000001")),
      409,
      "idempotency_conflict",
    );
    expect(conflict.error.details).toEqual([expect.objectContaining({ jobId })]);
    // A second before the key's 24 hours end, still bound.
    clock.set(sentAt + DAY_MS - 1_000);
    const late = await send(t.key, "order-guard-1", payload);
    expect(late.status).toBe(200);
    expect(await late.json()).toEqual({ jobId, status: "duplicado_identico" });
    expect(await testNumber(t.numberId).queued()).toEqual([]);
    expect(calls).toHaveLength(1);
    expect(await usedMessages(t.key)).toBe(1);

    // Its 24 hours over: the key's row goes with the next alarm (the table with its last row), and the key starts a new message.
    clock.set(sentAt + DAY_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t);
    expect(await workspace.tableNames()).not.toContain("moved_keys");
    const again = await send(t.key, "order-guard-1", payload);
    expect(again.status).toBe(201);
    expect((await json<{ jobId: string }>(again)).jobId).not.toBe(jobId);
  });

  it("a change that reaches a slot while its chunk is on its way to the shard is kept: a read receipt of one of its records, an inbound message of its time", async () => {
    const t = await liveNumberTenant();
    mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const [id] = await sendSome(t, 1, "moving");
    const slot = slotOfId(id!)!;
    const day = utcDay(slotStart(slot));
    await testWorkspace(t.workspaceId).setHotBytesBudget(1);
    clock.set(slotEnd(slot) + GUARD_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    // While the shard takes the slot's chunk, the operator reports the message read, and delivers
    // (for the first time) a message a customer sent a minute before it.
    const readAt = clock.now() - 60_000;
    const inboundAt = slotStart(slot) + 10 * 60_000;
    const putChunk = MessageHistoryDurableObject.prototype.putChunk;
    const reported: Response[] = [];
    vi.spyOn(MessageHistoryDurableObject.prototype, "putChunk").mockImplementation(async function (
      this: MessageHistoryDurableObject,
      rows,
    ) {
      if (reported.length === 0) {
        reported.push(
          await postOperator(
            statusPayload(t.phoneNumberId, [
              { id: `wamid.${id}`, status: "read", timestamp: seconds(readAt), biz_opaque_callback_data: id },
            ]),
          ),
          await postOperator(
            inboundPayload(t.phoneNumberId, [
              {
                from: "5511912345678",
                id: "wamid.IN-LATE",
                timestamp: seconds(inboundAt),
                type: "text",
                text: { body: "sent before the move" },
              },
            ]),
          ),
        );
      }
      return putChunk.call(this, rows);
    });
    await workspaceAlarms(t, 3);
    expect(reported.map((r) => r.status)).toEqual([200, 200]);
    expect(await testWorkspace(t.workspaceId).tableNames()).not.toContain(slotTable(slot));
    expect(await testWorkspace(t.workspaceId).dayState(day)).toMatchObject({ moved: { [slot % SLOTS_PER_DAY]: "*" } });
    // The receipt is on the record, wherever it is read from.
    const readIso = new Date(Math.floor(readAt / 1000) * 1000).toISOString();
    expect(await view(t, id!)).toMatchObject({ status: "sent", readAt: readIso });
    // The inbound message is listed and readable once.
    await vi.waitFor(async () => expect(await listAll(t, 100, "&direction=inbound")).toHaveLength(1), {
      timeout: 10_000,
      interval: 50,
    });
    const [inbound] = await listAll(t, 100, "&direction=inbound");
    expect(await view(t, inbound!)).toMatchObject({ direction: "inbound", text: { body: "sent before the move" } });
    expect(await listAll(t)).toHaveLength(2);
  });

  it("does not move a slot while a message in it waits on its number (paused: the account is locked); it moves once that work ends, keeping none of their keys (their 24 hours are over)", async () => {
    const t = await liveNumberTenant();
    // The account is locked from the afternoon on: the operator refuses those calls with an account-level code.
    mockOperator((c) =>
      c.body.text.body === "early"
        ? accepted(`wamid.${c.body.biz_opaque_callback_data}`)
        : operatorError(400, 131031, "Business account locked"),
    );
    const day = utcDay(clock.now());
    const sendOne = async (body: string, to: string): Promise<string> => {
      const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, body, to));
      expect(res.status).toBe(201);
      return (await json<{ jobId: string }>(res)).jobId;
    };
    const numberAlarm = () => runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    // 10:00: sent (the morning's slot).
    const early = await sendOne("early", "5511900000001");
    clock.advance(1_100);
    await numberAlarm();
    expect(await view(t, early)).toMatchObject({ status: "sent" });
    // 13:00: the first call is refused and pauses the number; the next message waits behind it (the afternoon's slot).
    const afternoon = slotOfDay(day, 2);
    clock.set(slotStart(afternoon) + 3_600_000);
    const heldAt = clock.now();
    const held = await sendOne("held", "5511900000002");
    await numberAlarm();
    expect((await testNumber(t.numberId).sendingState()).paused).toMatchObject({ upstreamCode: "131031" });
    clock.advance(1_000);
    const waitingAt = clock.now();
    const waiting = await sendOne("waiting", "5511900000003");
    expect((await testNumber(t.numberId).queued()).map((e) => e.jobId)).toEqual([held, waiting]);
    const workspace = testWorkspace(t.workspaceId);
    await workspace.setHotBytesBudget(1);

    // 6 hours after the afternoon's slot ended: the morning's moved, the afternoon's stays (its messages still have work).
    clock.set(slotEnd(afternoon) + GUARD_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t);
    expect(await workspace.dayState(day)).toEqual({
      moved: { "1": "*" },
      history: { records: 1 },
      counts: expect.any(Object),
    });
    // (The morning's record is 14 hours old: its key stays behind.)
    expect(await workspace.tableNames()).toEqual(expect.arrayContaining([slotTable(afternoon), "moved_keys"]));
    for (const id of [held, waiting]) expect((await view(t, id)).status).not.toBe("failed");
    // Held 24 hours, the first fails (held_too_long); the other still waits: the slot stays.
    clock.set(heldAt + HELD_BOUND_MS);
    await numberAlarm();
    expect(await view(t, held)).toMatchObject({ status: "failed", error: { code: "held_too_long" } });
    expect((await view(t, waiting)).status).not.toBe("failed");
    expect((await testNumber(t.numberId).queued()).map((e) => e.jobId)).toEqual([waiting]);
    await workspaceAlarms(t);
    expect(await workspace.tableNames()).toContain(slotTable(afternoon));
    expect(await workspace.dayState(day)).not.toHaveProperty(["moved", "2"]);
    // (The morning's key expired meanwhile, and went.)
    expect(await workspace.tableNames()).not.toContain("moved_keys");
    // Then the other's 24 hours end too: the slot's work is over, and it moves.
    clock.set(waitingAt + HELD_BOUND_MS);
    await numberAlarm();
    const records = await Promise.all([held, waiting].map((id) => view(t, id)));
    expect(records.map((r) => r.error)).toMatchObject([{ code: "held_too_long" }, { code: "held_too_long" }]);
    expect(await testNumber(t.numberId).queued()).toEqual([]);
    clock.advance(60_000);
    await workspaceAlarms(t);
    // Moved more than 24 hours after its sends: their keys are over, none is kept apart.
    expect(await workspace.tableNames()).not.toContain(slotTable(afternoon));
    expect(await workspace.tableNames()).not.toContain("moved_keys");
    expect(await workspace.dayState(day)).toMatchObject({ moved: { "1": "*", "2": "*" }, history: { records: 3 } });
    expect(await Promise.all([held, waiting].map((id) => view(t, id)))).toEqual(records);
  });
});

describe("only terminal records leave", () => {
  it("a day past the plan's window with a message its number still lists: the message fails first (held_too_long, announced), then the day is archived with it failed", async () => {
    const t = await liveNumberTenant();
    const day = utcDay(clock.now()) - 40;
    const slot = firstSlot(day);
    await seedStorage(workspaceStub(env, t.workspaceId), (sql) => {
      seedSlot(sql, slot, t.numberId, { status: "sent", sent: true }, "101", 3);
      // Never called, still on the number's work list (its queue was lost with a number deleted since).
      seedSlot(sql, slot + 1, t.numberId, { status: "queued", pending: 1 }, "102", 1);
    });
    await evictDurableObject(workspaceStub(env, t.workspaceId));
    const listed = seededId(slotStart(slot + 1), "102", 1);
    const events = queuedEvents();
    await testWorkspace(t.workspaceId).armAlarm();
    await workspaceAlarms(t);
    const failed = events().filter(
      (e) => e.type === "message.status" && e.data.messageId === listed && e.data.status === "failed",
    );
    expect(failed).toMatchObject([{ data: { error: { code: "held_too_long" } } }]);
    const lines = await archiveLines(t, day);
    expect(lines).toHaveLength(4);
    expect(lines.find((l) => l.id === listed)).toMatchObject({ status: "failed", error: { code: "held_too_long" } });
    expect(await testWorkspace(t.workspaceId).tableNames()).not.toContain(slotTable(slot + 1));
  });

  it("a day past the plan's window whose unknown outcome is still within the operator's window: the archive waits for it (not due again before), the outcome fails when its window ends, then the day is archived", async () => {
    const t = await liveNumberTenant();
    const day = utcDay(clock.now()) - 40;
    const slot = firstSlot(day);
    // Its call was made late (a held message) and its answer lost two days ago: five days of its window left.
    const since = clock.now() - 2 * DAY_MS;
    await seedStorage(workspaceStub(env, t.workspaceId), (sql) => {
      seedSlot(sql, slot, t.numberId, { status: "sent", sent: true }, "103", 2);
      seedSlot(sql, slot + 2, t.numberId, { status: "processing", unknownSince: since - 1 }, "104", 1);
      seedUnknownIndex(sql, slot + 2, "104", 1, t.numberId);
      sql.exec("UPDATE unknowns SET since = ?", since);
    });
    await evictDurableObject(workspaceStub(env, t.workspaceId));
    const unknown = seededId(slotStart(slot + 2), "104", 1);
    const workspace = testWorkspace(t.workspaceId);
    await workspace.armAlarm();
    await workspaceAlarms(t, 3);
    // Nothing archived, and the alarm is not set for now again: for the end of the outcome's window.
    expect(await archivesOf(t)).toEqual([]);
    expect(await workspace.storedRecord(unknown)).toMatchObject({ status: "processing" });
    expect(await workspace.alarmAt()).toBeGreaterThanOrEqual(since + UNKNOWN_OUTCOME_WINDOW_MS);

    // Its window ends, and failing it does not commit for a while (a storage fault): the day waits still.
    clock.set(since + UNKNOWN_OUTCOME_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    await workspace.failWrites(slotTable(slot + 2), { updatesTo: "failed" });
    await workspace.armAlarm();
    await workspaceAlarms(t, 3);
    expect(await archivesOf(t)).toEqual([]);
    expect(await workspace.storedRecord(unknown)).toMatchObject({ status: "processing" });
    await workspace.repairWrites();
    clock.advance(5 * 60_000);
    await workspace.armAlarm();
    await workspaceAlarms(t);
    const lines = await archiveLines(t, day);
    expect(lines.find((l) => l.id === unknown)).toMatchObject({
      status: "failed",
      error: { code: "upstream_outcome_unknown" },
    });
  });
});

describe("a slot that cannot move yet", () => {
  it("never hides a later one that can: eight slots with messages still waiting on their number stay, the ninth, all sent, moves", async () => {
    const t = await liveNumberTenant();
    const day = utcDay(clock.now()) - 5;
    await seedStorage(workspaceStub(env, t.workspaceId), (sql) => {
      for (let k = 0; k < 8; k++)
        seedSlot(sql, firstSlot(day) + k, t.numberId, { status: "queued", pending: 1 }, `2${k}0`, 1);
      seedSlot(sql, firstSlot(day) + 8, t.numberId, { status: "sent", sent: true }, "209", 2);
    });
    await evictDurableObject(workspaceStub(env, t.workspaceId));
    const workspace = testWorkspace(t.workspaceId);
    // Over its size guard: slots move 6 hours after they end.
    await workspace.setHotBytesBudget(1);
    await workspaceAlarms(t);
    const tables = await workspace.tableNames();
    expect(tables).not.toContain(slotTable(firstSlot(day) + 8));
    for (let k = 0; k < 8; k++) expect(tables).toContain(slotTable(firstSlot(day) + k));
    expect(await workspace.dayState(day + 2)).toMatchObject({ moved: { "0": "*" }, history: { records: 2 } });
  });
});
