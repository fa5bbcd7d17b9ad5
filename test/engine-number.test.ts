import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { api, json } from "./helpers/http";
import { createKey, createWorkspace } from "./helpers/fixtures";
import { send, textMessage } from "./helpers/send";
import { accepted, connectCloudNumber, mockOperator, operatorError, type OperatorCall } from "./helpers/operator";
import { postOperator, seconds, statusPayload } from "./helpers/operator-webhook";
import { holdObject } from "./helpers/objects";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import { RETRY_POLICY } from "../src/durable-objects/channel-number/delivery-policy";
import type { ChannelNumberDurableObject } from "../src/durable-objects/channel-number/channel-number";

// A clock far in the future: the number's alarm fires only when a test runs it.
let clock = Date.UTC(2048, 0, 1);
const setClock = (ms: number) => {
  clock = ms;
  vi.setSystemTime(clock);
};
const advance = (ms: number) => setClock(clock + ms);
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  setClock(clock + 30 * 24 * 3_600_000);
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

async function cloudTenant() {
  const workspaceId = await createWorkspace({ plan: "pro" });
  const { key } = await createKey(workspaceId);
  const number = await connectCloudNumber(workspaceId);
  return { workspaceId, key, ...number, stub: channelNumberStub(env, number.numberId) };
}

async function sendOne(key: string, numberId: string, to = "5511999998888", body = "Hello"): Promise<string> {
  const res = await send(key, crypto.randomUUID(), textMessage(numberId, body, to));
  expect(res.status).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

const message = async (key: string, jobId: string) => json<Record<string, unknown> & { status: string }>(await api(`/messages/${jobId}`, key));
const callsFor = (calls: OperatorCall[], jobId: string) => calls.filter((c) => c.body.biz_opaque_callback_data === jobId);
const stateOf = async (stub: DurableObjectStub<ChannelNumberDurableObject>, jobId: string) => (await stub.outbox()).find((e) => e.jobId === jobId)?.state;

describe("one operator call per jobId, also when a status settles the entry during the drain's awaits", () => {
  it("a status webhook that settles a retried entry while its claim waits on the workspace: no second call", async () => {
    const t = await cloudTenant();
    // 131000: "try again", but the operator may have processed it after all; its webhook says so later.
    const calls = mockOperator((c, i) => (i === 0 ? operatorError(500, 131000, "Something went wrong") : accepted(`wamid.second-${c.body.text.body}`)));
    const jobId = await sendOne(t.key, t.numberId);
    await runDurableObjectAlarm(t.stub);
    expect(callsFor(calls, jobId)).toHaveLength(1);
    expect(await stateOf(t.stub, jobId)).toBe("queued");

    // The retry is due. Its claim waits on the workspace object (busy), and meanwhile the
    // operator's webhook reports the first call's message as sent.
    advance(RETRY_POLICY.delaysMs[0]);
    const gate = await holdObject(workspaceStub(env, t.workspaceId));
    const alarm = runDurableObjectAlarm(t.stub);
    const res = await postOperator(statusPayload(t.phoneNumberId, [
      { id: "wamid.FIRST", status: "sent", timestamp: seconds(clock), recipient_id: "5511999998888", biz_opaque_callback_data: jobId },
    ]));
    expect(res.status).toBe(200);
    // Positive signal: the number applied it (the entry settled while the claim is still waiting).
    await vi.waitFor(async () => expect(await stateOf(t.stub, jobId)).toBe("sent"), { timeout: 10_000, interval: 20 });
    await gate.release();
    await alarm;
    await vi.waitFor(async () => expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.FIRST" }), { timeout: 10_000, interval: 20 });

    for (let i = 0; i < 3; i++) {
      advance(61_000);
      await runDurableObjectAlarm(t.stub);
    }
    expect(callsFor(calls, jobId)).toHaveLength(1);
    expect(await stateOf(t.stub, jobId)).toBe("sent");
  });

  it("a status that settles the entry while its `sending` state is made durable: the call does not start", async () => {
    const t = await cloudTenant();
    const calls = mockOperator((c, i) => (i === 0 ? operatorError(500, 131000, "Something went wrong") : accepted(`wamid.second-${c.body.text.body}`)));
    const jobId = await sendOne(t.key, t.numberId);
    await runDurableObjectAlarm(t.stub);
    expect(callsFor(calls, jobId)).toHaveLength(1);
    advance(RETRY_POLICY.delaysMs[0]);
    // The operator's status arrives during the durability wait between the `sending` write and the call.
    await runInDurableObject(t.stub, (instance, state) => {
      const sync = state.storage.sync.bind(state.storage);
      let first = true;
      state.storage.sync = async () => {
        await sync();
        if (!first) return;
        first = false;
        await instance.applyOperatorStatuses([{ jobId, upstreamMessageId: "wamid.FIRST", status: "sent", at: clock, errorCode: null, errorMessage: null }]);
      };
    });
    await runDurableObjectAlarm(t.stub);
    for (let i = 0; i < 3; i++) {
      advance(61_000);
      await runDurableObjectAlarm(t.stub);
    }
    expect(callsFor(calls, jobId)).toHaveLength(1);
    expect(await stateOf(t.stub, jobId)).toBe("sent");
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.FIRST" });
  });
});
