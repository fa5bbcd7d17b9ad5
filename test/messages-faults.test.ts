import { createExecutionContext, createMessageBatch, evictDurableObject, getQueueResult, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import worker from "../src/index";
import { api, expectError, json } from "./helpers/http";
import { createTenant } from "./helpers/fixtures";
import { send, textMessage, usedMessages } from "./helpers/send";
import { expectRuntimeLog } from "./helpers/runtime-log";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import { deriveJobId } from "../src/domain/job-id";
import type { MessageCopy } from "../src/domain/message";

let clock = Date.UTC(2035, 5, 1, 8);
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  clock += 3_600_000;
  vi.setSystemTime(clock);
});
afterEach(() => vi.useRealTimers());

const d1Copy = (id: string) => env.DB.prepare("SELECT id, status, version FROM messages WHERE id = ?").bind(id).first();

describe("faults between the steps of a send", () => {
  it("the outbox hand-off fails after the workspace admitted: 500, key unbound, the retry makes exactly one message", async () => {
    const t = await createTenant();
    const number = channelNumberStub(env, t.numberId);
    await runInDurableObject(number, (_, state) => {
      state.storage.sql.exec("ALTER TABLE outbox RENAME TO outbox_unavailable");
    });
    // The runtime reports the objects' exceptions: expected here, so captured and checked rather than printed.
    const trace = await expectRuntimeLog(/uncaught exception[\s\S]*no such table: outbox/);

    await expectError(await send(t.key, "fragile", textMessage(t.numberId)), 500, "internal_error");
    await expectError(await send(t.key, "fragile", textMessage(t.numberId)), 500, "internal_error");
    expect(await usedMessages(t.key)).toBe(0);
    expect((await trace.seen(2)).every((line) => line.includes("admit"))).toBe(true);
    await trace.end();

    await runInDurableObject(number, (_, state) => {
      state.storage.sql.exec("ALTER TABLE outbox_unavailable RENAME TO outbox");
    });
    const retry = await send(t.key, "fragile", textMessage(t.numberId));
    expect(retry.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(retry);
    expect(await number.outboxJobIds()).toEqual([jobId]);
    expect((await send(t.key, "fragile", textMessage(t.numberId))).status).toBe(200);
  });

  it("the workspace object dies after the hand-off and before recording: the retry converges on the same single message", async () => {
    const t = await createTenant();
    const number = channelNumberStub(env, t.numberId);
    const jobId = await deriveJobId(env.JOB_ID_SECRET, t.workspaceId, "crashy");
    // What the workspace object had done when it died: the outbox already holds the entry.
    const handedOff = await number.admit({
      jobId,
      workspaceId: t.workspaceId,
      channelNumberId: t.numberId,
      to: "5511999998888",
      body: "Hello",
      acceptedAt: clock,
    });
    expect(handedOff.ok).toBe(true);
    await evictDurableObject(workspaceStub(env, t.workspaceId)).catch(() => undefined);

    const retry = await send(t.key, "crashy", textMessage(t.numberId));
    expect(retry.status).toBe(201);
    expect(await json(retry)).toEqual({ jobId, status: "created" });
    expect(await number.outboxJobIds()).toEqual([jobId]);
    // The retried hand-off spent no second slot of the number's window.
    expect((await send(t.key, "next", textMessage(t.numberId))).status).toBe(201);
  });

  it("an object call that throws (D1 unavailable while loading the workspace) binds nothing; the retry succeeds", async () => {
    const t = await createTenant();
    expect((await api("/me", t.key)).status).toBe(200); // the key is now cached
    const trace = await expectRuntimeLog(/uncaught exception[\s\S]*no such table: workspaces/);
    await env.DB.exec("ALTER TABLE workspaces RENAME TO workspaces_unavailable");
    try {
      await expectError(await send(t.key, "d1-down", textMessage(t.numberId)), 500, "internal_error");
      expect(await trace.seen()).toHaveLength(1);
    } finally {
      await trace.end();
      await env.DB.exec("ALTER TABLE workspaces_unavailable RENAME TO workspaces");
    }
    const retry = await send(t.key, "d1-down", textMessage(t.numberId));
    expect(retry.status).toBe(201);
    expect(await channelNumberStub(env, t.numberId).outboxJobIds()).toHaveLength(1);
  });
});

describe("the D1 copy of message records", () => {
  it("is written off the request path and reaches D1 through the copies queue", async () => {
    const t = await createTenant();
    const { jobId } = await json<{ jobId: string }>(await send(t.key, "copy-me", textMessage(t.numberId)));
    expect(await d1Copy(jobId)).toBeNull(); // nothing written on the request path

    vi.useRealTimers();
    expect(await runDurableObjectAlarm(workspaceStub(env, t.workspaceId))).toBe(true);
    await vi.waitFor(async () => expect(await d1Copy(jobId)).toMatchObject({ status: "queued", version: 1 }), { timeout: 5_000 });
  });

  it("a failed batch is retried whole and loses nothing; an older version never overwrites a newer one", async () => {
    const copy = (version: number, status: MessageCopy["status"]): MessageCopy => ({
      id: crypto.randomUUID(),
      workspaceId: crypto.randomUUID(),
      channelNumberId: crypto.randomUUID(),
      to: "5511999998888",
      type: "text",
      body: "hi",
      status,
      upstreamMessageId: null,
      errorCode: null,
      errorMessage: null,
      createdAt: new Date(clock).toISOString(),
      updatedAt: new Date(clock).toISOString(),
      deliveredAt: null,
      readAt: null,
      version,
    });
    const a = copy(2, "sent");
    const b = copy(1, "queued");
    const messages = [a, b].map((body, i) => ({ id: `m${i}`, timestamp: new Date(clock), attempts: 1, body }));

    await env.DB.exec("ALTER TABLE messages RENAME TO messages_unavailable");
    try {
      const batch = createMessageBatch("message-copies", messages);
      const ctx = createExecutionContext();
      await worker.queue(batch, env, ctx);
      const result = await getQueueResult(batch, ctx);
      expect(result.retryBatch.retry).toBe(true);
      expect(result.ackAll).toBe(false);
    } finally {
      await env.DB.exec("ALTER TABLE messages_unavailable RENAME TO messages");
    }

    const again = createMessageBatch("message-copies", messages);
    const ctx = createExecutionContext();
    await worker.queue(again, env, ctx);
    expect((await getQueueResult(again, ctx)).ackAll).toBe(true);
    expect(await d1Copy(a.id)).toMatchObject({ status: "sent", version: 2 });
    expect(await d1Copy(b.id)).toMatchObject({ status: "queued", version: 1 });

    // A late, older copy of `a` changes nothing.
    const late = createMessageBatch("message-copies", [{ id: "late", timestamp: new Date(clock), attempts: 1, body: { ...a, version: 1, status: "queued" as const } }]);
    const ctx2 = createExecutionContext();
    await worker.queue(late, env, ctx2);
    await getQueueResult(late, ctx2);
    expect(await d1Copy(a.id)).toMatchObject({ status: "sent", version: 2 });
  });
});
