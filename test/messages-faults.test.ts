import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { api, expectError, json } from "./helpers/http";
import { connectSandboxNumber, createTenant } from "./helpers/fixtures";
import { holdObject, settleIo } from "./helpers/objects";
import { jobIdFor, send, textMessage, usedMessages } from "./helpers/send";
import { accepted, cloudTenant, connectCloudNumber, mockOperator } from "./helpers/operator";
import { expectRuntimeLog } from "./helpers/runtime-log";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import {
  ORPHAN_GRACE_MS,
  PACE_WINDOW_MS,
  UNCONFIRMED_WAIT_MS,
} from "../src/durable-objects/channel-number/delivery-policy";

let clock = Date.UTC(2035, 5, 1, 8);
const setClock = (ms: number) => {
  clock = ms;
  vi.setSystemTime(clock);
};
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  setClock(clock + 3 * 24 * 3_600_000);
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

/** Runs a number's alarm until it has nothing due, moving the clock past each pace window and retry. */
async function drainAll(numberId: string, rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await runDurableObjectAlarm(channelNumberStub(env, numberId));
    setClock(clock + PACE_WINDOW_MS);
  }
}

/** What a send that died between its hand-off and its commit leaves behind: an entry the workspace never recorded. */
async function handOffOnly(
  t: { workspaceId: string },
  numberId: string,
  key: string,
  body = "Hello",
  to = "5511999998888",
) {
  const jobId = await jobIdFor(t.workspaceId, key, textMessage(numberId, body, to), clock);
  const handed = await channelNumberStub(env, numberId).admit({
    jobId,
    workspaceId: t.workspaceId,
    channelNumberId: numberId,
    to,
    body,
    acceptedAt: clock,
  });
  expect(handed.ok).toBe(true);
  return jobId;
}

const breakTable = (stub: DurableObjectStub, table: string) =>
  runInDurableObject(stub, (_, state) => {
    state.storage.sql.exec(`ALTER TABLE ${table} RENAME TO ${table}_unavailable`);
  });
const repairTable = (stub: DurableObjectStub, table: string) =>
  runInDurableObject(stub, (_, state) => {
    state.storage.sql.exec(`ALTER TABLE ${table}_unavailable RENAME TO ${table}`);
  });

describe("faults between the steps of a send", () => {
  it("the outbox hand-off fails after the workspace admitted: 500, key unbound, the retry makes exactly one message", async () => {
    const t = await createTenant();
    const number = channelNumberStub(env, t.numberId);
    await breakTable(number, "outbox");
    // The runtime reports the objects' exceptions: expected here, so captured and checked rather than printed.
    const trace = await expectRuntimeLog(/uncaught exception[\s\S]*no such table: outbox/);
    await expectError(await send(t.key, "fragile", textMessage(t.numberId)), 500, "internal_error");
    await expectError(await send(t.key, "fragile", textMessage(t.numberId)), 500, "internal_error");
    expect(await usedMessages(t.key)).toBe(0);
    expect((await trace.seen(2)).every((line) => line.includes("admit"))).toBe(true);
    await trace.end();

    await repairTable(number, "outbox");
    const retry = await send(t.key, "fragile", textMessage(t.numberId));
    expect(retry.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(retry);
    expect(await number.outboxJobIds()).toEqual([jobId]);
    expect((await send(t.key, "fragile", textMessage(t.numberId))).status).toBe(200);
  });

  it("the workspace object dies after the hand-off and before recording: the retry converges on the same single message", async () => {
    const t = await createTenant();
    const number = channelNumberStub(env, t.numberId);
    const jobId = await handOffOnly(t, t.numberId, "crashy");
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

describe("a retry after a failed commit sends the payload the customer sees, once", () => {
  it("the commit fails after the hand-off: a retry with another payload gets its own message, and the operator receives that text only", async () => {
    const t = await cloudTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.text.body}`));
    const workspace = workspaceStub(env, t.workspaceId);
    await breakTable(workspace, "messages");
    // The object's exception is expected here: captured and checked, not printed as an uncaught error.
    const trace = await expectRuntimeLog(/uncaught exception[\s\S]*no such table: messages/);
    await expectError(await send(t.key, "k1", textMessage(t.numberId, "first text")), 500, "internal_error");
    expect(await trace.seen()).toHaveLength(1);
    await trace.end();
    await repairTable(workspace, "messages");

    // The failed commit gave its window slot back: two sends in the same second still fit.
    const retry = await send(t.key, "k1", textMessage(t.numberId, "second text"));
    expect(retry.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(retry);
    expect((await send(t.key, "k2", textMessage(t.numberId, "other"))).status).toBe(201);

    await drainAll(t.numberId);
    expect(calls.filter((c) => c.body.biz_opaque_callback_data === jobId).map((c) => c.body.text.body)).toEqual([
      "second text",
    ]);
    expect(calls.some((c) => c.body.text.body === "first text")).toBe(false);
    expect(await json(await api(`/messages/${jobId}`, t.key))).toMatchObject({
      text: { body: "second text" },
      status: "sent",
    });
  });

  it("an entry left by a failed commit is never revived by a retry with another payload: it is dropped, never sent", async () => {
    const t = await cloudTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.text.body}`));
    const orphan = await handOffOnly(t, t.numberId, "k", "old text");
    await evictDurableObject(workspaceStub(env, t.workspaceId)).catch(() => undefined);

    const retry = await send(t.key, "k", textMessage(t.numberId, "new text"));
    expect(retry.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(retry);
    expect(jobId).not.toBe(orphan);

    setClock(clock + UNCONFIRMED_WAIT_MS + 1);
    await drainAll(t.numberId);
    setClock(clock + ORPHAN_GRACE_MS);
    await drainAll(t.numberId, 3);
    expect(calls.map((c) => [c.body.biz_opaque_callback_data, c.body.text.body])).toEqual([[jobId, "new text"]]);
    const outbox = await channelNumberStub(env, t.numberId).outbox();
    expect(outbox.find((e) => e.jobId === orphan)?.state).toBe("dropped");
    expect(outbox.find((e) => e.jobId === jobId)?.state).toBe("sent");
  });

  it("retried on another number, only that number sends: one jobId reaches the operator at most once", async () => {
    const t = await cloudTenant();
    const other = await connectCloudNumber(t.workspaceId);
    const calls = mockOperator((c) => accepted(`wamid.${c.url}.${c.body.text.body}`));
    const orphan = await handOffOnly(t, t.numberId, "k", "Hello");
    await evictDurableObject(workspaceStub(env, t.workspaceId)).catch(() => undefined);

    const retry = await send(t.key, "k", textMessage(other.numberId, "Hello"));
    expect(retry.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(retry);
    expect(jobId).not.toBe(orphan);

    setClock(clock + UNCONFIRMED_WAIT_MS + 1);
    await drainAll(t.numberId);
    await drainAll(other.numberId);
    setClock(clock + ORPHAN_GRACE_MS);
    await drainAll(t.numberId, 3);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toContain(other.phoneNumberId);
    expect(calls[0]!.body.biz_opaque_callback_data).toBe(jobId);
  });

  it("a key reused after its 24 hours never revives an entry its first use left behind", async () => {
    const t = await cloudTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const orphan = await handOffOnly(t, t.numberId, "daily-key", "Same text");
    setClock(clock + UNCONFIRMED_WAIT_MS + 1);
    await drainAll(t.numberId);
    setClock(clock + ORPHAN_GRACE_MS);
    await drainAll(t.numberId, 2);
    expect((await channelNumberStub(env, t.numberId).outbox())[0]).toMatchObject({ jobId: orphan, state: "dropped" });

    setClock(clock + 24 * 3_600_000 + 1);
    const later = await send(t.key, "daily-key", textMessage(t.numberId, "Same text"));
    expect(later.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(later);
    expect(jobId).not.toBe(orphan);
    await drainAll(t.numberId);
    expect(calls.map((c) => c.body.biz_opaque_callback_data)).toEqual([jobId]);
    expect((await channelNumberStub(env, t.numberId).outbox()).find((e) => e.jobId === orphan)?.state).toBe("dropped");
  });

  it("an entry already in the outbox under a jobId with another payload is refused, never overwritten or sent", async () => {
    const t = await createTenant();
    const number = channelNumberStub(env, t.numberId);
    const jobId = await handOffOnly(t, t.numberId, "k", "one");
    const clash = await number.admit({
      jobId,
      workspaceId: t.workspaceId,
      channelNumberId: t.numberId,
      to: "5511999998888",
      body: "two",
      acceptedAt: clock,
    });
    expect(clash).toEqual({ ok: false, reason: "conflict" });
    expect((await number.outbox()).map((e) => e.jobId)).toEqual([jobId]);
  });
});

describe("a refusal is only caused by capacity actually used", () => {
  it("a send its number refuses does not hold the last quota slot against a concurrent send to another number", async () => {
    const t = await createTenant({ monthlyMessageQuota: 3 });
    const second = await connectSandboxNumber(t.workspaceId, "15550002222");
    expect((await send(t.key, "u1", textMessage(t.numberId))).status).toBe(201);
    expect((await send(t.key, "u2", textMessage(t.numberId))).status).toBe(201);

    const gate = await holdObject(channelNumberStub(env, t.numberId));
    const refusedByNumber = send(t.key, "a", textMessage(t.numberId));
    await settleIo();
    const other = send(t.key, "b", textMessage(second));
    await settleIo();
    await gate.release();
    await expectError(await refusedByNumber, 429, "rate_limit_exceeded");
    expect((await other).status).toBe(201);
    expect(await usedMessages(t.key)).toBe(3);
  });
});
