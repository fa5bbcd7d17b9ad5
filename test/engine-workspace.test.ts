import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { json } from "./helpers/http";
import { createTenant, type Tenant } from "./helpers/fixtures";
import { send, textMessage } from "./helpers/send";
import { recordedEvents } from "./helpers/operator";
import { expectRuntimeLog } from "./helpers/runtime-log";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import { KEEP_EVENTS_MS, PUBLISH_CURSOR } from "../src/durable-objects/workspace/event-log";
import { HOT_WINDOW_MS } from "../src/durable-objects/workspace/workspace";
import { RETENTION_SLACK_MS } from "../src/durable-objects/shared/scheduler";
import { getMeta } from "../src/durable-objects/shared/meta";
import { DAY_MS, utcDay } from "../src/domain/job-id";
import type { WebhookEvent } from "../src/domain/events";
import type { MessageHistoryDurableObject } from "../src/durable-objects/history/history";

// A future clock: the objects' alarms never fire on their own, each step is run by the test.
let clock = Date.UTC(2047, 0, 1, 10);
const setClock = (ms: number) => {
  clock = ms;
  vi.setSystemTime(clock);
};
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  setClock(clock + 100 * DAY_MS);
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

const workspaceOf = (t: Tenant) => workspaceStub(env, t.workspaceId);

/** Runs the workspace's alarm `rounds` times (steps that re-arm until done get their rounds). */
async function workspaceAlarms(t: Tenant, rounds = 6): Promise<void> {
  for (let i = 0; i < rounds; i++) await runDurableObjectAlarm(workspaceOf(t));
}

/** One send through the API, then the number's alarm sends it (the sandbox accepts it). */
async function sendOne(t: Tenant, body: string): Promise<string> {
  setClock(clock + 600);
  const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, body));
  expect(res.status).toBe(201);
  const { jobId } = await json<{ jobId: string }>(res);
  await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
  setClock(clock + 1_100);
  return jobId;
}

const eventCount = (t: Tenant) =>
  runInDurableObject(workspaceOf(t), (_, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events").one().n);

/** The events handed to the webhook queue, in the order they were handed over. */
function publishedEvents() {
  const batch = vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch");
  const one = vi.spyOn(env.WEBHOOK_QUEUE, "send");
  return (): WebhookEvent[] =>
    [...batch.mock.invocationCallOrder.map((order, i) => ({ order, bodies: [...batch.mock.calls[i]![0]].map((m) => m.body) })),
     ...one.mock.invocationCallOrder.map((order, i) => ({ order, bodies: [one.mock.calls[i]![0]] }))]
      .sort((a, b) => a.order - b.order)
      .flatMap((c) => c.bodies.map((b) => (b as { event: WebhookEvent }).event));
}

const statusesOf = (events: WebhookEvent[], messageId: string) =>
  events.flatMap((e) => (e.type === "message.status" && e.data.messageId === messageId ? [e.data.status] : []));

describe("the event log's publishing order", () => {
  it("after a quiet day in which every event was purged, a new message's events are published at once, processing before sent", async () => {
    const t = await createTenant();
    const first = await sendOne(t, "before the weekend");
    await workspaceAlarms(t, 1);
    // The consumer reports on each (no webhook): they are settled, then purged after their window.
    await vi.waitFor(
      async () => expect(await runInDurableObject(workspaceOf(t), (_, state) =>
        state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events WHERE delivered_at IS NULL").one().n)).toBe(0),
      { timeout: 10_000, interval: 50 },
    );
    expect((await recordedEvents(workspaceOf(t), first)).length).toBeGreaterThanOrEqual(2);

    setClock(clock + KEEP_EVENTS_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t);
    expect(await eventCount(t)).toBe(0);
    const cursor = await runInDurableObject(workspaceOf(t), (_, state) => Number(getMeta(state.storage.sql, PUBLISH_CURSOR)));
    expect(cursor).toBeGreaterThanOrEqual(2);

    const published = publishedEvents();
    const second = await sendOne(t, "monday morning");
    // The publishing delay is 250 ms: one alarm a second later publishes both, in the order they happened.
    await workspaceAlarms(t, 1);
    expect(statusesOf(published(), second)).toEqual(["processing", "sent"]);
    // Their ids are derived from the message and the status: the same on every publication.
    const recorded = await recordedEvents(workspaceOf(t), second);
    expect(published().filter((e) => e.type === "message.status" && e.data.messageId === second).map((e) => e.id)).toEqual(recorded.map((e) => e.id));
  });
});

describe("late reports about a message already in history", () => {
  /** A message sent, then moved to its day's history shard. */
  async function messageInHistory(t: Tenant): Promise<string> {
    const jobId = await sendOne(t, "moved");
    setClock(clock + HOT_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t, 3);
    const hot = await runInDurableObject(workspaceOf(t), (_, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM messages").one().n);
    expect(hot).toBe(0);
    return jobId;
  }

  /**
   * The shard's `applyStatus`, as the workspace object reaches it, fails once: `afterCommit`
   * when the shard committed and its answer was lost, else before the shard did anything.
   */
  function shardWriteFailsOnce(afterCommit: boolean) {
    const get = env.HISTORY.get.bind(env.HISTORY);
    let failed = false;
    vi.spyOn(env.HISTORY, "get").mockImplementation((id) => {
      const stub = get(id);
      return new Proxy(stub, {
        get(target, prop) {
          const value: unknown = Reflect.get(target, prop);
          // A stub answers any name with an RPC method: call them on the stub itself.
          if (prop !== "applyStatus" || failed) return typeof value === "function" ? (...args: unknown[]) => Reflect.apply(value, target, args) : value;
          return async (...args: Parameters<MessageHistoryDurableObject["applyStatus"]>) => {
            failed = true;
            if (afterCommit) await target.applyStatus(...args);
            throw new Error("the shard's answer was lost");
          };
        },
      });
    });
  }

  const failedReport = (jobId: string) => ({
    jobId,
    at: clock,
    status: "failed" as const,
    error: { code: "recipient_unreachable", message: "The recipient cannot receive messages.", retriable: false, upstreamCode: "131026" },
  });

  const failedEventsAndCount = async (t: Tenant, jobId: string) => ({
    events: (await recordedEvents(workspaceOf(t), jobId)).filter((e) => e.type === "message.status" && e.data.status === "failed").length,
    failed: (await workspaceOf(t).usageHistory(utcDay(clock) * DAY_MS, (utcDay(clock) + 1) * DAY_MS)).reduce((n, d) => n + d.failed, 0),
  });

  for (const afterCommit of [true, false]) {
    it(`a failure between recording the change and the shard's write (${afterCommit ? "after" : "before"} the shard committed): the retry announces and counts it exactly once`, async () => {
      const t = await createTenant();
      const jobId = await messageInHistory(t);
      shardWriteFailsOnce(afterCommit);
      // The runtime reports the failed call: expected here, captured and checked.
      const trace = await expectRuntimeLog(/the shard's answer was lost/);
      const lost = await workspaceOf(t).applyStatuses([failedReport(jobId)]).then(() => null, (err: unknown) => err);
      expect(String(lost)).toMatch(/answer was lost/);
      await trace.seen();
      await trace.end();
      // The number relays the report again (its relay is at least once).
      expect(await workspaceOf(t).applyStatuses([failedReport(jobId)])).toEqual([{ known: true, status: "failed" }]);
      expect(await workspaceOf(t).applyStatuses([failedReport(jobId)])).toEqual([{ known: true, status: "failed" }]);
      expect(await failedEventsAndCount(t, jobId)).toEqual({ events: 1, failed: 1 });
      expect(await workspaceOf(t).getMessage(jobId)).toMatchObject({ status: "failed", error_code: "recipient_unreachable" });
    });
  }
});
