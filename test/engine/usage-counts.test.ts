import {
  createExecutionContext,
  createMessageBatch,
  evictDurableObject,
  getQueueResult,
  runDurableObjectAlarm,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { createTenant, TEST_CONTACT, type Tenant } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { workspaceStub } from "../../src/durable-objects/stubs";
import { type UsageCountMessage, WorkspaceDurableObject } from "../../src/durable-objects/workspace/workspace";
import type { SendCommand } from "../../src/messages/send";
import { TALLY_MIN_RECORDS } from "../../src/durable-objects/workspace/counts";
import { slotStart } from "../../src/durable-objects/workspace/day-tables";
import { DAY_MS, utcDay } from "../../src/lib/job-id";
import { monthPeriod } from "../../src/lib/clock";
import { fakeClockPerTest } from "../helpers/clock";
import { measuring } from "../helpers/counted-reads";
import { firstSlot, seededId, seedSlot, seedStorage } from "../fixtures/bulk-rows";

const clock = fakeClockPerTest(Date.UTC(2043, 2, 10, 12), (t) => t + 5 * 24 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

const d1Counts = (workspaceId: string) =>
  env.DB.prepare("SELECT day, channel_number_id, accepted, sent FROM usage_daily WHERE workspace_id = ?")
    .bind(workspaceId)
    .all();

describe("daily counts in D1", () => {
  it("reach D1 off the request path, one row per number and day, never one write per send", async () => {
    const t = await createTenant();
    expect((await send(t.key, "c1", textMessage(t.numberId))).status).toBe(201);
    expect((await send(t.key, "c2", textMessage(t.numberId))).status).toBe(201);
    expect((await d1Counts(t.workspaceId)).results).toEqual([]); // nothing on the request path
    const day = new Date(clock.now()).toISOString().slice(0, 10);
    // Counts ship at most once a minute per workspace.
    clock.advance(61_000);
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    await vi.waitFor(
      async () =>
        expect((await d1Counts(t.workspaceId)).results).toEqual([
          { day, channel_number_id: t.numberId, accepted: 2, sent: 0 },
        ]),
      {
        timeout: 15_000,
        interval: 100,
      },
    );
  });

  it("a count that changes while it is being shipped ships again: D1 never keeps a stale total", async () => {
    const t = await createTenant();
    expect((await send(t.key, "v1", textMessage(t.numberId))).status).toBe(201);
    const original = env.USAGE_QUEUE.sendBatch.bind(env.USAGE_QUEUE);
    vi.spyOn(env.USAGE_QUEUE, "sendBatch").mockImplementationOnce(async (messages, options) => {
      // Another send is accepted while the first total is on its way.
      expect((await send(t.key, "v2", textMessage(t.numberId))).status).toBe(201);
      return original(messages, options);
    });
    clock.advance(61_000);
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId)); // ships 1 while the count becomes 2
    clock.advance(61_000);
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId)); // the row stayed dirty: ships 2
    await vi.waitFor(async () => expect((await d1Counts(t.workspaceId)).results).toMatchObject([{ accepted: 2 }]), {
      timeout: 15_000,
      interval: 100,
    });
  });

  it("the consumer keeps the larger total, so redelivered and reordered messages are harmless", async () => {
    const base: UsageCountMessage = {
      workspaceId: crypto.randomUUID(),
      day: "2043-01-01",
      channelNumberId: crypto.randomUUID(),
      accepted: 5,
      sent: 4,
      failed: 1,
      received: 0,
    };
    for (const bodies of [[base], [{ ...base, accepted: 3, sent: 2 }], [base]]) {
      const batch = createMessageBatch(
        "usage-counts",
        bodies.map((body, i) => ({ id: `u${i}`, timestamp: new Date(), attempts: 1, body })),
      );
      const ctx = createExecutionContext();
      await worker.queue(batch, env, ctx);
      expect((await getQueueResult(batch, ctx)).ackAll).toBe(true);
    }
    expect((await d1Counts(base.workspaceId)).results).toEqual([
      { day: "2043-01-01", channel_number_id: base.channelNumberId, accepted: 5, sent: 4 },
    ]);
  });
});

describe("the month's counts after a restart", () => {
  const sendCommand = (t: Tenant, key: string): SendCommand => ({
    workspaceId: t.workspaceId,
    idempotencyKey: key,
    fingerprint: "f",
    request: { channelNumberId: t.numberId, to: TEST_CONTACT },
    content: { type: "text", body: "hello", content: null, details: null },
  });
  /** The first UTC day of the clock's month, made an earlier day than today. */
  const earlierDayOfMonth = (): number => {
    const first = utcDay(Date.parse(monthPeriod(clock.now()).start));
    if (first === utcDay(clock.now())) clock.advance(DAY_MS);
    return first;
  };
  const dayOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);
  const history = (t: Tenant) =>
    workspaceStub(env, t.workspaceId).usageHistory(
      Date.parse(monthPeriod(clock.now()).start),
      (utcDay(clock.now()) + 1) * DAY_MS,
    );

  it("the first send and the usage after a restart read a row per slot, not the month's records", async () => {
    const t = await createTenant();
    const stub = workspaceStub(env, t.workspaceId);
    const day = earlierDayOfMonth();
    // A quiet workspace keeps its month's records here: 5,000 of them, in two slots of an earlier day.
    await seedStorage(stub, (sql) => {
      seedSlot(sql, firstSlot(day), t.numberId, { status: "sent", sent: true }, "001", 3_000);
      seedSlot(sql, firstSlot(day) + 1, t.numberId, { status: "failed" }, "002", 2_000);
    });
    // A wake counts them once.
    await evictDurableObject(stub);
    expect(await stub.usage()).toMatchObject({ messagesUsed: 5_000 });
    // Every later wake (an idle eviction, a deploy) reads what was kept of that count.
    await evictDurableObject(stub);
    const reads = await measuring(stub, WorkspaceDurableObject, async (m) => ({
      usage: await m.read(() => m.instance.usage()),
      history: await m.read(() =>
        m.instance.usageHistory(Date.parse(monthPeriod(clock.now()).start), (utcDay(clock.now()) + 1) * DAY_MS),
      ),
      send: await m.read(() => m.instance.send(sendCommand(t, "after-wake"))),
      used: (await m.instance.usage()).messagesUsed,
    }));
    expect(reads).toEqual({
      usage: expect.toSatisfy((n: number) => n < 200, "a few rows"),
      history: expect.toSatisfy((n: number) => n < 200, "a few rows"),
      send: expect.toSatisfy((n: number) => n < 200, "a few rows"),
      used: 5_001,
    });
    await evictDurableObject(stub);
    expect((await history(t)).find((d) => d.day === dayOf(day))).toEqual({
      day: dayOf(day),
      accepted: 5_000,
      sent: 3_000,
      failed: 2_000,
      received: 0,
    });
  });

  it("a change to a record whose count was kept, and a late record among them, are kept with it: the counts stay exact across restarts", async () => {
    const t = await createTenant();
    const stub = workspaceStub(env, t.workspaceId);
    const day = earlierDayOfMonth();
    const slot = firstSlot(day);
    const count = TALLY_MIN_RECORDS * 2;
    await seedStorage(stub, (sql) => seedSlot(sql, slot, t.numberId, { status: "sent", sent: true }, "003", count));
    await evictDurableObject(stub);
    expect(await stub.usage()).toMatchObject({ messagesUsed: count });
    // The operator reports one of them failed (a late failure after `sent`).
    const jobId = seededId(slotStart(slot), "003", 7);
    expect(await stub.getMessage(jobId)).toMatchObject({ id: jobId, status: "sent" });
    expect(
      await stub.applyStatuses([
        {
          jobId,
          at: clock.now(),
          status: "failed",
          error: {
            code: "recipient_unreachable",
            message: "The recipient cannot receive messages.",
            retriable: false,
            upstreamCode: "131026",
          },
        },
      ]),
    ).toEqual([{ known: true, status: "failed" }]);
    // And a message from a customer, delivered late: its operator time falls among the counted records.
    expect(
      await stub.recordInbound(t.workspaceId, [
        {
          channelNumberId: t.numberId,
          upstreamMessageId: "wamid.LATE.1",
          from: TEST_CONTACT,
          type: "text",
          text: "late",
          content: null,
          at: slotStart(slot) + 10,
        },
      ]),
    ).toHaveLength(1);
    const expected = { day: dayOf(day), accepted: count, sent: count - 1, failed: 1, received: 1 };
    expect((await history(t)).find((d) => d.day === dayOf(day))).toEqual(expected);
    await evictDurableObject(stub);
    expect((await history(t)).find((d) => d.day === dayOf(day))).toEqual(expected);
  });

  it("the minute's flush keeps the count of the records this instance added: the next wake does not read them", async () => {
    const t = await createTenant();
    const stub = workspaceStub(env, t.workspaceId);
    const sends = TALLY_MIN_RECORDS + 16;
    // Counted from the first send on (GET /usage reads the day's counts): later sends move the count in memory.
    expect(await stub.send(sendCommand(t, "first"))).toMatchObject({ kind: "created" });
    expect(await history(t)).toContainEqual(expect.objectContaining({ accepted: 1 }));
    for (let i = 1; i < sends; i++) {
      // Past the number's 2-per-second window.
      clock.advance(500);
      expect(await stub.send(sendCommand(t, `k${i}`))).toMatchObject({ kind: "created" });
    }
    clock.advance(61_000);
    await runDurableObjectAlarm(stub);
    await evictDurableObject(stub);
    const reads = await measuring(stub, WorkspaceDurableObject, async (m) => ({
      usage: await m.read(() => m.instance.usage()),
      used: (await m.instance.usage()).messagesUsed,
    }));
    expect(reads).toEqual({
      usage: expect.toSatisfy((n: number) => n < TALLY_MIN_RECORDS, "fewer than the sends"),
      used: sends,
    });
  });
});
