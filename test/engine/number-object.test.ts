import { abortAllDurableObjects, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { admin, api, expectError, json } from "../helpers/http";
import { send, textMessage } from "../helpers/send";
import { accepted, operatorError, type OperatorCall } from "../helpers/operator";
import { inboundPayload, postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { crashObject, testNumber } from "../helpers/objects";
import { expectRuntimeLog } from "../helpers/runtime-log";
import { liveNumberOnEdge } from "../helpers/number-edge";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { createSlotIndexes, slotOf, slotTable } from "../../src/durable-objects/workspace/day-tables";
import { uuidV7Time } from "../../src/lib/job-id";
import { HELD_BOUND_MS, PACE_CALLS, PACE_WINDOW_MS } from "../../src/durable-objects/channel-number/delivery-policy";
import { fakeClockPerTest } from "../helpers/clock";

// A clock far in the future: the number's alarm fires only when a test runs it.
const clock = fakeClockPerTest(Date.UTC(2048, 0, 1), (t) => t + 30 * 24 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

/** A live number (liveNumberOnEdge) and its object's stub. */
async function liveNumber(reply: Parameters<typeof liveNumberOnEdge>[0]) {
  const t = await liveNumberOnEdge(reply);
  return { ...t, stub: channelNumberStub(env, t.numberId) };
}

async function sendOne(key: string, numberId: string, to = "5511999998888", body = "Hello"): Promise<string> {
  const res = await send(key, crypto.randomUUID(), textMessage(numberId, body, to));
  expect(res.status).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

const alarm = (numberId: string) => runDurableObjectAlarm(channelNumberStub(env, numberId));
const message = async (key: string, jobId: string) =>
  json<Record<string, unknown> & { status: string }>(await api(`/messages/${jobId}`, key));
const callsFor = (calls: OperatorCall[], jobId: string) =>
  calls.filter((c) => c.body.biz_opaque_callback_data === jobId);
const queuedIds = async (numberId: string) => (await testNumber(numberId).queued()).map((e) => e.jobId);

describe("the number's admission window", () => {
  it("counts in acceptance times: acceptances at 0, 10 and 960 ms are refused at the third, however late its hand-off arrives", async () => {
    const t = await liveNumber(() => accepted("wamid.unused"));
    const t0 = clock.now();
    expect((await send(t.key, "w0", textMessage(t.numberId, "m0"))).status).toBe(201);
    clock.set(t0 + 10);
    expect((await send(t.key, "w1", textMessage(t.numberId, "m1"))).status).toBe(201);
    // The third is accepted by the workspace at 960 ms; its hand-off reaches the number at 1,200 ms
    // (the number's clock), as the workspace makes it.
    clock.set(t0 + 1_200);
    const third = await testNumber(t.numberId).admit({
      jobId: crypto.randomUUID(),
      workspaceId: t.workspaceId,
      channelNumberId: t.numberId,
      to: "5511999998888",
      acceptedAt: t0 + 960,
    });
    // Its slot frees when the send at 0 leaves the window: 40 ms after its acceptance (Retry-After: 1).
    expect(third).toEqual({
      ok: false,
      reason: "rate_limited",
      window: { limit: 2, remaining: 0, retryAfterMs: 40, resetMs: 50 },
    });
    expect(await queuedIds(t.numberId)).toHaveLength(2);
    // The API's refusal at the same acceptance time says the same.
    clock.set(t0 + 960);
    const res = await send(t.key, "w2", textMessage(t.numberId, "m2"));
    expect(res.headers.get("Retry-After")).toBe("1");
    await expectError(res, 429, "rate_limit_exceeded");
  });

  it("survives a restart of the number object: the workspace hands it the second's acceptances with the next send", async () => {
    const t = await liveNumber(() => accepted("wamid.unused"));
    const t0 = clock.now();
    // Two sends accepted in the same millisecond: both slots of the number's second.
    const both = await Promise.all(["r0", "r1"].map((k) => send(t.key, k, textMessage(t.numberId, k))));
    expect(both.map((r) => r.status)).toEqual([201, 201]);
    // The number restarts: its window (in memory) is gone with the instance.
    await evictDurableObject(t.stub);
    clock.set(t0 + 500);
    const refused = await send(t.key, "r2", textMessage(t.numberId, "r2"));
    expect(refused.headers.get("Retry-After")).toBe("1");
    expect(refused.headers.get("RateLimit-Remaining")).toBe("0");
    await expectError(refused, 429, "rate_limit_exceeded");
    // Both leave the window at 1,000 ms: two slots, then none.
    clock.set(t0 + 1_000);
    for (const k of ["r2", "r3"]) expect((await send(t.key, k, textMessage(t.numberId, k))).status).toBe(201);
    await expectError(await send(t.key, "r4", textMessage(t.numberId, "r4")), 429, "rate_limit_exceeded");
    expect(await queuedIds(t.numberId)).toHaveLength(4);
  });
});

describe("operator statuses for a disconnected number", () => {
  it("still reach the message record: a delivery report after the disconnect is applied", async () => {
    const t = await liveNumber(() => accepted("wamid.BEFORE"));
    const jobId = await sendOne(t.key, t.numberId);
    await alarm(t.numberId);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent" });
    expect((await admin(`/channel-numbers/${t.numberId}`, { method: "DELETE" })).status).toBeLessThan(300);
    clock.advance(5_000);
    const res = await postOperator(
      statusPayload(t.phoneNumberId, [
        {
          id: "wamid.BEFORE",
          status: "delivered",
          timestamp: seconds(clock.now()),
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
          deliveredAt: new Date(Math.floor(clock.now() / 1000) * 1000).toISOString(),
        }),
      { timeout: 10_000, interval: 50 },
    );
  });
});

describe("a disconnected number", () => {
  it("fails its queued messages with number_disconnected, announces each, and calls none", async () => {
    const t = await liveNumber(() => accepted("wamid.never"));
    const first = await sendOne(t.key, t.numberId, "5511000000001", "one");
    const second = await sendOne(t.key, t.numberId, "5511000000002", "two");
    clock.advance(1_000);
    const third = await sendOne(t.key, t.numberId, "5511000000001", "three");
    expect((await admin(`/channel-numbers/${t.numberId}`, { method: "DELETE" })).status).toBeLessThan(300);
    for (let i = 0; i < 3; i++) {
      await alarm(t.numberId);
      clock.advance(1_100);
    }
    expect(t.calls).toHaveLength(0);
    for (const jobId of [first, second, third]) {
      expect(await message(t.key, jobId)).toMatchObject({ status: "failed", error: { code: "number_disconnected" } });
      expect((await t.hook.waitForStatus(jobId, "failed")).data).toMatchObject({
        error: { code: "number_disconnected" },
      });
    }
    expect(await queuedIds(t.numberId)).toEqual([]);
    // Each change announced once (a message failed before its call goes through processing at its failure).
    await t.hook.settled();
    for (const jobId of [first, second, third])
      expect(t.hook.statusChanges(jobId)).toEqual([
        ["queued", "processing"],
        ["processing", "failed"],
      ]);
  });
});

describe("messages held by a paused number", () => {
  it("fail with held_too_long 24 hours after their acceptance, announced to the webhook; those accepted during the pause are never called", async () => {
    // The business account is locked: the operator refuses every call with an account-level code.
    const t = await liveNumber(() => operatorError(400, 131031, "Business account locked"));
    const first = await sendOne(t.key, t.numberId, "5511000000001", "first");
    const firstAt = clock.now();
    await alarm(t.numberId);
    expect(callsFor(t.calls, first)).toHaveLength(1);
    expect((await testNumber(t.numberId).sendingState()).paused).toMatchObject({
      code: "account_restricted",
      upstreamCode: "131031",
    });
    // Sends go on being accepted while the number is paused; they wait.
    clock.advance(1_000);
    const second = await sendOne(t.key, t.numberId, "5511000000002", "second");
    const secondAt = clock.now();
    const third = await sendOne(t.key, t.numberId, "5511000000003", "third");

    // The pause probes the account (a call of the oldest message) at growing intervals, refused each time.
    for (let h = 1; h < 24; h++) {
      clock.set(firstAt + h * 3_600_000);
      await alarm(t.numberId);
    }
    expect(callsFor(t.calls, first).length).toBeGreaterThan(1);
    expect(t.calls.every((c) => c.body.biz_opaque_callback_data === first)).toBe(true);
    for (const jobId of [first, second, third]) expect((await message(t.key, jobId)).status).not.toBe("failed");

    // 24 hours after its acceptance the first fails, without another call.
    const probes = callsFor(t.calls, first).length;
    clock.set(firstAt + HELD_BOUND_MS);
    await alarm(t.numberId);
    expect(callsFor(t.calls, first)).toHaveLength(probes);
    expect(await message(t.key, first)).toMatchObject({
      status: "failed",
      failedAt: new Date(clock.now()).toISOString(),
      error: { code: "held_too_long", retriable: true, upstreamCode: null },
    });
    expect((await t.hook.waitForStatus(first, "failed")).data).toMatchObject({
      previousStatus: "processing",
      error: { code: "held_too_long" },
    });

    // Then the others, at theirs; neither was ever called.
    clock.set(secondAt + HELD_BOUND_MS);
    await alarm(t.numberId);
    for (const jobId of [second, third]) {
      expect(await message(t.key, jobId)).toMatchObject({
        status: "failed",
        failedAt: new Date(clock.now()).toISOString(),
        error: { code: "held_too_long" },
      });
      expect((await t.hook.waitForStatus(jobId, "failed")).data).toMatchObject({ error: { code: "held_too_long" } });
      expect(callsFor(t.calls, jobId)).toHaveLength(0);
    }
    expect(await queuedIds(t.numberId)).toEqual([]);

    // Resumed later (its credentials reconnected), the number has nothing left to send for them.
    await testNumber(t.numberId).invalidateNumber();
    clock.advance(61_000);
    await alarm(t.numberId);
    expect(t.calls).toHaveLength(probes);
    await t.hook.settled();
    expect(t.hook.statusChanges(first)).toEqual([
      ["queued", "processing"],
      ["processing", "failed"],
    ]);
    for (const jobId of [second, third])
      expect(t.hook.statusChanges(jobId)).toEqual([
        ["queued", "processing"],
        ["processing", "failed"],
      ]);
  });
});

describe("after a restart of the number object", () => {
  it("its queued messages are reloaded from the workspace's records and sent, in acceptance order per recipient", async () => {
    const t = await liveNumber((c) => accepted(`wamid.${c.body.text.body}`));
    const sent: { to: string; jobId: string }[] = [];
    for (let i = 0; i < 6; i++) {
      const to = i % 2 === 0 ? "5511000000001" : "5511000000002";
      sent.push({ to, jobId: await sendOne(t.key, t.numberId, to, `m${i}`) });
      clock.advance(500);
    }
    expect(await queuedIds(t.numberId)).toHaveLength(6);
    // The number restarts before calling any: its queue (in memory) is gone; its alarm is still armed.
    await evictDurableObject(t.stub);

    for (let i = 0; i < 20 && t.calls.length < 6; i++) {
      await alarm(t.numberId);
      clock.advance(600);
    }
    expect(t.calls).toHaveLength(6);
    for (const to of ["5511000000001", "5511000000002"]) {
      expect(t.calls.filter((c) => c.body.to === `+${to}`).map((c) => c.body.biz_opaque_callback_data)).toEqual(
        sent.filter((s) => s.to === to).map((s) => s.jobId),
      );
    }
    for (const { jobId } of sent) expect(await message(t.key, jobId)).toMatchObject({ status: "sent" });
    expect(new Set(t.calls.map((c) => c.body.biz_opaque_callback_data)).size).toBe(6);
  });
});

describe("a rebuild of the queue that fails", () => {
  it("holds the drain until it succeeds: an older message waiting on its retry still leaves before a newer one to the same recipient", async () => {
    const t = await liveNumber((c, i) =>
      i === 0 ? operatorError(500, 131000, "Something went wrong") : accepted(`wamid.${c.body.text.body}`),
    );
    const first = await sendOne(t.key, t.numberId, "5511999998888", "FIRST");
    await alarm(t.numberId); // FIRST: 131000, retried a second later (its record keeps the work)
    // Its slot table is small (no indexes yet): it gets them, and the restarted workspace names them.
    const table = slotTable(slotOf(uuidV7Time(first)!));
    await runInDurableObject(workspaceStub(env, t.workspaceId), (_, state) => {
      createSlotIndexes(state.storage.sql, slotOf(uuidV7Time(first)!));
    });
    await abortAllDurableObjects(); // the number restarts: its queue is gone

    // The rebuild fails for a while (the workspace's work list cannot be read), and a newer message
    // to the same recipient arrives meanwhile.
    const fault = await expectRuntimeLog(/no such index/);
    await runInDurableObject(workspaceStub(env, t.workspaceId), (_, state) => {
      state.storage.sql.exec(`DROP INDEX ${table}_work`);
    });
    clock.advance(2_000);
    await sendOne(t.key, t.numberId, "5511999998888", "SECOND");
    for (let i = 0; i < 3; i++) {
      await alarm(t.numberId);
      clock.advance(61_000);
    }
    // Nothing left while the queue is not rebuilt.
    expect(t.calls.map((c) => c.body.text.body)).toEqual(["FIRST"]);

    await runInDurableObject(workspaceStub(env, t.workspaceId), (_, state) => {
      state.storage.sql.exec(
        `CREATE INDEX IF NOT EXISTS ${table}_work ON ${table} (channel_number_id, id) WHERE pending = 1`,
      );
    });
    for (let i = 0; i < 4; i++) {
      await testNumber(t.numberId).armAlarm();
      await alarm(t.numberId);
      clock.advance(61_000);
    }
    expect(t.calls.map((c) => c.body.text.body)).toEqual(["FIRST", "FIRST", "SECOND"]);
    await fault.seen();
    await fault.end();
  });
});

describe("a conversation's order", () => {
  it("messages to one recipient accepted within the same millisecond are called in acceptance order", async () => {
    const t = await liveNumber((c) => accepted(`wamid.${c.body.text.body}`));
    const jobIds: string[] = [];
    // Each second, two sends in the same millisecond (the number's 2 per second), one after the other.
    for (let s = 0; s < 8; s++) {
      for (let i = 0; i < 2; i++) jobIds.push(await sendOne(t.key, t.numberId, "5511999998888", `m${s}.${i}`));
      clock.advance(1_000);
    }
    for (let i = 0; i < 40 && t.calls.length < jobIds.length; i++) {
      await alarm(t.numberId);
      clock.advance(600);
    }
    expect(t.calls.map((c) => c.body.biz_opaque_callback_data)).toEqual(jobIds);
  });
});

/** The most call starts any window of the pace holds. */
function busiestWindow(starts: number[]): number {
  const sorted = [...starts].sort((a, b) => a - b);
  return Math.max(0, ...sorted.map((t) => sorted.filter((u) => u >= t && u < t + PACE_WINDOW_MS).length));
}

describe("the pace across a restart of the number object", () => {
  /** Three messages accepted before t0 (the admission window allows them), called at t0 and t0 + 505 ms. */
  async function twoCallsThenOneQueued(t: Awaited<ReturnType<typeof liveNumber>>, t0: number): Promise<string> {
    const ids: string[] = [];
    for (const [i, at] of [-2_000, -1_400, -800].entries()) {
      clock.set(t0 + at);
      ids.push(await sendOne(t.key, t.numberId, `551199999000${i}`));
    }
    clock.set(t0);
    await alarm(t.numberId);
    clock.set(t0 + 505);
    await testNumber(t.numberId).armAlarm();
    await alarm(t.numberId);
    expect(t.calls).toHaveLength(PACE_CALLS);
    // The lease: the alarm stays armed while the latest call is less than a window old.
    expect(await testNumber(t.numberId).alarmAt()).not.toBeNull();
    return ids[2]!;
  }

  it("a send to the restarted instance right after two calls waits a whole window: never three calls in one", async () => {
    const t = await liveNumber(() => accepted("wamid.paced"));
    const t0 = clock.now() + 10_000;
    const third = await twoCallsThenOneQueued(t, t0);
    await crashObject(t.stub, "restart");
    clock.set(t0 + 600);
    const fourth = await sendOne(t.key, t.numberId, "5511999990009");
    await alarm(t.numberId);
    expect(t.calls).toHaveLength(PACE_CALLS);
    clock.set(t0 + 600 + PACE_WINDOW_MS - 1);
    await alarm(t.numberId);
    expect(t.calls).toHaveLength(PACE_CALLS);
    for (let i = 0; i < 4; i++) {
      clock.set(t0 + 600 + PACE_WINDOW_MS + i * 505);
      await testNumber(t.numberId).armAlarm();
      await alarm(t.numberId);
    }
    expect(callsFor(t.calls, third)).toHaveLength(1);
    expect(callsFor(t.calls, fourth)).toHaveLength(1);
    expect(busiestWindow(t.calls.map((c) => c.at))).toBe(PACE_CALLS);
  });

  it("an instance started for its alarm counts the earlier instance's calls too, even when its constructor saw no alarm", async () => {
    const t = await liveNumber(() => accepted("wamid.paced"));
    const t0 = clock.now() + 10_000;
    const third = await twoCallsThenOneQueued(t, t0);
    // The runtime may hide an alarm being delivered from the constructor of the instance it starts
    // for it: here the new instance's constructor finds none (cleared before the restart, set again after).
    await testNumber(t.numberId).clearAlarm();
    await crashObject(t.stub, "restart");
    clock.set(t0 + 700);
    await testNumber(t.numberId).armAlarm();
    expect(await alarm(t.numberId)).toBe(true);
    expect(t.calls).toHaveLength(PACE_CALLS);
    clock.set(t0 + 700 + PACE_WINDOW_MS);
    await testNumber(t.numberId).armAlarm();
    await alarm(t.numberId);
    expect(callsFor(t.calls, third)).toHaveLength(1);
    expect(busiestWindow(t.calls.map((c) => c.at))).toBe(PACE_CALLS);
  });

  it("a number whose only alarm is far ahead (a contact's expiry) wakes without delay: its first reply is called at once", async () => {
    const t = await liveNumber(() => accepted("wamid.reply"));
    const from = "5511912345678";
    const inbound = inboundPayload(
      t.phoneNumberId,
      [{ from, id: "wamid.IN.quiet", timestamp: seconds(clock.now()), type: "text", text: { body: "hi" } }],
      [{ wa_id: from, profile: { name: "Ana" } }],
    );
    expect((await postOperator(inbound)).status).toBe(200);
    const armed = await testNumber(t.numberId).alarmAt();
    expect(armed).toBeGreaterThan(clock.now() + 3_600_000);
    await crashObject(t.stub, "idle eviction");
    const reply = await sendOne(t.key, t.numberId, from, "reply");
    await alarm(t.numberId);
    expect(callsFor(t.calls, reply)).toHaveLength(1);
  });

  it("the lease ends a window after the last call: an idle number's alarm is then cleared", async () => {
    const t = await liveNumber(() => accepted("wamid.idle"));
    const t0 = clock.now();
    await sendOne(t.key, t.numberId);
    await alarm(t.numberId);
    expect(await testNumber(t.numberId).alarmAt()).not.toBeNull();
    clock.set(t0 + PACE_WINDOW_MS);
    await alarm(t.numberId);
    expect(await testNumber(t.numberId).alarmAt()).toBeNull();
  });
});

describe("what a number keeps", () => {
  it("an object no number row names, woken by an alarm, has nothing to rebuild and arms no other alarm", async () => {
    const stub = testNumber(crypto.randomUUID());
    await stub.armAlarm();
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.alarmAt()).toBeNull();
    expect(await stub.tableNames()).toEqual([]);
  });

  it("a live number that only sends keeps no table: nothing after a send is sent, delivered and read", async () => {
    const t = await liveNumber(() =>
      Response.json({
        messaging_product: "whatsapp",
        contacts: [{ input: "+5511999998888", wa_id: "5511999998888" }],
        messages: [{ id: "wamid.KEEPS" }],
      }),
    );
    const jobId = await sendOne(t.key, t.numberId);
    await alarm(t.numberId);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.KEEPS" });
    for (const status of ["delivered", "read"]) {
      clock.advance(1_000);
      const res = await postOperator(
        statusPayload(t.phoneNumberId, [
          {
            id: "wamid.KEEPS",
            status,
            timestamp: seconds(clock.now()),
            recipient_id: "5511999998888",
            biz_opaque_callback_data: jobId,
          },
        ]),
      );
      expect(res.status).toBe(200);
    }
    expect(await message(t.key, jobId)).toMatchObject({
      status: "sent",
      deliveredAt: expect.any(String),
      readAt: expect.any(String),
    });
    clock.advance(61_000);
    await alarm(t.numberId);
    expect(t.calls).toHaveLength(1);
    expect(await testNumber(t.numberId).tableNames()).toEqual([]);
  });
});
