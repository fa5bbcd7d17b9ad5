import { PACE_WINDOW_MS } from "../../src/durable-objects/channel-number/delivery-policy";
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { admin, api, json } from "../helpers/http";
import { send, textMessage } from "../helpers/send";
import { accepted, operatorError, type OperatorCall } from "../helpers/operator";
import { postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { holdObject, settleIo, testNumber, testWorkspace } from "../helpers/objects";
import { liveNumberOnEdge } from "../helpers/number-edge";
import { expectRuntimeLog } from "../helpers/runtime-log";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { HELD_BOUND_MS, RETRY_POLICY } from "../../src/durable-objects/channel-number/delivery-policy";
import { UNKNOWN_OUTCOME_WINDOW_MS } from "../../src/durable-objects/workspace/unknown-outcomes";
import { slotOf, slotTable } from "../../src/durable-objects/workspace/day-tables";
import { newJobId, uuidV7Time } from "../../src/lib/job-id";
import { fakeClockPerTest } from "../helpers/clock";

// The claim protocol (workspace/status.ts): a number calls the operator only after its workspace
// granted the claim, a compare-and-set on the message's record, so that one jobId reaches the
// operator at most once whatever the number's memory says. A clock far in the future: the
// number's alarm runs only when a test runs it (DRAIN_SESSION_MS=0: one pass per alarm).

const clock = fakeClockPerTest(Date.UTC(2051, 0, 1), (t) => t + 30 * 24 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

async function sendOne(key: string, numberId: string, idempotencyKey: string = crypto.randomUUID(), body = "Hello") {
  const res = await send(key, idempotencyKey, textMessage(numberId, body));
  expect(res.status).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

const alarm = (numberId: string) => runDurableObjectAlarm(channelNumberStub(env, numberId));
const message = async (key: string, jobId: string) =>
  json<Record<string, unknown> & { status: string }>(await api(`/messages/${jobId}`, key));
const callsFor = (calls: OperatorCall[], jobId: string) =>
  calls.filter((c) => c.body.biz_opaque_callback_data === jobId);
const queuedIds = async (numberId: string) => (await testNumber(numberId).queued()).map((e) => e.jobId);

/** The operator's `sent` report of a message, as its webhook posts it. */
const sentReport = (phoneNumberId: string, jobId: string, wamid: string) =>
  statusPayload(phoneNumberId, [
    {
      id: wamid,
      status: "sent",
      timestamp: seconds(clock.now()),
      recipient_id: "5511999998888",
      biz_opaque_callback_data: jobId,
    },
  ]);

/** 131000 "something went wrong, try again" to the first call (the operator may have processed it after all); later calls accepted. */
const tryAgainFirst: Parameters<typeof liveNumberOnEdge>[0] = (_, i) =>
  i === 0 ? operatorError(500, 131000, "Something went wrong") : accepted("wamid.SECOND");

/** The first call never answers, like a connection that hangs when the object dies; later calls accepted. */
const hangsFirst: Parameters<typeof liveNumberOnEdge>[0] = (_, i) =>
  i === 0 ? new Promise<Response>(() => undefined) : accepted("wamid.AGAIN");

/** Sends one message and lets the number call it; the number (and everything else) restarts during the call. */
async function restartDuringCall(t: Awaited<ReturnType<typeof liveNumberOnEdge>>, jobId: string): Promise<void> {
  void alarm(t.numberId).catch(() => "aborted");
  // Positive signal: the claim was granted and the call left.
  await vi.waitFor(() => expect(callsFor(t.calls, jobId)).toHaveLength(1), { timeout: 10_000, interval: 20 });
  await abortAllDurableObjects();
}

/** Runs the workspace's alarm (its steps due now). */
const workspaceAlarm = async (workspaceId: string) => {
  await testWorkspace(workspaceId).armAlarm();
  await runDurableObjectAlarm(workspaceStub(env, workspaceId));
};

describe("a retry's claim is decided by the record as the workspace holds it then", () => {
  it("the operator's `sent` report arrives before the retry's claim: no second call, the record is sent, announced once", async () => {
    const t = await liveNumberOnEdge(tryAgainFirst);
    const jobId = await sendOne(t.key, t.numberId);
    await alarm(t.numberId);
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
    // Waiting on its retry (1 s later), in the number's queue.
    expect(await message(t.key, jobId)).toMatchObject({ status: "processing", outcomeUnknownSince: null });
    expect(await queuedIds(t.numberId)).toEqual([jobId]);

    // The operator processed the first call after all, and says so.
    expect((await postOperator(sentReport(t.phoneNumberId, jobId, "wamid.FIRST"))).status).toBe(200);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.FIRST" });

    // The retry falls due: its claim finds the record settled; the entry leaves the queue uncalled.
    clock.advance(RETRY_POLICY.delaysMs[0]);
    await alarm(t.numberId);
    expect(await queuedIds(t.numberId)).toEqual([]);
    for (let i = 0; i < 3; i++) {
      clock.advance(61_000);
      await alarm(t.numberId);
    }
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.FIRST" });
    await t.hook.settled();
    expect(t.hook.statusChanges(jobId)).toEqual([
      ["queued", "processing"],
      ["processing", "sent"],
    ]);
    expect(t.net.unhandled).toEqual([]);
  });

  it("the report reaches a busy workspace before the retry's claim, both waiting there: the claim finds it settled, no second call", async () => {
    const t = await liveNumberOnEdge(tryAgainFirst);
    const jobId = await sendOne(t.key, t.numberId);
    await alarm(t.numberId);
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
    clock.advance(RETRY_POLICY.delaysMs[0]);

    // The workspace is busy: the operator's report waits there first, then the retry's claim.
    const gate = await holdObject(workspaceStub(env, t.workspaceId));
    const report = postOperator(sentReport(t.phoneNumberId, jobId, "wamid.FIRST"));
    await settleIo();
    const drained = alarm(t.numberId);
    // Positive signal: the retry's claim left the number (its entry is being called) and waits at the workspace.
    await vi.waitFor(async () => expect((await testNumber(t.numberId).queued())[0]?.state).toBe("calling"), {
      timeout: 5_000,
      interval: 20,
    });
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
    await gate.release();
    expect((await report).status).toBe(200);
    await drained;

    expect(callsFor(t.calls, jobId)).toHaveLength(1);
    expect(await queuedIds(t.numberId)).toEqual([]);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.FIRST" });
    for (let i = 0; i < 3; i++) {
      clock.advance(61_000);
      await alarm(t.numberId);
    }
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
  });
});

describe("a claim granted and never answered", () => {
  it("the number restarts during the call: the message is an unknown outcome, never called again, and the operator's report settles it", async () => {
    // The first call never answers, like a connection that hangs when the object dies.
    const t = await liveNumberOnEdge((_, i) =>
      i === 0 ? new Promise<Response>(() => undefined) : accepted("wamid.AGAIN"),
    );
    const jobId = await sendOne(t.key, t.numberId);
    void alarm(t.numberId).catch(() => "aborted");
    // Positive signal: the claim was granted (the record says processing) and the call left.
    await vi.waitFor(() => expect(callsFor(t.calls, jobId)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    expect(await message(t.key, jobId)).toMatchObject({ status: "processing", outcomeUnknownSince: null });
    await abortAllDurableObjects(); // the number (and everything else) restarts mid-call

    // The runtime runs an alarm whose run was cut short again (the test harness removed it to run it).
    await testNumber(t.numberId).armAlarm();
    for (let i = 0; i < 3; i++) {
      await alarm(t.numberId);
      clock.advance(61_000);
    }
    // The restarted number rebuilt its queue from the record: claimed and never answered, so the
    // claim of the next attempt is refused; the outcome is unknown, and the message never called again.
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "processing",
      outcomeUnknownSince: expect.any(String),
    });
    expect(await queuedIds(t.numberId)).toEqual([]);

    // The operator got it: its webhook settles the record.
    expect((await postOperator(sentReport(t.phoneNumberId, jobId, "wamid.LATE"))).status).toBe(200);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "sent",
      upstreamMessageId: "wamid.LATE",
      outcomeUnknownSince: null,
    });
    for (let i = 0; i < 3; i++) {
      clock.advance(61_000);
      await alarm(t.numberId);
    }
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
  });
});

describe("a send that never committed", () => {
  it("its entry's claim is answered `never` and dropped unsent; the client's retry of the key gets a new jobId; one call in all", async () => {
    const t = await liveNumberOnEdge((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    // What a send whose workspace died between the number's admission and the commit leaves:
    // an entry in the number's queue (the workspace's own hand-off) and no record.
    const orphan = newJobId(clock.now());
    const handed = await testNumber(t.numberId).admit({
      jobId: orphan,
      workspaceId: t.workspaceId,
      channelNumberId: t.numberId,
      to: "5511999998888",
      acceptedAt: clock.now(),
    });
    expect(handed.ok).toBe(true);
    expect(await queuedIds(t.numberId)).toEqual([orphan]);

    // Nothing was bound: the client's retry of the same key is a new message, with its own jobId.
    clock.advance(100);
    const retry = await sendOne(t.key, t.numberId, "order-77");
    expect(retry).not.toBe(orphan);
    expect((await send(t.key, "order-77", textMessage(t.numberId))).status).toBe(200);

    for (let i = 0; i < 4; i++) {
      await alarm(t.numberId);
      clock.advance(1_100);
    }
    expect(t.calls.map((c) => c.body.biz_opaque_callback_data)).toEqual([retry]);
    expect(await queuedIds(t.numberId)).toEqual([]);
    expect(await message(t.key, retry)).toMatchObject({ status: "sent", upstreamMessageId: `wamid.${retry}` });
    expect((await api(`/messages/${orphan}`, t.key)).status).toBe(404);
  });
});

describe("the number gives up on a message whose claim is unanswered", () => {
  it("its held bound comes first after a restart during the call: an unknown outcome (a call may have left), never called again, failed when the operator's window ends", async () => {
    const t = await liveNumberOnEdge(hangsFirst);
    const jobId = await sendOne(t.key, t.numberId);
    // A backlog reached it 2 s before its 24-hour bound: it is called, and the number restarts during the call.
    clock.advance(HELD_BOUND_MS - 2_000);
    await restartDuringCall(t, jobId);

    // The runtime runs the cut-short alarm again: the queue is rebuilt, the held bound is past.
    const warnings: string[] = [];
    vi.spyOn(console, "warn").mockImplementation((line: unknown) => void warnings.push(String(line)));
    clock.advance(5_000);
    await testNumber(t.numberId).armAlarm();
    await alarm(t.numberId);
    const held = warnings.filter((l) => l.includes("held past its bound"));
    expect(held).toHaveLength(1);
    // Not failed as unsent: the call may have reached the operator.
    expect(held[0]).not.toContain("failed, not sent");
    expect(await queuedIds(t.numberId)).toEqual([]);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "processing",
      outcomeUnknownSince: expect.any(String),
    });
    expect(await testWorkspace(t.workspaceId).storedRecord(jobId)).toMatchObject({
      pending: 0,
      attempts: 1,
      answered: 1,
    });

    // No report ever comes: the operator's window ends and it fails, announced.
    clock.advance(UNKNOWN_OUTCOME_WINDOW_MS + 3_600_000);
    await workspaceAlarm(t.workspaceId);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "failed",
      error: { code: "upstream_outcome_unknown" },
    });
    await t.hook.waitForStatus(jobId, "failed");
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
  });

  it("its number is disconnected after a restart during the call: an unknown outcome too, failed when the operator's window ends", async () => {
    const t = await liveNumberOnEdge(hangsFirst);
    const jobId = await sendOne(t.key, t.numberId);
    await restartDuringCall(t, jobId);
    expect((await admin(`/channel-numbers/${t.numberId}`, { method: "DELETE" })).status).toBeLessThan(300);

    clock.advance(5_000);
    await testNumber(t.numberId).armAlarm();
    await alarm(t.numberId);
    expect(await queuedIds(t.numberId)).toEqual([]);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "processing",
      outcomeUnknownSince: expect.any(String),
    });

    clock.advance(UNKNOWN_OUTCOME_WINDOW_MS + 3_600_000);
    await workspaceAlarm(t.workspaceId);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "failed",
      error: { code: "upstream_outcome_unknown" },
    });
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
  });
});

describe("a claim that finds the record settled", () => {
  it("settled by the operator's report while the call's answer was lost: the restarted number's claim ends the record's work (it leaves the work list), no second call", async () => {
    const t = await liveNumberOnEdge(hangsFirst);
    const jobId = await sendOne(t.key, t.numberId);
    await restartDuringCall(t, jobId);
    clock.advance(1_000);
    expect((await postOperator(sentReport(t.phoneNumberId, jobId, "wamid.FIRST"))).status).toBe(200);
    const ws = testWorkspace(t.workspaceId);
    // The report settles the record; the call's answer would have ended its work, and it is lost.
    expect(await ws.storedRecord(jobId)).toMatchObject({ status: "sent", attempts: 1, answered: 0, pending: 1 });

    clock.advance(2_000);
    await testNumber(t.numberId).armAlarm();
    // The restarted instance's pace starts full (its alarm was armed): its first claim a window later.
    clock.advance(PACE_WINDOW_MS);
    await alarm(t.numberId);
    expect(await queuedIds(t.numberId)).toEqual([]);
    expect(await ws.storedRecord(jobId)).toMatchObject({ status: "sent", pending: 0 });
    expect(await workspaceStub(env, t.workspaceId).workOf(t.numberId, "", 10)).toEqual([]);
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
  });
});

describe("the claim's compare-and-set decides from storage", () => {
  it("a caller that believes an earlier attempt is next (a second instance, a stale queue) is refused: never a second call for one attempt", async () => {
    const t = await liveNumberOnEdge(tryAgainFirst);
    const jobId = await sendOne(t.key, t.numberId);
    await alarm(t.numberId);
    // Attempt 1 was called and answered (131000: retried later); the record holds attempts = answered = 1.
    expect(await testWorkspace(t.workspaceId).storedRecord(jobId)).toMatchObject({ attempts: 1, answered: 1 });
    clock.advance(60_000);
    const ws = workspaceStub(env, t.workspaceId);
    expect(await ws.claim(jobId, 1)).toMatchObject({ kind: "claimed_before" });
    expect(await testWorkspace(t.workspaceId).storedRecord(jobId)).toMatchObject({ attempts: 1, answered: 1 });
    // The number's own next attempt is granted, once.
    expect(await ws.claim(jobId, 2)).toMatchObject({ kind: "go" });
    expect(await ws.claim(jobId, 2)).toMatchObject({ kind: "claimed_before" });
  });

  it("a retry is not granted before the time its answer stored (the operator's Retry-After), whoever asks", async () => {
    const t = await liveNumberOnEdge(tryAgainFirst);
    const jobId = await sendOne(t.key, t.numberId);
    await alarm(t.numberId);
    const stored = await testWorkspace(t.workspaceId).storedRecord(jobId);
    const retryAt = stored!.next_attempt_at!;
    expect(retryAt).toBeGreaterThan(clock.now());
    // A second instance of the number (its queue rebuilt without the retry's time) asks early: it waits.
    const ws = workspaceStub(env, t.workspaceId);
    expect(await ws.claim(jobId, 2)).toEqual({ kind: "wait", until: retryAt });
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
    clock.set(retryAt);
    expect(await ws.claim(jobId, 2)).toMatchObject({ kind: "go" });
  });
});

describe("an operator report about a message never claimed", () => {
  it("is not applied: the message was never called, so the report is not about our call; it is called later and sent once", async () => {
    const t = await liveNumberOnEdge((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const jobId = await sendOne(t.key, t.numberId);
    // A report naming it before any call (a forged or misrouted status): nothing changes.
    expect((await postOperator(sentReport(t.phoneNumberId, jobId, "wamid.FORGED"))).status).toBe(200);
    expect(await message(t.key, jobId)).toMatchObject({ status: "queued", upstreamMessageId: null });
    await alarm(t.numberId);
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: `wamid.${jobId}` });
  });
});

describe("a retry's answer the workspace cannot take at once", () => {
  it("is kept and handed again; the entry is not claimed before it committed; the message is retried and sent, never an unknown outcome", async () => {
    const t = await liveNumberOnEdge(tryAgainFirst);
    const jobId = await sendOne(t.key, t.numberId);
    const table = slotTable(slotOf(uuidV7Time(jobId)!));
    const ws = workspaceStub(env, t.workspaceId);
    const fault = await expectRuntimeLog(/injected/);
    // The workspace fails to take the retry's answer (the one write that sets the retry's time).
    await runInDurableObject(ws, (_, state) => {
      state.storage.sql.exec(
        `CREATE TRIGGER retry_fault BEFORE UPDATE OF next_attempt_at ON ${table} BEGIN SELECT RAISE(ABORT, 'injected'); END`,
      );
    });
    await alarm(t.numberId);
    expect(callsFor(t.calls, jobId)).toHaveLength(1);
    // Its retry time comes while the answer is still not committed: no claim (it would find the call unanswered).
    clock.advance(RETRY_POLICY.delaysMs[0] + 100);
    await alarm(t.numberId);
    expect(await testWorkspace(t.workspaceId).storedRecord(jobId)).toMatchObject({ attempts: 1, answered: 0 });
    expect(callsFor(t.calls, jobId)).toHaveLength(1);

    await runInDurableObject(ws, (_, state) => {
      state.storage.sql.exec("DROP TRIGGER retry_fault");
    });
    for (let i = 0; i < 4; i++) {
      clock.advance(20_000);
      await alarm(t.numberId);
    }
    expect(callsFor(t.calls, jobId)).toHaveLength(2);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", outcomeUnknownSince: null });
    await fault.seen();
    await fault.end();
  });
});

describe("the number's window counts what its workspace committed", () => {
  it("a hand-off that never committed (its workspace died between the two) frees its slot: the next two sends of that second are accepted", async () => {
    const t = await liveNumberOnEdge(() => accepted("wamid.X"));
    // What a send whose workspace died after the number's admission and before the commit leaves.
    const orphan = newJobId(clock.now());
    const handed = await testNumber(t.numberId).admit({
      jobId: orphan,
      workspaceId: t.workspaceId,
      channelNumberId: t.numberId,
      to: "5511999998888",
      acceptedAt: clock.now(),
    });
    expect(handed.ok).toBe(true);
    clock.advance(100);
    expect((await send(t.key, "order-1", textMessage(t.numberId, "one"))).status).toBe(201);
    clock.advance(100);
    const other = await send(t.key, "order-2", textMessage(t.numberId, "two", "5511000000001"));
    expect(other.status, `Retry-After ${other.headers.get("retry-after")}`).toBe(201);
    // And the window still holds at two: a third in the same second is refused.
    clock.advance(100);
    expect((await send(t.key, "order-3", textMessage(t.numberId, "three", "5511000000002"))).status).toBe(429);
  });
});
