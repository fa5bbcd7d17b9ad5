import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { admin, api, expectError, json } from "./helpers/http";

import { send, textMessage } from "./helpers/send";
import {
  accepted,
  cloudTenant as liveTenant,
  mockOperator,
  operatorError,
  recordedEvents,
  type OperatorCall,
} from "./helpers/operator";
import { postOperator, seconds, statusPayload } from "./helpers/operator-webhook";
import { holdObject } from "./helpers/objects";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import {
  HELD_BOUND_MS,
  ORPHAN_GRACE_MS,
  RETRY_POLICY,
  UNCONFIRMED_WAIT_MS,
} from "../src/durable-objects/channel-number/delivery-policy";
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

/** The shared live tenant, with its number object's stub. */
async function cloudTenant() {
  const t = await liveTenant();
  return { ...t, stub: channelNumberStub(env, t.numberId) };
}

async function sendOne(key: string, numberId: string, to = "5511999998888", body = "Hello"): Promise<string> {
  const res = await send(key, crypto.randomUUID(), textMessage(numberId, body, to));
  expect(res.status).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

const message = async (key: string, jobId: string) =>
  json<Record<string, unknown> & { status: string }>(await api(`/messages/${jobId}`, key));
const callsFor = (calls: OperatorCall[], jobId: string) =>
  calls.filter((c) => c.body.biz_opaque_callback_data === jobId);
const stateOf = async (stub: DurableObjectStub<ChannelNumberDurableObject>, jobId: string) =>
  (await stub.outbox()).find((e) => e.jobId === jobId)?.state;

describe("one operator call per jobId, also when a status settles the entry during the drain's awaits", () => {
  it("a status webhook that settles a retried entry while its claim waits on the workspace: no second call", async () => {
    const t = await cloudTenant();
    // 131000: "try again", but the operator may have processed it after all; its webhook says so later.
    const calls = mockOperator((c, i) =>
      i === 0 ? operatorError(500, 131000, "Something went wrong") : accepted(`wamid.second-${c.body.text.body}`),
    );
    const jobId = await sendOne(t.key, t.numberId);
    await runDurableObjectAlarm(t.stub);
    expect(callsFor(calls, jobId)).toHaveLength(1);
    expect(await stateOf(t.stub, jobId)).toBe("queued");

    // The retry is due. Its claim waits on the workspace object (busy), and meanwhile the
    // operator's webhook reports the first call's message as sent.
    advance(RETRY_POLICY.delaysMs[0]);
    const gate = await holdObject(workspaceStub(env, t.workspaceId));
    const alarm = runDurableObjectAlarm(t.stub);
    const res = await postOperator(
      statusPayload(t.phoneNumberId, [
        {
          id: "wamid.FIRST",
          status: "sent",
          timestamp: seconds(clock),
          recipient_id: "5511999998888",
          biz_opaque_callback_data: jobId,
        },
      ]),
    );
    expect(res.status).toBe(200);
    // Positive signal: the number applied it (the entry settled while the claim is still waiting).
    await vi.waitFor(async () => expect(await stateOf(t.stub, jobId)).toBe("sent"), { timeout: 10_000, interval: 20 });
    await gate.release();
    await alarm;
    await vi.waitFor(
      async () =>
        expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.FIRST" }),
      { timeout: 10_000, interval: 20 },
    );

    for (let i = 0; i < 3; i++) {
      advance(61_000);
      await runDurableObjectAlarm(t.stub);
    }
    expect(callsFor(calls, jobId)).toHaveLength(1);
    expect(await stateOf(t.stub, jobId)).toBe("sent");
  });

  it("a status that settles the entry while its `sending` state is made durable: the call does not start", async () => {
    const t = await cloudTenant();
    const calls = mockOperator((c, i) =>
      i === 0 ? operatorError(500, 131000, "Something went wrong") : accepted(`wamid.second-${c.body.text.body}`),
    );
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
        await instance.applyOperatorStatuses([
          { jobId, upstreamMessageId: "wamid.FIRST", status: "sent", at: clock, errorCode: null, errorMessage: null },
        ]);
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

describe("the number's admission window", () => {
  it("counts in acceptance times: acceptances at 0, 10 and 960 ms are refused at the third, however late its hand-off arrives", async () => {
    const t = await cloudTenant();
    const t0 = clock;
    expect((await send(t.key, "w0", textMessage(t.numberId, "m0"))).status).toBe(201);
    setClock(t0 + 10);
    expect((await send(t.key, "w1", textMessage(t.numberId, "m1"))).status).toBe(201);
    // The third is accepted by the workspace at 960 ms; its hand-off reaches the number at 1,200 ms
    // (the number's clock), as the workspace makes it.
    setClock(t0 + 1_200);
    const third = await t.stub.admit({
      jobId: crypto.randomUUID(),
      workspaceId: t.workspaceId,
      channelNumberId: t.numberId,
      to: "5511999998888",
      body: "m2",
      acceptedAt: t0 + 960,
    });
    // Its slot frees when the send at 0 leaves the window: 40 ms after its acceptance (Retry-After: 1).
    expect(third).toEqual({
      ok: false,
      reason: "rate_limited",
      window: { limit: 2, remaining: 0, retryAfterMs: 40, resetMs: 50 },
    });
    expect(await t.stub.outboxJobIds()).toHaveLength(2);
    // The API's refusal at the same acceptance time says the same.
    setClock(t0 + 960);
    const res = await send(t.key, "w2", textMessage(t.numberId, "m2"));
    expect(res.headers.get("Retry-After")).toBe("1");
    await expectError(res, 429, "rate_limit_exceeded");
  });
});

describe("operator statuses for a disconnected number", () => {
  it("still reach the message record: a delivery report after the disconnect is applied", async () => {
    const t = await cloudTenant();
    mockOperator(() => accepted("wamid.BEFORE"));
    const jobId = await sendOne(t.key, t.numberId);
    await runDurableObjectAlarm(t.stub);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent" });
    expect((await admin(`/channel-numbers/${t.numberId}`, { method: "DELETE" })).status).toBeLessThan(300);
    advance(5_000);
    const res = await postOperator(
      statusPayload(t.phoneNumberId, [
        {
          id: "wamid.BEFORE",
          status: "delivered",
          timestamp: seconds(clock),
          recipient_id: "5511999998888",
          biz_opaque_callback_data: jobId,
        },
      ]),
    );
    expect(res.status).toBe(200);
    await vi.waitFor(
      async () =>
        expect(await message(t.key, jobId)).toMatchObject({
          status: "sent",
          deliveredAt: new Date(Math.floor(clock / 1000) * 1000).toISOString(),
        }),
      {
        timeout: 10_000,
        interval: 50,
      },
    );
  });
});

describe("orphans", () => {
  const orphan = async (t: Awaited<ReturnType<typeof cloudTenant>>, jobId: string) => {
    // What a send that died after its hand-off leaves behind: an entry its workspace never recorded.
    await t.stub.admit({
      jobId,
      workspaceId: t.workspaceId,
      channelNumberId: t.numberId,
      to: "5511999998888",
      body: "Hello",
      acceptedAt: clock,
    });
    const acceptedAt = clock;
    advance(UNCONFIRMED_WAIT_MS + 1);
    await runDurableObjectAlarm(t.stub);
    expect(await stateOf(t.stub, jobId)).toBe("orphan");
    return acceptedAt;
  };

  it("one alarm at its due time (acceptance + grace) drops an orphan", async () => {
    const t = await cloudTenant();
    const calls = mockOperator(() => accepted("wamid.never"));
    const jobId = crypto.randomUUID();
    const acceptedAt = await orphan(t, jobId);
    setClock(acceptedAt + ORPHAN_GRACE_MS);
    const due = await runInDurableObject(t.stub, (_, state) => state.storage.getAlarm());
    expect(due).toBe(acceptedAt + ORPHAN_GRACE_MS);
    await runDurableObjectAlarm(t.stub);
    expect(await stateOf(t.stub, jobId)).toBe("dropped");
    expect(calls).toHaveLength(0);
  });

  it("a revived orphan gets a fresh grace: a claim before its retry's commit does not set it aside again", async () => {
    const t = await cloudTenant();
    const calls = mockOperator(() => accepted("wamid.REVIVED"));
    const { jobIdFor } = await import("./helpers/send");
    const jobId = await jobIdFor(t.workspaceId, "retry-me", textMessage(t.numberId), clock);
    const acceptedAt = await orphan(t, jobId);
    // The client's retry, late in the grace: its hand-off revives the entry; the drain asks the workspace
    // before the retry's record is committed there (microseconds later in production).
    setClock(acceptedAt + ORPHAN_GRACE_MS - UNCONFIRMED_WAIT_MS / 2);
    await t.stub.admit({
      jobId,
      workspaceId: t.workspaceId,
      channelNumberId: t.numberId,
      to: "5511999998888",
      body: "Hello",
      acceptedAt: clock,
    });
    await runDurableObjectAlarm(t.stub);
    expect(await stateOf(t.stub, jobId)).toBe("queued");
    // Past the first acceptance's grace, still within the revived one's.
    setClock(acceptedAt + ORPHAN_GRACE_MS + 1);
    await runDurableObjectAlarm(t.stub);
    expect(await stateOf(t.stub, jobId)).toBe("queued");
    // The retry commits (same key, same jobId); the message is sent once.
    const retry = await send(t.key, "retry-me", textMessage(t.numberId));
    expect(await json(retry)).toEqual({ jobId, status: "created" });
    advance(1_000); // past the recheck of the unconfirmed claim
    await runDurableObjectAlarm(t.stub);
    expect(callsFor(calls, jobId)).toHaveLength(1);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.REVIVED" });
  });
});

describe("messages held by a paused number", () => {
  /** A number whose first call is refused with 190 (bad token): it pauses; later calls are accepted. */
  async function pausedNumber() {
    const t = await cloudTenant();
    const calls = mockOperator((c, i) =>
      i === 0 ? operatorError(401, 190, "Invalid OAuth access token") : accepted(`wamid.${c.body.text.body}`),
    );
    const first = await sendOne(t.key, t.numberId, "5511999998888", "first");
    const acceptedAt = clock;
    await runDurableObjectAlarm(t.stub);
    expect((await t.stub.sendingState()).paused).toMatchObject({ code: "upstream_auth_failed" });
    expect(await stateOf(t.stub, first)).toBe("queued");
    return { ...t, calls, first, acceptedAt };
  }

  it("fail with held_too_long at their bound, with their failed event, and are not called again", async () => {
    const t = await pausedNumber();
    const callsBefore = callsFor(t.calls, t.first).length;
    // At its bound the alarm fails it; the pause's probe (due long before, accepted by the operator now) does not call it.
    setClock(t.acceptedAt + HELD_BOUND_MS);
    await runDurableObjectAlarm(t.stub);
    expect(await stateOf(t.stub, t.first)).toBe("failed");
    expect(callsFor(t.calls, t.first)).toHaveLength(callsBefore);
    expect(await message(t.key, t.first)).toMatchObject({
      status: "failed",
      failedAt: new Date(clock).toISOString(),
      error: { code: "held_too_long", retriable: true, upstreamCode: null },
    });
    const events = await recordedEvents(workspaceStub(env, t.workspaceId), t.first);
    expect(events.map((e) => e.type === "message.status" && [e.data.previousStatus, e.data.status])).toEqual([
      ["queued", "processing"],
      ["processing", "failed"],
    ]);
    // Resumed later, the number has nothing left to send for it.
    await t.stub.invalidateNumber();
    advance(61_000);
    await runDurableObjectAlarm(t.stub);
    expect(callsFor(t.calls, t.first)).toHaveLength(callsBefore);
  });

  it("a held message whose workspace record is gone is logged and failed, never dropped", async () => {
    const t = await pausedNumber();
    advance(1_000);
    const held = await sendOne(t.key, t.numberId, "5511000000002", "held");
    // The workspace loses the record meanwhile.
    await runInDurableObject(workspaceStub(env, t.workspaceId), (_, state) => {
      state.storage.sql.exec("DELETE FROM messages WHERE id = ?", held);
    });
    const errors = vi.spyOn(console, "error");
    // Hours later the number's credentials are reconnected: it resumes.
    advance(3 * 3_600_000);
    await t.stub.invalidateNumber();
    for (let i = 0; i < 3; i++) {
      await runDurableObjectAlarm(t.stub);
      advance(ORPHAN_GRACE_MS);
    }
    expect(await stateOf(t.stub, held)).toBe("failed");
    expect(callsFor(t.calls, held)).toHaveLength(0);
    expect(
      errors.mock.calls.some(
        ([line]) => String(line).includes("record cannot be found") && String(line).includes(held),
      ),
    ).toBe(true);
    // The one whose record is there was sent.
    expect(await message(t.key, t.first)).toMatchObject({ status: "sent" });
  });
});
