import {
  createExecutionContext,
  createMessageBatch,
  evictDurableObject,
  getQueueResult,
  runDurableObjectAlarm,
  runInDurableObject,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { api, json } from "../helpers/http";
import { createKey, createTenant, createWorkspace } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { accepted, connectLiveNumber, mockOperator } from "../helpers/operator";
import { queuedEvents } from "../helpers/events";
import { onNextCommit, testNumber, testWorkspace } from "../helpers/objects";
import { KEEP_DELIVERIES_MS } from "../../src/durable-objects/workspace/delivery-log";
import { PACE_SPACING_MS, PACE_WINDOW_MS } from "../../src/durable-objects/channel-number/delivery-policy";
import type { InboundRecord } from "../../src/messages/inbound";
import { DAY_MS, newUuidV7, utcDay } from "../../src/lib/job-id";
import { eventIdOf, type WebhookEvent, type WebhookQueueMessage } from "../../src/messages/events";
import { fakeClockPerTest } from "../helpers/clock";
import { IDLE_BACKOFF_MAX_MS, NO_PROGRESS, Scheduler } from "../../src/durable-objects/shared/scheduler";
import { workspaceStub } from "../../src/durable-objects/stubs";

// Removed with engine v2, what they proved being gone by design:
// - "expired keys gather" (idempotency_keys purged in batches): a key is a column of its record and
//   leaves with its day's table, which is dropped whole (no row per key is ever deleted);
// - "the status relay keeps a change its workspace does not know yet": operator reports go to the
//   workspace's record directly, and the record exists before any call (the claim is a write on it);
// - "republishing events the queue lost": nothing is stored to republish; the queue's
//   at-least-once delivery is trusted, and a change is kept by whoever made it until its event left.

const clock = fakeClockPerTest(Date.UTC(2042, 6, 1), (t) => t + 10 * 24 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

/** A live number whose operator accepts every call (recorded in `calls`), and its object. */
async function liveNumberAcceptingAll() {
  const workspaceId = await createWorkspace();
  const { key } = await createKey(workspaceId);
  const number = await connectLiveNumber(workspaceId);
  const calls = mockOperator((c) => accepted(`wamid.${c.body.text.body}`));
  return { workspaceId, key, number, calls, stub: testNumber(number.numberId) };
}

const inbound = (channelNumberId: string, i: number, over: Partial<InboundRecord> = {}): InboundRecord => ({
  channelNumberId,
  upstreamMessageId: `wamid.IN-${i}-${crypto.randomUUID()}`,
  from: "5511977776666",
  type: "text",
  text: "😀".repeat(4_096),
  content: null,
  at: clock.now(),
  ...over,
});

const subjectOf = (e: WebhookEvent): string => (e.type === "webhook.test" ? e.id : e.data.messageId);

/** The queue refuses everything until the returned function is called. */
function queueDown(): () => void {
  const batch = vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockRejectedValue(new Error("queue unavailable"));
  const one = vi.spyOn(env.WEBHOOK_QUEUE, "send").mockRejectedValue(new Error("queue unavailable"));
  return () => {
    batch.mockRestore();
    one.mockRestore();
  };
}

/** Waits until the queue refused a send (the positive signal that a flush was tried and failed). */
const refused = () =>
  vi.waitFor(
    () => {
      const one = vi.mocked(env.WEBHOOK_QUEUE.send);
      expect(one.mock.settledResults.some((r) => r.type === "rejected")).toBe(true);
    },
    { timeout: 5_000, interval: 10 },
  );

describe("event publishing within the queue's limits", () => {
  it("100 events of 16 KB each are published in packs of several, each within one billed 64 KB unit, all of them, once", async () => {
    const t = await createTenant();
    const queued = queuedEvents();
    const sent = vi.spyOn(env.WEBHOOK_QUEUE, "send");
    // Answered once its events left.
    const ids = await testWorkspace(t.workspaceId).recordInbound(
      t.workspaceId,
      Array.from({ length: 100 }, (_, i) => inbound(t.numberId, i)),
    );
    expect(queued().map(subjectOf)).toEqual(ids);
    const bodies = sent.mock.calls.map(([body]) => body as WebhookQueueMessage);
    expect(bodies.length).toBeLessThanOrEqual(34); // three 16 KB events to a pack
    expect(Math.max(...bodies.map((b) => new TextEncoder().encode(JSON.stringify(b)).byteLength))).toBeLessThanOrEqual(
      64 * 1024,
    );
  });

  it("an event that can never be sent is set aside and reported; the events after it go out", async () => {
    const t = await createTenant();
    const errors = vi.spyOn(console, "error");
    const queued = queuedEvents();
    const workspace = testWorkspace(t.workspaceId);
    const [before, poison, after] = await workspace.recordInbound(t.workspaceId, [
      inbound(t.numberId, 1, { text: "before" }),
      inbound(t.numberId, 2, { type: "document", text: null, content: { blob: "x".repeat(130 * 1024) } }),
      inbound(t.numberId, 3, { text: "after" }),
    ]);
    expect(queued().map(subjectOf)).toEqual([before, after]);
    const setAside = errors.mock.calls.map(([line]) => String(line)).filter((l) => l.includes("event set aside"));
    expect(setAside).toHaveLength(1);
    expect(setAside[0]).toContain(eventIdOf(poison!, "received"));
    // Nothing keeps the alarm busy for it: the next wake is a later step (counts), not now.
    expect((await workspace.alarmAt()) ?? Infinity).toBeGreaterThanOrEqual(clock.now() + 60_000);
  });

  it("a queue that refuses publishing loses nothing: the caller is answered at the commit, the event goes out once the queue works, once", async () => {
    const t = await createTenant();
    const workspace = testWorkspace(t.workspaceId);
    const restore = queueDown();
    // Answered once recorded: the obligation to announce it is committed with it.
    const [id] = await workspace.recordInbound(t.workspaceId, [inbound(t.numberId, 1, { text: "hello" })]);
    await refused();
    expect(await workspace.owedEvents()).toEqual([{ id, from_change: 0 }]);
    restore();
    const queued = queuedEvents();
    clock.set(Date.now() + 60_000); // past the publisher's back-off (waitFor moved the fake clock too)
    expect(await runDurableObjectAlarm(workspace)).toBe(true);
    await vi.waitFor(() => expect(queued().map(subjectOf)).toEqual([id]), { timeout: 5_000, interval: 10 });
    expect(await workspace.owedEvents()).toEqual([]);
  });
});

describe("each alarm step is isolated", () => {
  it("publishing that keeps failing never stops the delivery log's purge; the event goes out once the queue works", async () => {
    const t = await createTenant();
    const workspace = testWorkspace(t.workspaceId);
    const day = utcDay(clock.now());
    const messageId = newUuidV7(clock.now());
    await workspace.recordDeliveries([
      {
        eventId: eventIdOf(messageId, "sent"),
        eventType: "message.status",
        channelNumberId: t.numberId,
        subject: messageId,
        webhookId: crypto.randomUUID(),
        attempt: 1,
        attemptedAt: clock.now(),
        outcome: "delivered",
        statusCode: 200,
        latencyMs: 12,
        error: null,
        nextRetryAt: null,
      },
    ]);
    expect(await workspace.tableNames()).toContain(`d_${day}`);

    const restore = queueDown();
    const recording = workspace.recordInbound(t.workspaceId, [inbound(t.numberId, 1, { text: "hello" })]);
    await refused();
    const failures = vi.mocked(env.WEBHOOK_QUEUE.send).mock.calls.length;
    clock.set((day + 1) * DAY_MS + KEEP_DELIVERIES_MS + 60_000);
    expect(await runDurableObjectAlarm(workspace)).toBe(true);
    // Publishing was tried again in that run, and failed again; the purge ran all the same.
    expect(vi.mocked(env.WEBHOOK_QUEUE.send).mock.calls.length).toBeGreaterThan(failures);
    expect(await workspace.tableNames()).not.toContain(`d_${day}`);

    restore();
    const queued = queuedEvents();
    clock.set(Date.now() + 60_000); // past any back-off
    expect(await runDurableObjectAlarm(workspace)).toBe(true);
    const [id] = await recording;
    expect(queued().map(subjectOf)).toEqual([id]);
  });

  it("a number whose housekeeping step keeps failing still sends at its full pace", async () => {
    const { key, number, calls, stub } = await liveNumberAcceptingAll();
    // A number that keeps a table (a contact wrote to it), with leftover storage that cannot be
    // read: a sandbox reports table of another layout. Its step throws on every alarm.
    await stub.noteInbound(number.numberId, [{ from: "5511977776666", at: clock.now() }]);
    await stub.plantUnreadableTable("sandbox_reports");
    const warnings = vi.spyOn(console, "warn");
    for (let i = 0; i < 6; i++) {
      expect((await send(key, `k${i}`, textMessage(number.numberId, `m${i}`, `551100000000${i}`))).status).toBe(201);
      clock.advance(500);
    }
    const started = clock.now();
    for (let i = 0; i < 40 && calls.length < 6; i++) {
      expect(await runDurableObjectAlarm(stub)).toBe(true);
      clock.advance(100);
    }
    expect(calls).toHaveLength(6);
    // One call per 505 ms (two per 1010 ms): six calls within five spacings (the test's alarms run every 100 ms).
    expect(calls.at(-1)!.at - started).toBeLessThanOrEqual(5 * (PACE_SPACING_MS + 100));
    expect(
      warnings.mock.calls.some(
        ([line]) => String(line).includes("scheduled step") && String(line).includes("sandbox-reports"),
      ),
    ).toBe(true);
  });
});

describe("a step that cannot progress", () => {
  it("is never due in the past again: the alarm is set for after its back-off, which grows, and it does not run before", async () => {
    const t = await createTenant();
    await runInDurableObject(workspaceStub(env, t.workspaceId), async (_, state) => {
      let runs = 0;
      // Due since long ago, and waiting on something outside itself every time it runs.
      const scheduler = new Scheduler(state.storage, [
        {
          name: "waits",
          due: () => 0,
          run: async () => {
            runs++;
            return NO_PROGRESS;
          },
        },
      ]);
      await scheduler.runDue();
      expect(runs).toBe(1);
      const first = (await state.storage.getAlarm())! - clock.now();
      expect(first).toBeGreaterThan(0);
      // Run again at once (another step's alarm): it is held, not run.
      await scheduler.runDue();
      expect(runs).toBe(1);
      const delays: number[] = [first];
      for (let i = 0; i < 12; i++) {
        clock.set((await state.storage.getAlarm())!);
        await scheduler.runDue();
        delays.push((await state.storage.getAlarm())! - clock.now());
      }
      expect(runs).toBe(13);
      expect(delays.every((d) => d > 0)).toBe(true);
      expect(delays[5]!).toBeGreaterThan(delays[0]! * 4);
      expect(Math.max(...delays)).toBeLessThanOrEqual(IDLE_BACKOFF_MAX_MS * 1.2);
    });
  });
});

describe("the pace at the operator", () => {
  it("a claim slower than the pace's margin does not bring three calls within one second at the operator", async () => {
    const { workspaceId, key, number, calls, stub } = await liveNumberAcceptingAll();
    for (let i = 0; i < 3; i++) {
      expect(
        (await send(key, `slow-commit-${i}`, textMessage(number.numberId, `m${i}`, `551100000001${i}`))).status,
      ).toBe(201);
      clock.advance(500);
    }
    // The first claim's commit in the workspace takes 300 ms: the call may leave only once it is granted.
    await onNextCommit(testWorkspace(workspaceId), () => clock.advance(300));
    for (let i = 0; i < 60 && calls.length < 3; i++) {
      await runDurableObjectAlarm(stub);
      clock.advance(50);
    }
    expect(calls).toHaveLength(3);
    expect(calls[2]!.at - calls[0]!.at).toBeGreaterThanOrEqual(PACE_WINDOW_MS);
  });
});

describe("alarms are never lost", () => {
  it("a number that keeps tables and whose alarm is missing re-arms it when it starts, and sends what it had", async () => {
    const { key, number, calls, stub } = await liveNumberAcceptingAll();
    await stub.noteInbound(number.numberId, [{ from: "5511977776666", at: clock.now() }]);
    const res = await send(key, "re-arm", textMessage(number.numberId));
    expect(res.status).toBe(201);
    await stub.clearAlarm();
    await evictDurableObject(stub);
    // Any request starts it again.
    expect(await testNumber(number.numberId).tableNames()).toContain("contacts");
    expect(await stub.alarmAt()).not.toBeNull();
    clock.advance(1_000);
    for (let i = 0; i < 5 && calls.length === 0; i++) {
      await runDurableObjectAlarm(stub);
      clock.advance(600);
    }
    expect(calls).toHaveLength(1);
  });

  it("a number without tables restarted with its alarm set rebuilds its queue from the workspace and sends it", async () => {
    const { key, number, calls, stub } = await liveNumberAcceptingAll();
    const { jobId } = await json<{ jobId: string }>(await send(key, "restart", textMessage(number.numberId)));
    expect(await testNumber(number.numberId).tableNames()).toEqual([]);
    await evictDurableObject(stub);
    clock.advance(1_000);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    for (let i = 0; i < 5 && calls.length === 0; i++) {
      await runDurableObjectAlarm(stub);
      clock.advance(600);
    }
    expect(calls.map((c) => c.body.biz_opaque_callback_data)).toEqual([jobId]);
    expect(await json(await api(`/messages/${jobId}`, key))).toMatchObject({ status: "sent" });
  });
});

describe("the webhook consumer", () => {
  it("an empty batch writes nothing to D1", async () => {
    const batchSpy = vi.spyOn(env.DB, "batch");
    const batch = createMessageBatch("webhook-deliveries", []);
    const ctx = createExecutionContext();
    await worker.queue(batch, env, ctx);
    await getQueueResult(batch, ctx);
    expect(batchSpy).not.toHaveBeenCalled();
  });
});
