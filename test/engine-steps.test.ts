import {
  createExecutionContext,
  createMessageBatch,
  evictDurableObject,
  getQueueResult,
  runDurableObjectAlarm,
  runInDurableObject,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import worker from "../src/index";
import { api, json } from "./helpers/http";
import { createKey, createTenant, createWorkspace } from "./helpers/fixtures";
import { send, textMessage } from "./helpers/send";
import { accepted, connectCloudNumber, mockOperator } from "./helpers/operator";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import { findEvent, hasUnpublishedEvents } from "../src/durable-objects/workspace/event-log";
import { IDEMPOTENCY_TTL_MS } from "../src/durable-objects/workspace/idempotency-keys";
import { STRANDED_AFTER_MS } from "../src/durable-objects/workspace/workspace";
import { PACE_SPACING_MS, PACE_WINDOW_MS } from "../src/durable-objects/channel-number/delivery-policy";
import { RETENTION_SLACK_MS } from "../src/durable-objects/shared/scheduler";
import type { InboundRecord } from "../src/durable-objects/workspace/contract";
import { eventsOf, type WebhookQueueMessage } from "../src/domain/events";

let clock = Date.UTC(2042, 6, 1);
const setClock = (ms: number) => {
  clock = ms;
  vi.setSystemTime(clock);
};
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  setClock(clock + 10 * 24 * 3_600_000);
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

/** A live number whose operator accepts every call (recorded in `calls`), and its object. */
async function cloudNumberAcceptingAll() {
  const workspaceId = await createWorkspace();
  const { key } = await createKey(workspaceId);
  const number = await connectCloudNumber(workspaceId);
  const calls = mockOperator((c) => accepted(`wamid.${c.body.text.body}`));
  return { key, number, calls, stub: channelNumberStub(env, number.numberId) };
}

const inbound = (channelNumberId: string, i: number, over: Partial<InboundRecord> = {}): InboundRecord => ({
  channelNumberId,
  upstreamMessageId: `wamid.IN-${i}-${crypto.randomUUID()}`,
  from: "5511977776666",
  type: "text",
  text: "😀".repeat(4_096),
  content: null,
  at: clock,
  ...over,
});

const unpublished = (workspaceId: string) =>
  runInDurableObject(workspaceStub(env, workspaceId), (_, state) => hasUnpublishedEvents(state.storage.sql));

describe("event publishing within the queue's limits", () => {
  it("100 events of 16 KB each are published in packs of several, each within one billed 64 KB unit, all of them, in one alarm", async () => {
    const t = await createTenant();
    const send = vi.spyOn(env.WEBHOOK_QUEUE, "send");
    await workspaceStub(env, t.workspaceId).recordInbound(
      t.workspaceId,
      Array.from({ length: 100 }, (_, i) => inbound(t.numberId, i)),
    );
    expect(await unpublished(t.workspaceId)).toBe(true);
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    expect(await unpublished(t.workspaceId)).toBe(false);
    const bodies = send.mock.calls.map(([body]) => body as WebhookQueueMessage);
    expect(bodies.flatMap(eventsOf)).toHaveLength(100);
    expect(bodies.length).toBeLessThanOrEqual(34); // three 16 KB events to a pack
    expect(Math.max(...bodies.map((b) => new TextEncoder().encode(JSON.stringify(b)).byteLength))).toBeLessThanOrEqual(
      64 * 1024,
    );
  });

  it("an event that can never be sent is set aside and reported; the events after it go out", async () => {
    const t = await createTenant();
    const errors = vi.spyOn(console, "error");
    const workspace = workspaceStub(env, t.workspaceId);
    const [before, poison, after] = await workspace.recordInbound(t.workspaceId, [
      inbound(t.numberId, 1, { text: "before" }),
      inbound(t.numberId, 2, { type: "document", text: null, content: { blob: "x".repeat(130 * 1024) } }),
      inbound(t.numberId, 3, { text: "after" }),
    ]);
    await runDurableObjectAlarm(workspace);
    expect(await unpublished(t.workspaceId)).toBe(false);
    const states = await runInDurableObject(workspace, (_, state) =>
      [before, poison, after].map(
        (id) =>
          state.storage.sql.exec<{ delivery: string }>("SELECT delivery FROM events WHERE subject = ?", id!).one()
            .delivery,
      ),
    );
    expect(states).toEqual(["pending", "set_aside", "pending"]);
    expect(errors.mock.calls.some(([line]) => String(line).includes("event set aside"))).toBe(true);
    // Nothing keeps the alarm busy for it: the next wake is a later step (counts, report deadline), not now.
    const alarm = await runInDurableObject(workspace, (_, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThanOrEqual(clock + 60_000);
  });

  it("a queue that refuses publishing loses nothing: events stay unpublished, then go out once when it works", async () => {
    const t = await createTenant();
    const workspace = workspaceStub(env, t.workspaceId);
    const [id] = await workspace.recordInbound(t.workspaceId, [inbound(t.numberId, 1, { text: "hello" })]);
    const sendBatch = vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockRejectedValue(new Error("queue unavailable"));
    const sendOne = vi.spyOn(env.WEBHOOK_QUEUE, "send").mockRejectedValue(new Error("queue unavailable"));
    await runDurableObjectAlarm(workspace);
    expect(await unpublished(t.workspaceId)).toBe(true);
    sendBatch.mockRestore();
    sendOne.mockRestore();
    const published = vi.spyOn(env.WEBHOOK_QUEUE, "send");
    setClock(clock + 61_000); // past the failing step's back-off
    await runDurableObjectAlarm(workspace);
    expect(await unpublished(t.workspaceId)).toBe(false);
    expect(
      published.mock.calls
        .flatMap(([body]) => eventsOf(body as WebhookQueueMessage))
        .map((e) => (e.data as { messageId: string }).messageId),
    ).toEqual([id]);
  });
});

describe("each alarm step is isolated", () => {
  it("a failing publish never stops the stranded-message check or the key purge", async () => {
    const workspaceId = await createWorkspace();
    const { key } = await createKey(workspaceId);
    const number = await connectCloudNumber(workspaceId);
    const calls = mockOperator(() => accepted("wamid.RESCUED"));
    const res = await send(key, "old-key", textMessage(number.numberId));
    const { jobId } = await json<{ jobId: string }>(res);
    await runInDurableObject(channelNumberStub(env, number.numberId), (_, state) => {
      state.storage.sql.exec("DELETE FROM outbox");
    });
    const workspace = workspaceStub(env, workspaceId);
    await workspace.recordInbound(workspaceId, [inbound(number.numberId, 1)]);
    vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockRejectedValue(new Error("queue unavailable"));
    vi.spyOn(env.WEBHOOK_QUEUE, "send").mockRejectedValue(new Error("queue unavailable"));

    setClock(clock + Math.max(STRANDED_AFTER_MS, IDEMPOTENCY_TTL_MS) + RETENTION_SLACK_MS + 1_000);
    await runDurableObjectAlarm(workspace);
    // The stranded message went back to its outbox and the expired key was purged, while publishing failed.
    expect(await channelNumberStub(env, number.numberId).outboxJobIds()).toEqual([jobId]);
    const keys = await runInDurableObject(
      workspace,
      (_, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM idempotency_keys").one().n,
    );
    expect(keys).toBe(0);
    expect(await unpublished(workspaceId)).toBe(true);
    // Handed back a day after its acceptance (the clock jumped past the key's 24 hours; in production
    // the check runs every few minutes), it is past its number's bound for held messages: it fails
    // with held_too_long instead of leaving a day late.
    await runDurableObjectAlarm(channelNumberStub(env, number.numberId));
    expect(calls).toHaveLength(0);
    expect(await json(await api(`/messages/${jobId}`, key))).toMatchObject({
      status: "failed",
      error: { code: "held_too_long" },
    });
  });

  it("expired keys gather: none is purged before the oldest one's slack ends, then one run purges every key expired by then", async () => {
    const t = await createTenant();
    const workspace = workspaceStub(env, t.workspaceId);
    const first = clock;
    for (let i = 0; i < 3; i++) {
      setClock(first + i * 60_000);
      expect((await send(t.key, crypto.randomUUID(), textMessage(t.numberId, `m${i}`))).status).toBe(201);
    }
    const keys = () =>
      runInDurableObject(
        workspace,
        (_, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM idempotency_keys").one().n,
      );
    // Past every key's expiry but within the first one's slack, nothing is purged yet.
    setClock(first + IDEMPOTENCY_TTL_MS + RETENTION_SLACK_MS - 1_000);
    await runDurableObjectAlarm(workspace);
    expect(await keys()).toBe(3);
    // At the end of the slack one run purges all three.
    setClock(first + IDEMPOTENCY_TTL_MS + RETENTION_SLACK_MS);
    await runDurableObjectAlarm(workspace);
    expect(await keys()).toBe(0);
  });

  it("a number whose housekeeping step keeps failing still sends at its full pace", async () => {
    const { key, number, calls, stub } = await cloudNumberAcceptingAll();
    // Leftover storage of an older release that cannot be read: its step throws on every alarm.
    await runInDurableObject(stub, (_, state) => {
      state.storage.sql.exec("CREATE TABLE events (id TEXT)");
    });
    for (let i = 0; i < 6; i++) {
      expect((await send(key, `k${i}`, textMessage(number.numberId, `m${i}`, `551100000000${i}`))).status).toBe(201);
      setClock(clock + 500);
    }
    const started = clock;
    for (let i = 0; i < 40 && calls.length < 6; i++) {
      await runDurableObjectAlarm(stub);
      setClock(clock + 100);
    }
    expect(calls).toHaveLength(6);
    // One call per 505 ms (two per 1010 ms): six calls within five spacings (the test's alarms run every 100 ms).
    expect(calls.at(-1)!.at - started).toBeLessThanOrEqual(5 * (PACE_SPACING_MS + 100));
  });
});

describe("the pace at the operator", () => {
  it("a commit slower than the pace's margin does not bring three calls within one second at the operator", async () => {
    const { key, number, calls, stub } = await cloudNumberAcceptingAll();
    for (let i = 0; i < 3; i++) {
      expect(
        (await send(key, `slow-commit-${i}`, textMessage(number.numberId, `m${i}`, `551100000001${i}`))).status,
      ).toBe(201);
      setClock(clock + 500);
    }
    // The first call's commit takes 300 ms: its request leaves (output gate) only once it is durable.
    await runInDurableObject(stub, (_, state) => {
      const transactionSync = state.storage.transactionSync.bind(state.storage);
      let slow = true;
      state.storage.transactionSync = <T>(fn: () => T): T => {
        const result = transactionSync(fn);
        if (slow) {
          slow = false;
          setClock(clock + 300);
        }
        return result;
      };
    });
    for (let i = 0; i < 60 && calls.length < 3; i++) {
      await runDurableObjectAlarm(stub);
      setClock(clock + 50);
    }
    expect(calls).toHaveLength(3);
    expect(calls[2]!.at - calls[0]!.at).toBeGreaterThanOrEqual(PACE_WINDOW_MS);
  });
});

describe("alarms are never lost", () => {
  it("an object whose alarm is missing re-arms it from its own state when it starts", async () => {
    const t = await createTenant();
    const res = await send(t.key, "re-arm", textMessage(t.numberId));
    expect(res.status).toBe(201);
    const stub = channelNumberStub(env, t.numberId);
    await runInDurableObject(stub, async (_, state) => {
      await state.storage.deleteAlarm();
    });
    await evictDurableObject(stub);
    // Any request starts it again.
    await stub.outboxJobIds();
    const alarm = await runInDurableObject(stub, (_, state) => state.storage.getAlarm());
    expect(alarm).not.toBeNull();
  });
});

describe("the status relay", () => {
  it("keeps a change its workspace does not know yet, and delivers it once the record is there", async () => {
    const workspaceId = await createWorkspace();
    const { key } = await createKey(workspaceId);
    const number = await connectCloudNumber(workspaceId);
    mockOperator(() => accepted("wamid.R1"));
    const { jobId } = await json<{ jobId: string }>(await send(key, "relay", textMessage(number.numberId)));
    const workspace = workspaceStub(env, workspaceId);
    await runDurableObjectAlarm(channelNumberStub(env, number.numberId));
    // The record goes missing for a while (as if not committed yet), and the operator reports delivery.
    const row = await runInDurableObject(workspace, (_, state) => {
      const r = state.storage.sql.exec("SELECT * FROM messages WHERE id = ?", jobId).one();
      state.storage.sql.exec("DELETE FROM messages WHERE id = ?", jobId);
      return r;
    });
    await channelNumberStub(env, number.numberId).applyOperatorStatuses([
      { jobId, upstreamMessageId: "wamid.R1", status: "delivered", at: clock, errorCode: null, errorMessage: null },
    ]);
    const owed = await runInDurableObject(
      channelNumberStub(env, number.numberId),
      (_, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM status_outbox").one().n,
    );
    expect(owed).toBe(1);
    await runInDurableObject(workspace, (_, state) => {
      const cols = Object.keys(row);
      state.storage.sql.exec(
        `INSERT INTO messages (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`,
        ...cols.map((c) => row[c]!),
      );
    });
    setClock(clock + 61_000);
    await runDurableObjectAlarm(channelNumberStub(env, number.numberId));
    expect(await json(await api(`/messages/${jobId}`, key))).toMatchObject({
      status: "sent",
      deliveredAt: new Date(clock - 61_000).toISOString(),
    });
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

describe("republishing events the queue lost", () => {
  it("an event without a delivery report after its deadline is published again, with the same id", async () => {
    const t = await createTenant();
    const workspace = workspaceStub(env, t.workspaceId);
    const [id] = await workspace.recordInbound(t.workspaceId, [inbound(t.numberId, 1, { text: "lost" })]);
    await runDurableObjectAlarm(workspace);
    const event = await runInDurableObject(workspace, (_, state) =>
      findEvent(
        state.storage.sql,
        state.storage.sql.exec<{ id: string }>("SELECT id FROM events WHERE subject = ?", id!).one().id,
      )!,
    );
    const republished = vi.spyOn(env.WEBHOOK_QUEUE, "send");
    setClock(clock + 11 * 60_000);
    await runDurableObjectAlarm(workspace);
    const again = republished.mock.calls.flatMap(([body]) => eventsOf(body as WebhookQueueMessage)).map((e) => e.id);
    expect(again).toEqual([event.id]);
  });
});
