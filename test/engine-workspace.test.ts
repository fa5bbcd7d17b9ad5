import {
  createExecutionContext,
  createMessageBatch,
  getQueueResult,
  runDurableObjectAlarm,
  runInDurableObject,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import worker from "../src/index";
import { ndjsonText } from "./helpers/ndjson";
import { api, json } from "./helpers/http";
import { createKey, createTenant, createWorkspace, type Tenant } from "./helpers/fixtures";
import { send, textMessage } from "./helpers/send";
import { connectCloudNumber, recordedEvents } from "./helpers/operator";
import { seconds } from "./helpers/operator-webhook";
import { publishedEvent } from "./helpers/events";
import { expectRuntimeLog } from "./helpers/runtime-log";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import { KEEP_EVENTS_MS, PUBLISH_CURSOR } from "../src/durable-objects/workspace/event-log";
import { HOT_WINDOW_MS, STRANDED_AFTER_MS } from "../src/durable-objects/workspace/workspace";
import { RETENTION_SLACK_MS } from "../src/durable-objects/shared/scheduler";
import { getMeta } from "../src/durable-objects/shared/meta";
import { DAY_MS, newUuidV7, utcDay } from "../src/domain/job-id";
import { eventsOf, newEventId, type WebhookEvent, type WebhookQueueMessage } from "../src/domain/events";
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
  runInDurableObject(
    workspaceOf(t),
    (_, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events").one().n,
  );

/** The events handed to the webhook queue, in the order they were handed over. */
function publishedEvents() {
  const batch = vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch");
  const one = vi.spyOn(env.WEBHOOK_QUEUE, "send");
  return (): WebhookEvent[] =>
    [
      ...batch.mock.invocationCallOrder.map((order, i) => ({
        order,
        bodies: [...batch.mock.calls[i]![0]].map((m) => m.body),
      })),
      ...one.mock.invocationCallOrder.map((order, i) => ({ order, bodies: [one.mock.calls[i]![0]] })),
    ]
      .sort((a, b) => a.order - b.order)
      .flatMap((c) => c.bodies.flatMap((b) => eventsOf(b as WebhookQueueMessage)));
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
      async () =>
        expect(
          await runInDurableObject(
            workspaceOf(t),
            (_, state) =>
              state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events WHERE delivered_at IS NULL").one()
                .n,
          ),
        ).toBe(0),
      { timeout: 10_000, interval: 50 },
    );
    expect((await recordedEvents(workspaceOf(t), first)).length).toBeGreaterThanOrEqual(2);

    setClock(clock + KEEP_EVENTS_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t);
    expect(await eventCount(t)).toBe(0);
    const cursor = await runInDurableObject(workspaceOf(t), (_, state) =>
      Number(getMeta(state.storage.sql, PUBLISH_CURSOR)),
    );
    expect(cursor).toBeGreaterThanOrEqual(2);

    const published = publishedEvents();
    const second = await sendOne(t, "monday morning");
    // Within the publishing delay (1 s): one alarm a second later publishes both, in the order they happened.
    await workspaceAlarms(t, 1);
    expect(statusesOf(published(), second)).toEqual(["processing", "sent"]);
    // Their ids are derived from the message and the status: the same on every publication.
    const recorded = await recordedEvents(workspaceOf(t), second);
    expect(
      published()
        .filter((e) => e.type === "message.status" && e.data.messageId === second)
        .map((e) => e.id),
    ).toEqual(recorded.map((e) => e.id));
  });
});

describe("late reports about a message already in history", () => {
  /** A message sent, then moved to its day's history shard. */
  async function messageInHistory(t: Tenant): Promise<string> {
    const jobId = await sendOne(t, "moved");
    setClock(clock + HOT_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t, 3);
    const hot = await runInDurableObject(
      workspaceOf(t),
      (_, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM messages").one().n,
    );
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
          if (prop !== "applyStatus" || failed)
            return typeof value === "function" ? (...args: unknown[]) => Reflect.apply(value, target, args) : value;
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
    error: {
      code: "recipient_unreachable",
      message: "The recipient cannot receive messages.",
      retriable: false,
      upstreamCode: "131026",
    },
  });

  const failedEventsAndCount = async (t: Tenant, jobId: string) => ({
    events: (await recordedEvents(workspaceOf(t), jobId)).filter(
      (e) => e.type === "message.status" && e.data.status === "failed",
    ).length,
    failed: (await workspaceOf(t).usageHistory(utcDay(clock) * DAY_MS, (utcDay(clock) + 1) * DAY_MS)).reduce(
      (n, d) => n + d.failed,
      0,
    ),
  });

  for (const afterCommit of [true, false]) {
    it(`a failure between recording the change and the shard's write (${afterCommit ? "after" : "before"} the shard committed): the retry announces and counts it exactly once`, async () => {
      const t = await createTenant();
      const jobId = await messageInHistory(t);
      shardWriteFailsOnce(afterCommit);
      // The runtime reports the failed call: expected here, captured and checked.
      const trace = await expectRuntimeLog(/the shard's answer was lost/);
      const lost = await workspaceOf(t)
        .applyStatuses([failedReport(jobId)])
        .then(
          () => null,
          (err: unknown) => err,
        );
      expect(String(lost)).toMatch(/answer was lost/);
      await trace.seen();
      await trace.end();
      // The number relays the report again (its relay is at least once).
      expect(await workspaceOf(t).applyStatuses([failedReport(jobId)])).toEqual([{ known: true, status: "failed" }]);
      expect(await workspaceOf(t).applyStatuses([failedReport(jobId)])).toEqual([{ known: true, status: "failed" }]);
      expect(await failedEventsAndCount(t, jobId)).toEqual({ events: 1, failed: 1 });
      expect(await workspaceOf(t).getMessage(jobId)).toMatchObject({
        status: "failed",
        error_code: "recipient_unreachable",
      });
    });
  }
});

describe("the stranded-message check", () => {
  it("reaches stranded messages behind more than a page of messages legitimately waiting in their outbox", async () => {
    const t = await createTenant();
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) {
      setClock(clock + 600);
      const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, `backlog ${i}`));
      expect(res.status).toBe(201);
      ids.push((await json<{ jobId: string }>(res)).jobId);
    }
    // The number has not drained yet (its alarm is not run): the oldest 50 wait in its outbox;
    // the newest 10 are not there (their entries were lost).
    const number = channelNumberStub(env, t.numberId);
    await runInDurableObject(number, (_, state) => {
      for (const id of ids.slice(50)) state.storage.sql.exec("DELETE FROM outbox WHERE job_id = ?", id);
    });
    expect((await number.outboxJobIds()).sort()).toEqual(ids.slice(0, 50).sort());

    setClock(clock + STRANDED_AFTER_MS + 1_000);
    await workspaceAlarms(t, 1);
    expect((await number.outboxJobIds()).sort()).toEqual([...ids].sort());
  });
});

describe("inbound de-duplication", () => {
  it("an operator redelivery after the message moved to history records nothing new", async () => {
    const workspaceId = await createWorkspace();
    const { key } = await createKey(workspaceId);
    const number = await connectCloudNumber(workspaceId);
    const t = { workspaceId, key, keyId: "", numberId: number.numberId };
    const item = {
      kind: "message",
      phoneNumberId: number.phoneNumberId,
      message: {
        from: "5511912345678",
        id: "wamid.REDELIVERED",
        timestamp: seconds(clock),
        type: "text",
        text: { body: "Oi" },
      },
    };
    /** The operator's webhook item, through the Worker's queue handler. */
    const deliver = async () => {
      const batch = createMessageBatch("upstream-events", [
        { id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body: item },
      ]);
      const ctx = createExecutionContext();
      await worker.queue(batch, env, ctx);
      expect(await getQueueResult(batch, ctx)).toMatchObject({
        explicitAcks: [batch.messages[0]!.id],
        retryMessages: [],
      });
    };
    const inboundIds = async () =>
      (await json<{ data: { id: string }[] }>(await api("/messages?direction=inbound", key))).data.map((m) => m.id);
    const receivedEvents = () =>
      runInDurableObject(
        workspaceStub(env, workspaceId),
        (_, state) =>
          state.storage.sql
            .exec<{ n: number }>("SELECT COUNT(*) AS n FROM events WHERE type = 'message.received'")
            .one().n,
      );

    await deliver();
    const first = await inboundIds();
    expect(first).toHaveLength(1);
    expect(await receivedEvents()).toBe(1);

    // Two days later the record is in its day's shard; the operator (retrying for up to 7 days) delivers it again.
    setClock(clock + HOT_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t, 3);
    expect(
      await runInDurableObject(
        workspaceStub(env, workspaceId),
        (_, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM messages").one().n,
      ),
    ).toBe(0);
    await deliver();
    expect(await inboundIds()).toEqual(first);
    expect(await receivedEvents()).toBe(1);
  });
});

describe("moving to history", () => {
  it("a message that changed while its move was under way is listed once, as it is now", async () => {
    const t = await createTenant();
    const a = await sendOne(t, "changes meanwhile");
    const b = await sendOne(t, "unchanged");
    setClock(clock + HOT_WINDOW_MS + RETENTION_SLACK_MS + 60_000);

    // The shard's `put` waits until a delivery report for `a` has changed its hot row.
    const get = env.HISTORY.get.bind(env.HISTORY);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let reached!: () => void;
    const putReached = new Promise<void>((resolve) => (reached = resolve));
    vi.spyOn(env.HISTORY, "get").mockImplementation((id) => {
      const stub = get(id);
      return new Proxy(stub, {
        get(target, prop) {
          const value: unknown = Reflect.get(target, prop);
          if (typeof value !== "function") return value;
          if (prop !== "put") return (...args: unknown[]) => Reflect.apply(value, target, args);
          return async (...args: unknown[]) => {
            reached();
            await gate;
            return Reflect.apply(value, target, args);
          };
        },
      });
    });
    const alarm = runDurableObjectAlarm(workspaceOf(t));
    await putReached;
    expect(await workspaceOf(t).applyStatuses([{ jobId: a, at: clock, deliveredAt: clock }])).toEqual([
      { known: true, status: "sent" },
    ]);
    open();
    await alarm;

    // `a` stayed hot (changed meanwhile) and its stale copy is in the shard: listed once, from here.
    const listed = (await json<{ data: { id: string; deliveredAt: string | null }[] }>(await api("/messages", t.key)))
      .data;
    expect(listed.map((m) => m.id).sort()).toEqual([a, b].sort());
    expect(listed.find((m) => m.id === a)!.deliveredAt).toBe(new Date(clock).toISOString());
    // The next move takes the changed row over; it is still listed once.
    vi.restoreAllMocks();
    await workspaceAlarms(t, 2);
    expect((await json<{ data: { id: string }[] }>(await api("/messages", t.key))).data.map((m) => m.id)).toEqual([
      b,
      a,
    ]);
  });
});

describe("archives", () => {
  const archiveLines = async (t: Tenant, day: string) =>
    (await ndjsonText(await api(`/message-archives/${day}`, t.key)))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { id: string });

  it("a day re-created after it was archived adds parts after the archived ones: nothing archived is overwritten", async () => {
    const t = await createTenant(); // pro: 30 days
    const ids = [await sendOne(t, "one"), await sendOne(t, "two")];
    const createdAt = Date.parse(
      String((await json<{ createdAt: string }>(await api(`/messages/${ids[0]}`, t.key))).createdAt),
    );
    const day = new Date(createdAt).toISOString().slice(0, 10);
    setClock(clock + 31 * DAY_MS + 60_000);
    await workspaceAlarms(t, 10);
    expect((await archiveLines(t, day)).map((l) => l.id)).toEqual(ids);

    // A record of that day reaches the hot table again (moved late), then moves and is archived.
    const late = newUuidV7(createdAt + 1_000);
    await runInDurableObject(workspaceOf(t), (_, state) => {
      state.storage.sql.exec(
        `INSERT INTO messages (id, direction, channel_number_id, recipient, type, body, status, created_at, updated_at, version, copy_pending)
         VALUES (?, 'outbound', ?, '5511999998888', 'text', 'late', 'queued', ?, ?, 1, 0)`,
        late,
        t.numberId,
        createdAt + 1_000,
        createdAt + 1_000,
      );
      return state.storage.setAlarm(Date.now());
    });
    setClock(clock + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t, 10);
    const archives = await json<{ data: { day: string; messages: number }[] }>(await api("/message-archives", t.key));
    expect(archives.data).toMatchObject([{ day, messages: 3 }]);
    expect((await archiveLines(t, day)).map((l) => l.id)).toEqual([...ids, late]);
  });

  it("a day leaves history when all of it is past the plan's window, not a day sooner (the plan changed meanwhile)", async () => {
    const t = await createTenant({ plan: "free" }); // 7 days
    const id = await sendOne(t, "kept 30 days");
    const day = utcDay(clock);
    // Upgraded to pro (30 days): the object still has the old window until it reloads its configuration.
    await env.DB.prepare("UPDATE workspaces SET plan_id = 'pro' WHERE id = ?").bind(t.workspaceId).run();

    setClock((day + 1 + 30) * DAY_MS - 60_000);
    await workspaceAlarms(t, 6);
    expect((await json<{ data: unknown[] }>(await api("/message-archives", t.key))).data).toEqual([]);
    expect(await workspaceOf(t).getMessage(id)).toMatchObject({ id });

    setClock((day + 1 + 30) * DAY_MS + 60_000);
    await workspaceAlarms(t, 6);
    expect((await json<{ data: { day: string }[] }>(await api("/message-archives", t.key))).data).toMatchObject([
      { day: new Date(day * DAY_MS).toISOString().slice(0, 10) },
    ]);
    expect(await workspaceOf(t).getMessage(id)).toBeNull();
  });
});

describe("event retention", () => {
  it("an event the queue never took is kept past the age window, and published once the queue works", async () => {
    const t = await createTenant();
    // One event published and never reported on: the age purge is due 3 days after it.
    const early: WebhookEvent = {
      id: newEventId(),
      type: "webhook.test",
      workspaceId: t.workspaceId,
      channelNumberId: t.numberId,
      createdAt: new Date(clock).toISOString(),
      data: { message: "published" },
    };
    await publishedEvent(early);
    vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockRejectedValue(new Error("queue unavailable"));
    vi.spyOn(env.WEBHOOK_QUEUE, "send").mockRejectedValue(new Error("queue unavailable"));
    const [stuck] = await workspaceOf(t).recordInbound(t.workspaceId, [
      {
        channelNumberId: t.numberId,
        upstreamMessageId: `wamid.${crypto.randomUUID()}`,
        from: "5511977776666",
        type: "text",
        text: "hello",
        content: null,
        at: clock,
      },
    ]);
    setClock(clock + 1_000);
    await workspaceAlarms(t, 1);

    setClock(clock + KEEP_EVENTS_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t, 2);
    const left = await runInDurableObject(workspaceOf(t), (_, state) =>
      state.storage.sql
        .exec<{ id: string; subject: string }>("SELECT id, subject FROM events")
        .toArray()
        .map((r) => r.subject),
    );
    expect(left).toEqual([stuck]);

    vi.restoreAllMocks();
    const published = publishedEvents();
    setClock(clock + 61_000); // past the failing step's back-off
    await workspaceAlarms(t, 1);
    expect(new Set(published().map((e) => (e.type === "message.received" ? e.data.messageId : e.id)))).toEqual(
      new Set([stuck]),
    );
  });
});
