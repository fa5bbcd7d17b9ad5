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
import { ndjsonText } from "../helpers/ndjson";
import { api, call, json } from "../helpers/http";
import {
  createKey,
  createTenant,
  createWorkspace,
  TEST_CONTACT,
  TEST_CONTACT_2,
  type Tenant,
} from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { accepted, liveNumberTenant, connectLiveNumber, mockOperator } from "../helpers/operator";
import { postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { eventOfMessage, queuedEvents, statusEventsOf } from "../helpers/events";
import { crashObject, testWorkspace } from "../helpers/objects";
import { expectRuntimeLog } from "../helpers/runtime-log";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { HOT_WINDOW_MS } from "../../src/durable-objects/workspace/history-tiering";
import { INDEX_MIN_RECORDS, SLOT_MS, slotOf, slotTable } from "../../src/durable-objects/workspace/day-tables";
import type { SendCommand } from "../../src/messages/send";
import { RETENTION_SLACK_MS } from "../../src/durable-objects/shared/scheduler";
import { DAY_MS, newUuidV7, utcDay, uuidV7Time } from "../../src/lib/job-id";
import { eventIdOf, type WebhookEvent } from "../../src/messages/events";
import type { MessageHistoryDurableObject } from "../../src/durable-objects/history/history";
import { fakeClockPerTest } from "../helpers/clock";

// Removed with engine v2, what they proved being gone by design:
// - "the stranded-message check" (the workspace handing back messages missing from a number's
//   outbox): the number keeps no outbox; its queue is rebuilt from the workspace's work list;
// - "event retention" (an event the queue never took kept past the event log's age window): no
//   event is stored; one the queue refuses stays with its publisher, and its change with its
//   caller, until it leaves (engine/alarm-steps.test.ts, publisher.test.ts).

// A future clock: the objects' alarms never fire on their own, each step is run by the test.
const clock = fakeClockPerTest(Date.UTC(2047, 0, 1, 10), (t) => t + 100 * DAY_MS);
afterEach(() => vi.restoreAllMocks());

const workspaceOf = (t: { workspaceId: string }) => testWorkspace(t.workspaceId);

/** Runs the workspace's alarm `rounds` times (steps that re-arm until done get their rounds). */
async function workspaceAlarms(t: { workspaceId: string }, rounds = 6): Promise<void> {
  for (let i = 0; i < rounds; i++) await runDurableObjectAlarm(workspaceOf(t));
}

/** One send through the API, then the number's alarm sends it (the sandbox accepts it). */
async function sendOne(t: Tenant, body: string): Promise<string> {
  clock.advance(600);
  const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, body));
  expect(res.status).toBe(201);
  const { jobId } = await json<{ jobId: string }>(res);
  await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
  clock.advance(1_100);
  return jobId;
}

/** Polls `check` in real time, the test's fake clock standing still (vi.waitFor would move it). */
async function eventually(check: () => void, timeoutMs = 5_000): Promise<void> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    try {
      check();
      return;
    } catch (err) {
      if (performance.now() > until) throw err;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

const statusesOf = (events: WebhookEvent[], messageId: string) =>
  statusEventsOf(events, messageId).map((e) => (e.type === "message.status" ? e.data.status : null));

/**
 * The workspace is over its storage budget from now on (the operator lowers it per workspace):
 * its slots move to their day's history shard once past the hot window.
 */
const overStorageBudget = (t: { workspaceId: string }) => workspaceOf(t).setHotBytesBudget(0);

/** Past the hot window of the slot of `clock`'s time (whatever the object's size). */
const pastHotWindow = () =>
  clock.set((slotOf(clock.now()) + 1) * SLOT_MS + HOT_WINDOW_MS + RETENTION_SLACK_MS + 60_000);

/** Moves the slot of `clock`'s time to history: the object over its budget, past the hot window, its alarm run. */
async function moveNowToHistory(t: { workspaceId: string }): Promise<void> {
  await overStorageBudget(t);
  pastHotWindow();
  await workspaceAlarms(t, 3);
}

describe("publishing after a quiet day", () => {
  it("a new message's events are published at its changes, processing before sent, with no wait for an alarm", async () => {
    const t = await createTenant();
    await sendOne(t, "before the weekend");
    await workspaceAlarms(t, 1);
    // A day without any change; whatever the workspace had due runs.
    clock.advance(DAY_MS + 60_000);
    await workspaceAlarms(t, 2);

    const queued = queuedEvents();
    clock.advance(600);
    const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "monday morning"));
    const { jobId } = await json<{ jobId: string }>(res);
    // The number's claim and its answer: each change is published as it is committed (the suite's
    // EVENT_PUBLISH_DELAY_MS is 0), the fake clock standing still and no workspace alarm run.
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    await eventually(() => expect(statusesOf(queued(), jobId)).toEqual(["processing", "sent"]));
    // Their ids are derived from the message and the change: the same on every publication.
    expect(statusEventsOf(queued(), jobId).map((e) => e.id)).toEqual([
      eventIdOf(jobId, "processing"),
      eventIdOf(jobId, "sent"),
    ]);
  });
});

describe("late reports about a message already in history", () => {
  /** A message sent, then moved to its day's history shard. */
  async function messageInHistory(t: Tenant): Promise<string> {
    const jobId = await sendOne(t, "moved");
    await moveNowToHistory(t);
    expect(await workspaceOf(t).storedRecord(jobId)).toBeNull();
    expect(await workspaceOf(t).getMessage(jobId)).toMatchObject({ id: jobId, status: "sent" });
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
    at: clock.now(),
    status: "failed" as const,
    error: {
      code: "recipient_unreachable",
      message: "The recipient cannot receive messages.",
      retriable: false,
      upstreamCode: "131026",
    },
  });

  /** Failed messages counted on the day of the message's id (where a change of its status is counted). */
  const failedCount = async (t: Tenant, jobId: string) => {
    const day = utcDay(uuidV7Time(jobId)!);
    return (await workspaceOf(t).usageHistory(day * DAY_MS, (day + 1) * DAY_MS)).reduce((n, d) => n + d.failed, 0);
  };

  for (const afterCommit of [true, false]) {
    it(`a failure between recording the change and the shard's write (${afterCommit ? "after" : "before"} the shard committed): the retry announces and counts it exactly once`, async () => {
      const t = await createTenant();
      const jobId = await messageInHistory(t);
      expect(await failedCount(t, jobId)).toBe(0);
      const queued = queuedEvents();
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
      // The operator retries the report (it was not answered).
      expect(await workspaceOf(t).applyStatuses([failedReport(jobId)])).toEqual([{ known: true, status: "failed" }]);
      expect(await workspaceOf(t).applyStatuses([failedReport(jobId)])).toEqual([{ known: true, status: "failed" }]);
      const failed = statusEventsOf(queued(), jobId);
      expect(failed.map((e) => e.id)).toEqual([eventIdOf(jobId, "failed")]);
      expect(failed[0]).toEqual(await eventOfMessage(t.workspaceId, jobId, "failed"));
      expect(failed[0]).toMatchObject({ data: { previousStatus: "sent", status: "failed" } });
      expect(await failedCount(t, jobId)).toBe(1);
      expect(await workspaceOf(t).getMessage(jobId)).toMatchObject({
        status: "failed",
        error_code: "recipient_unreachable",
      });
    });
  }

  it("a crash between the shard's write and the event's publication: the next instance announces it, once, with no retry from the operator", async () => {
    const t = await liveNumberTenant();
    mockOperator(() => accepted("wamid.HIST1"));
    clock.advance(600);
    const { jobId } = await json<{ jobId: string }>(
      await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "moved")),
    );
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    vi.restoreAllMocks();
    expect(await workspaceOf(t).getMessage(jobId)).toMatchObject({ status: "sent" });
    await moveNowToHistory(t);
    expect(await workspaceOf(t).storedRecord(jobId)).toBeNull();
    const report = statusPayload(t.phoneNumberId, [
      {
        id: "wamid.HIST1",
        status: "failed",
        timestamp: seconds(clock.now()),
        biz_opaque_callback_data: jobId,
        errors: [{ code: 131026, title: "Message undeliverable." }],
      },
    ]);

    // The queue refuses: the report is applied in the shard, its event stays owed.
    const refuse = [
      vi.spyOn(env.WEBHOOK_QUEUE, "send").mockRejectedValue(new Error("queue unavailable")),
      vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockRejectedValue(new Error("queue unavailable")),
    ];
    const first = workspaceOf(t)
      .applyStatuses([
        {
          jobId,
          at: Math.floor(clock.now() / 1000) * 1000,
          status: "failed",
          upstreamMessageId: "wamid.HIST1",
          error: {
            code: "recipient_unreachable",
            message: "Message undeliverable.",
            retriable: false,
            upstreamCode: "131026",
          },
        },
      ])
      .then(
        () => "answered",
        (err: unknown) => err,
      );
    await vi.waitFor(async () => expect(await workspaceOf(t).getMessage(jobId)).toMatchObject({ status: "failed" }), {
      timeout: 5_000,
      interval: 20,
    });
    await vi.waitFor(() => expect(refuse[0]!.mock.settledResults.some((r) => r.type === "rejected")).toBe(true), {
      timeout: 5_000,
      interval: 20,
    });
    // The operator was answered at the commit; the object crashes before the event left.
    expect(await first).toBe("answered");
    const trace = await expectRuntimeLog(/crash before the event left/);
    await crashObject(workspaceStub(env, t.workspaceId), "crash before the event left");
    await trace.end();
    for (const spy of refuse) spy.mockRestore();

    // Nothing calls the object but its alarm (the backstop): the new instance finds the change owed
    // and announces it, read from the shard, with its id and content as of that change.
    const queued = queuedEvents();
    await workspaceOf(t).armAlarm();
    await runDurableObjectAlarm(workspaceOf(t));
    await eventually(() =>
      expect(statusEventsOf(queued(), jobId).map((e) => e.id)).toEqual([eventIdOf(jobId, "failed")]),
    );
    const [again] = statusEventsOf(queued(), jobId);
    expect(again).toEqual(await eventOfMessage(t.workspaceId, jobId, "failed"));
    expect(again).toMatchObject({ data: { previousStatus: "sent", status: "failed" } });
    // The operator's retry changes nothing and announces nothing more.
    expect((await postOperator(report)).status).toBe(200);
    expect(statusEventsOf(queued(), jobId)).toHaveLength(1);
  });
});

describe("inbound de-duplication", () => {
  it("an operator redelivery after the message moved to history records nothing new and announces nothing new", async () => {
    const workspaceId = await createWorkspace();
    const { key } = await createKey(workspaceId);
    const number = await connectLiveNumber(workspaceId);
    const t = { workspaceId };
    const item = {
      kind: "message",
      phoneNumberId: number.phoneNumberId,
      message: {
        from: "5511912345678",
        id: "wamid.REDELIVERED",
        timestamp: seconds(clock.now()),
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
    const queued = queuedEvents();
    const received = () => queued().filter((e) => e.type === "message.received");

    await deliver();
    const first = await inboundIds();
    expect(first).toHaveLength(1);
    expect(received().map((e) => e.id)).toEqual([eventIdOf(first[0]!, "received")]);

    // Two days later the record is in its day's shard; the operator (retrying for up to 7 days) delivers it again.
    await moveNowToHistory(t);
    expect(await workspaceOf(t).storedRecord(first[0]!)).toBeNull();
    await deliver();
    expect(await inboundIds()).toEqual(first);
    expect(received()).toHaveLength(1);
  });
});

describe("read marks and history", () => {
  it("a mark made before the move stays with the record; one after it is made at the operator on each call, kept nowhere", async () => {
    const t = await createTenant();
    const headers = { Authorization: `Bearer ${t.key}`, "Content-Type": "application/json" };
    const v2 = (path: string) => call(`/api/v2${path}`, { headers });
    const markRead = (id: string, body: unknown = {}) =>
      call(`/api/v2/messages/${id}/read`, { method: "POST", headers, body: JSON.stringify(body) });
    const inject = async (text: string) => {
      const res = await api("/sandbox/inbound", t.key, {
        method: "POST",
        json: { channelNumberId: t.numberId, from: "5511977776666", text: { body: text } },
      });
      return (await json<{ messageId: string }>(res)).messageId;
    };
    const [before, after] = [await inject("first"), await inject("second")];
    const marked = await json<{ readAt: string }>(await markRead(before, { typing: true }));

    await moveNowToHistory(t);
    expect(await workspaceOf(t).storedRecord(before)).toBeNull();
    expect(await json(await v2(`/messages/${before}`))).toMatchObject({ readAt: marked.readAt, typingIndicator: true });
    expect(await json(await markRead(before))).toEqual({
      messageId: before,
      ...marked,
      typingIndicator: true,
    });

    const first = await json<{ readAt: string }>(await markRead(after));
    clock.advance(1_000);
    const second = await json<{ readAt: string }>(await markRead(after));
    expect(Date.parse(second.readAt) - Date.parse(first.readAt)).toBe(1_000);
    expect(await json(await v2(`/messages/${after}`))).toMatchObject({ readAt: null, typingIndicator: false });
  });
});

describe("moving to history", () => {
  it("a message that changed while its chunk was on its way to the shard is listed once, as it is now", async () => {
    const t = await createTenant();
    const a = await sendOne(t, "changes meanwhile");
    const b = await sendOne(t, "unchanged");
    await overStorageBudget(t);
    pastHotWindow();

    // The shard's `putChunk` waits until a delivery report for `a` has changed its record here.
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
          if (prop !== "putChunk") return (...args: unknown[]) => Reflect.apply(value, target, args);
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
    expect(await workspaceOf(t).applyStatuses([{ jobId: a, at: clock.now(), deliveredAt: clock.now() }])).toEqual([
      { known: true, status: "sent" },
    ]);
    open();
    await alarm;
    vi.restoreAllMocks();
    await workspaceAlarms(t, 3);

    // Wherever it lives now, `a` is listed once, with its delivery.
    const listed = (await json<{ data: { id: string; deliveredAt: string | null }[] }>(await api("/messages", t.key)))
      .data;
    expect(listed.map((m) => m.id)).toEqual([b, a]);
    expect(listed.find((m) => m.id === a)!.deliveredAt).toBe(new Date(clock.now()).toISOString());
    expect(await workspaceOf(t).getMessage(a)).toMatchObject({ delivered_at: clock.now() });
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
    clock.advance(31 * DAY_MS + 60_000);
    await workspaceAlarms(t, 10);
    expect((await archiveLines(t, day)).map((l) => l.id)).toEqual(ids);
    expect(await workspaceOf(t).tableNames()).not.toContain(slotTable(slotOf(createdAt)));

    // A record of that day reaches a table of that day again (written late), then is archived.
    const late = newUuidV7(createdAt + 1_000);
    await workspaceOf(t).writeRecordToStorage({
      id: late,
      direction: "outbound",
      channel_number_id: t.numberId,
      recipient: "5511999998888",
      type: "text",
      body: "late",
      status: "queued",
      created_at: createdAt + 1_000,
      updated_at: createdAt + 1_000,
    });
    // The object learns of its tables when it starts.
    await evictDurableObject(workspaceStub(env, t.workspaceId));
    await workspaceOf(t).armAlarm();
    clock.advance(RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t, 10);
    const archives = await json<{ data: { day: string; messages: number }[] }>(await api("/message-archives", t.key));
    expect(archives.data).toMatchObject([{ day, messages: 3 }]);
    expect((await archiveLines(t, day)).map((l) => l.id)).toEqual([...ids, late]);
  });

  it("a day leaves when all of it is past the plan's window, not a day sooner (the plan changed meanwhile)", async () => {
    const t = await createTenant({ plan: "free" }); // 7 days
    const id = await sendOne(t, "kept 30 days");
    const day = utcDay(clock.now());
    // Upgraded to pro (30 days): the object still has the old window until it reloads its configuration.
    await env.DB.prepare("UPDATE workspaces SET plan_id = 'pro' WHERE id = ?").bind(t.workspaceId).run();

    clock.set((day + 1 + 30) * DAY_MS - 60_000);
    await workspaceAlarms(t, 6);
    expect((await json<{ data: unknown[] }>(await api("/message-archives", t.key))).data).toEqual([]);
    expect(await workspaceOf(t).getMessage(id)).toMatchObject({ id });

    // Retention steps run RETENTION_SLACK_MS after they are due (one run for what expired meanwhile).
    clock.set((day + 1 + 30) * DAY_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(t, 6);
    expect((await json<{ data: { day: string }[] }>(await api("/message-archives", t.key))).data).toMatchObject([
      { day: new Date(day * DAY_MS).toISOString().slice(0, 10) },
    ]);
    expect(await workspaceOf(t).getMessage(id)).toBeNull();
  });
});

describe("a slot table's indexes", () => {
  it("come with its INDEX_MIN_RECORDS-th record, in that insert's transaction: keys, the work list, lists by counterpart and by failure read the same on both sides, and after a restart", async () => {
    const t = await createTenant();
    const ws = workspaceStub(env, t.workspaceId);
    const slot = slotOf(clock.now());
    const command = (i: number, fingerprint = "f"): SendCommand => ({
      workspaceId: t.workspaceId,
      idempotencyKey: `k${i}`,
      fingerprint,
      request: { channelNumberId: t.numberId, to: i % 3 === 0 ? TEST_CONTACT_2 : TEST_CONTACT },
      content: { type: "text", body: `m${i}`, content: null, details: null },
    });
    const ids: string[] = [];
    const sendUpTo = async (n: number) => {
      while (ids.length < n) {
        // Past the number's 2-per-second window.
        clock.advance(500);
        const out = await ws.send(command(ids.length));
        if (out.kind !== "created") throw new Error(`send ${ids.length}: ${out.kind}`);
        ids.push(out.jobId);
      }
      expect(ids.map((id) => slotOf(uuidV7Time(id)!))).toEqual(ids.map(() => slot));
    };
    const indexes = () =>
      runInDurableObject(ws, (_, state) =>
        state.storage.sql
          .exec<{ name: string }>(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? ORDER BY name",
            slotTable(slot),
          )
          .toArray()
          .map((r) => r.name)
          .filter((name) => !name.startsWith("sqlite_autoindex")),
      );
    /** What every read that an index serves answers now. */
    const reads = async () => ({
      replay: await ws.send(command(1)),
      conflict: await ws.send(command(1, "other")),
      work: (await ws.workOf(t.numberId, "", 500)).map((w) => w.jobId),
      workAfter: (await ws.workOf(t.numberId, ids[10]!, 500)).map((w) => w.jobId),
      counterpart: (await ws.listMessages({ counterpart: TEST_CONTACT_2 }, null, 500)).rows.map((r) => r.id),
      failed: (await ws.listMessages({ status: "failed" }, null, 500)).rows.map((r) => r.id),
    });
    const expected = (n: number) => {
      const pending = ids.slice(0, n).filter((id) => id !== ids[2]);
      return {
        replay: { kind: "duplicate", jobId: ids[1] },
        conflict: { kind: "conflict", jobId: ids[1] },
        work: pending,
        workAfter: pending.filter((id) => id > ids[10]!),
        counterpart: ids
          .slice(0, n)
          .filter((_, i) => i % 3 === 0)
          .reverse(),
        failed: [ids[2]],
      };
    };

    await sendUpTo(3);
    // One record failed (claimed, and refused for good by the operator).
    expect(await ws.claim(ids[2]!, 1)).toMatchObject({ kind: "go" });
    await ws.answer([
      {
        jobId: ids[2]!,
        at: clock.now(),
        attempt: 1,
        status: "failed",
        error: { code: "recipient_unreachable", message: "unreachable", retriable: false, upstreamCode: "131026" },
      },
    ]);
    await sendUpTo(INDEX_MIN_RECORDS - 2);
    await evictDurableObject(ws);
    // One short of it after a restart: still none (the restarted object counts the table once).
    await sendUpTo(INDEX_MIN_RECORDS - 1);
    expect(await indexes()).toEqual([]);
    expect(await reads()).toEqual(expected(INDEX_MIN_RECORDS - 1));
    await sendUpTo(INDEX_MIN_RECORDS);
    expect(await indexes()).toEqual(["_failed", "_key", "_to", "_work"].map((i) => `${slotTable(slot)}${i}`));
    expect(await reads()).toEqual(expected(INDEX_MIN_RECORDS));
    await evictDurableObject(ws);
    expect(await reads()).toEqual(expected(INDEX_MIN_RECORDS));
  });
});
