import { abortAllDurableObjects, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, json } from "./helpers/http";
import { send, textMessage } from "./helpers/send";
import { accepted, operatorError, type OperatorCall } from "./helpers/operator";
import { postOperator, seconds, statusPayload } from "./helpers/operator-webhook";
import { holdObject, settleIo, testNumber } from "./helpers/objects";
import { liveCloudNumber } from "./helpers/number-edge";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import { RETRY_POLICY } from "../src/durable-objects/channel-number/delivery-policy";
import { newJobId } from "../src/domain/job-id";
import { fakeClockPerTest } from "./helpers/clock";

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
const tryAgainFirst: Parameters<typeof liveCloudNumber>[0] = (_, i) =>
  i === 0 ? operatorError(500, 131000, "Something went wrong") : accepted("wamid.SECOND");

describe("a retry's claim is decided by the record as the workspace holds it then", () => {
  it("the operator's `sent` report arrives before the retry's claim: no second call, the record is sent, announced once", async () => {
    const t = await liveCloudNumber(tryAgainFirst);
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
    const t = await liveCloudNumber(tryAgainFirst);
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
    const t = await liveCloudNumber((_, i) =>
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
    const t = await liveCloudNumber((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
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
