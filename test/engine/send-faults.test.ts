import { abortAllDurableObjects, evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, expectError, json } from "../helpers/http";
import { connectSandboxNumber, createTenant } from "../helpers/fixtures";
import { holdObject, settleIo, testNumber, testWorkspace } from "../helpers/objects";
import { send, textMessage, usedMessages } from "../helpers/send";
import { accepted, liveNumberTenant, connectLiveNumber, mockOperator } from "../helpers/operator";
import { expectRuntimeLog } from "../helpers/runtime-log";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { PACE_WINDOW_MS } from "../../src/durable-objects/channel-number/delivery-policy";
import { newJobId } from "../../src/lib/job-id";
import { slotOf, slotTable } from "../../src/durable-objects/workspace/day-tables";
import { fakeClockPerTest } from "../helpers/clock";

const clock = fakeClockPerTest(Date.UTC(2035, 5, 1, 8), (t) => t + 3 * 24 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

/** Runs a number's alarm until it has nothing due, moving the clock past each pace window and retry. */
async function drainAll(numberId: string, rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await runDurableObjectAlarm(channelNumberStub(env, numberId));
    clock.advance(PACE_WINDOW_MS);
  }
}

/** The number's queue (what it still has to call), oldest first. */
const queuedIds = async (numberId: string) => (await testNumber(numberId).queued()).map((e) => e.jobId);

/**
 * What a send that died between its hand-off and its commit leaves behind: the number admitted it
 * (the workspace's own hand-off, with the jobId it makes) and its workspace recorded nothing.
 */
async function handOffOnly(t: { workspaceId: string }, numberId: string, to = "5511999998888") {
  const jobId = newJobId(clock.now());
  const handed = await testNumber(numberId).admit({
    jobId,
    workspaceId: t.workspaceId,
    channelNumberId: numberId,
    to,
    acceptedAt: clock.now(),
  });
  expect(handed.ok).toBe(true);
  return jobId;
}

/**
 * Makes the commit of new records fail in a workspace object (as a full disk or an I/O error
 * would): reads still work, and the admission goes as far as its insert. `repair` undoes it.
 */
const failInserts = async (workspaceId: string) => {
  const workspace = testWorkspace(workspaceId);
  await workspace.failWrites(slotTable(slotOf(clock.now())), { inserts: true });
  return { repair: () => workspace.repairWrites() };
};

describe("faults between the steps of a send", () => {
  it("the hand-off to the number fails after the workspace admitted: 500, key unbound, the retry makes exactly one message", async () => {
    const t = await createTenant();
    // The number object is busy, then every object restarts while the send waits on it.
    const gate = await holdObject(channelNumberStub(env, t.numberId));
    const pending = send(t.key, "fragile", textMessage(t.numberId));
    // Strikes once the workspace has the send (a loaded machine may take longer than any fixed pause to get it there).
    await vi.waitFor(async () => expect(await testWorkspace(t.workspaceId).sendsUnderWay()).toBe(1), {
      timeout: 10_000,
      interval: 20,
    });
    await abortAllDurableObjects();
    await gate.release().catch(() => "aborted");
    await expectError(await pending, 500, "internal_error");
    expect(await usedMessages(t.key)).toBe(0);

    const retry = await send(t.key, "fragile", textMessage(t.numberId));
    expect(retry.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(retry);
    expect(await queuedIds(t.numberId)).toEqual([jobId]);
    expect((await send(t.key, "fragile", textMessage(t.numberId))).status).toBe(200);
    expect(await usedMessages(t.key)).toBe(1);
  });

  it("the workspace object dies after the hand-off and before recording: the retry (another payload even) is one message, called once", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.text.body}`));
    const orphan = await handOffOnly(t, t.numberId);
    await evictDurableObject(workspaceStub(env, t.workspaceId)).catch(() => undefined);

    // Nothing was bound: the retry, a moment later, is a new message with its own jobId.
    clock.advance(100);
    const retry = await send(t.key, "crashy", textMessage(t.numberId, "new text"));
    expect(retry.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(retry);
    expect(jobId).not.toBe(orphan);
    expect(await queuedIds(t.numberId)).toEqual([orphan, jobId]);

    // The orphan's claim finds no record: it is dropped, never called; the retry is called once.
    await drainAll(t.numberId, 4);
    expect(calls.map((c) => [c.body.biz_opaque_callback_data, c.body.text.body])).toEqual([[jobId, "new text"]]);
    expect(await queuedIds(t.numberId)).toEqual([]);
    expect(await json(await api(`/messages/${jobId}`, t.key))).toMatchObject({
      text: { body: "new text" },
      status: "sent",
    });
    expect((await send(t.key, "crashy", textMessage(t.numberId, "new text"))).status).toBe(200);
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
    expect(await queuedIds(t.numberId)).toEqual([(await json<{ jobId: string }>(retry)).jobId]);
  });
});

describe("a retry after a failed commit sends the payload the customer sees, once", () => {
  it("the commit fails after the hand-off: a retry with another payload gets its own message, and the operator receives that text only", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.text.body}`));
    // A first send makes the records' table (a 6-hour slot); a second earlier: it does not share the next sends' window.
    expect((await send(t.key, "k0", textMessage(t.numberId, "zero"))).status).toBe(201);
    clock.advance(1_000);
    const fault = await failInserts(t.workspaceId);
    // The object's exception is expected here: captured and checked, not printed as an uncaught error.
    const trace = await expectRuntimeLog(/uncaught exception[\s\S]*disk I\/O error \(injected\)/);
    await expectError(await send(t.key, "k1", textMessage(t.numberId, "first text")), 500, "internal_error");
    // It failed at the commit, after the number had admitted it.
    const [line, ...more] = await trace.seen();
    expect(more).toEqual([]);
    expect(line).toContain("insertOutbound");
    await trace.end();
    await fault.repair();
    // The number gave the entry up at once (the workspace released it).
    expect(await queuedIds(t.numberId)).toHaveLength(1);

    // The failed commit gave its window slot back: two sends in the same second still fit.
    const retry = await send(t.key, "k1", textMessage(t.numberId, "second text"));
    expect(retry.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(retry);
    expect((await send(t.key, "k2", textMessage(t.numberId, "other"))).status).toBe(201);

    await drainAll(t.numberId);
    expect(calls.filter((c) => c.body.biz_opaque_callback_data === jobId).map((c) => c.body.text.body)).toEqual([
      "second text",
    ]);
    expect(calls.map((c) => c.body.text.body).sort()).toEqual(["other", "second text", "zero"]);
    expect(await json(await api(`/messages/${jobId}`, t.key))).toMatchObject({
      text: { body: "second text" },
      status: "sent",
    });
  });

  it("retried on another number, only that number sends: one message reaches the operator once", async () => {
    const t = await liveNumberTenant();
    const other = await connectLiveNumber(t.workspaceId);
    const calls = mockOperator((c) => accepted(`wamid.${c.url}.${c.body.text.body}`));
    const orphan = await handOffOnly(t, t.numberId);
    await evictDurableObject(workspaceStub(env, t.workspaceId)).catch(() => undefined);

    const retry = await send(t.key, "k", textMessage(other.numberId, "Hello"));
    expect(retry.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(retry);
    expect(jobId).not.toBe(orphan);

    await drainAll(t.numberId, 3);
    await drainAll(other.numberId, 3);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toContain(other.phoneNumberId);
    expect(calls[0]!.body.biz_opaque_callback_data).toBe(jobId);
    expect(await queuedIds(t.numberId)).toEqual([]);
  });

  it("a second hand-off under a jobId already queued changes nothing: one call, with the record's payload", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.text.body}`));
    const res = await send(t.key, "k", textMessage(t.numberId, "one"));
    expect(res.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(res);
    // The same jobId handed again (another recipient even): the queue keeps its one entry.
    const again = await testNumber(t.numberId).admit({
      jobId,
      workspaceId: t.workspaceId,
      channelNumberId: t.numberId,
      to: "5511000000000",
      acceptedAt: clock.now(),
    });
    expect(again.ok).toBe(true);
    expect(await queuedIds(t.numberId)).toEqual([jobId]);
    await drainAll(t.numberId, 4);
    expect(calls.map((c) => [c.body.biz_opaque_callback_data, c.body.to, c.body.text.body])).toEqual([
      [jobId, "+5511999998888", "one"],
    ]);
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
