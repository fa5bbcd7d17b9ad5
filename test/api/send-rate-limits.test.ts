import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, api, expectError, json } from "../helpers/http";
import { connectSandboxNumber, createKey, createTenant, createWorkspace } from "../helpers/fixtures";
import { send, textMessage, usedMessages } from "../helpers/send";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { holdObject, settleIo, testNumber, testWorkspace } from "../helpers/objects";
import { fakeClockPerTest } from "../helpers/clock";

/** The number's queue (what it still has to call), oldest first. */
const queuedJobIds = async (numberId: string) => (await testNumber(numberId).queued()).map((e) => e.jobId);

const clock = fakeClockPerTest(Date.UTC(2033, 2, 3, 9), (t) => t + 3_600_000);

describe("per-number limit: 2 per second", () => {
  it("admits at most 2 in any 1-second window, with an exact Retry-After", async () => {
    const t = await createTenant();
    const t0 = clock.now();
    const ok = async (k: string) => expect((await send(t.key, k, textMessage(t.numberId))).status).toBe(201);
    const refused = async (k: string, retryAfter: string) => {
      const res = await send(t.key, k, textMessage(t.numberId));
      expect(res.headers.get("Retry-After")).toBe(retryAfter);
      expect(res.headers.get("RateLimit-Limit")).toBe("2");
      expect(res.headers.get("RateLimit-Remaining")).toBe("0");
      await expectError(res, 429, "rate_limit_exceeded");
    };

    const first = await send(t.key, "m0", textMessage(t.numberId));
    expect(first.headers.get("RateLimit-Remaining")).toBe("1");
    clock.set(t0 + 500);
    await ok("m1");
    clock.set(t0 + 999);
    await refused("m2", "1");
    clock.set(t0 + 1_000); // m0 leaves the window [t0+1, t0+1000]
    await ok("m2");
    clock.set(t0 + 1_001);
    await refused("m3", "1");
    clock.set(t0 + 1_500); // m1 leaves
    await ok("m3");
    // The number's queue holds the four accepted sends.
    expect(await queuedJobIds(t.numberId)).toHaveLength(4);
  });

  it("limits each number separately", async () => {
    const t = await createTenant();
    const second = await connectSandboxNumber(t.workspaceId, "15550004444");
    for (const n of [t.numberId, t.numberId, second, second]) {
      expect((await send(t.key, crypto.randomUUID(), textMessage(n))).status).toBe(201);
    }
    await expectError(await send(t.key, crypto.randomUUID(), textMessage(second)), 429, "rate_limit_exceeded");
  });

  it("a refusal by the number's limit spends nothing of the workspace's window or quota", async () => {
    const t = await createTenant();
    expect((await send(t.key, "n1", textMessage(t.numberId))).status).toBe(201);
    expect((await send(t.key, "n2", textMessage(t.numberId))).status).toBe(201);
    for (let i = 0; i < 5; i++)
      await expectError(await send(t.key, `n-over-${i}`, textMessage(t.numberId)), 429, "rate_limit_exceeded");

    expect((await testWorkspace(t.workspaceId).admissionState()).windowUsed).toBe(2);
    // Also after a restart, when the window is rebuilt from the records.
    await evictDurableObject(workspaceStub(env, t.workspaceId));
    expect((await testWorkspace(t.workspaceId).admissionState()).windowUsed).toBe(2);
    expect(await usedMessages(t.key)).toBe(2);
  });

  it("keeps acceptance order in the number's queue", async () => {
    const t = await createTenant();
    const jobIds: string[] = [];
    for (let i = 0; i < 10; i++) {
      clock.advance(500);
      const res = await send(t.key, `ordered-${i}`, textMessage(t.numberId, `message ${i}`));
      expect(res.status).toBe(201);
      jobIds.push((await json<{ jobId: string }>(res)).jobId);
    }
    expect(await queuedJobIds(t.numberId)).toEqual(jobIds);
  });
});

describe("per-workspace limit: 1200 per minute", () => {
  it("admits at most 1200 in any 60-second window; a refusal by it spends nothing of the numbers' windows", async () => {
    const workspaceId = await createWorkspace({ plan: "scale" });
    const { key } = await createKey(workspaceId);
    const numbers: string[] = [];
    for (let i = 0; i < 100; i++)
      numbers.push(await connectSandboxNumber(workspaceId, `1555100${String(i).padStart(4, "0")}`));
    const spare = numbers.pop()!;

    const t0 = clock.now();
    let accepted = 0;
    // 99 numbers x 2 per second: 1199 sends take a little over 6 seconds.
    const filledNumbers: string[] = [];
    for (let second = 0; accepted < 1199; second++) {
      clock.set(t0 + second * 1_000);
      const batch: string[] = [];
      for (const n of numbers) for (let j = 0; j < 2 && accepted + batch.length < 1199; j++) batch.push(n);
      const results = await Promise.all(batch.map((n) => send(key, crypto.randomUUID(), textMessage(n))));
      expect(results.map((r) => r.status).every((s) => s === 201)).toBe(true);
      accepted += batch.length;
      filledNumbers.splice(0, filledNumbers.length, ...batch);
    }
    const lastSecond = clock.now();

    // 1,199 used. A send to a number whose own window is full waits at that number while
    // another send arrives for the last slot: the refused one must not take it.
    const full = filledNumbers[0]!;
    const gate = await holdObject(channelNumberStub(env, full));
    const refusedByNumber = send(key, "to-full-number", textMessage(full));
    await settleIo();
    const last = send(key, "last-slot", textMessage(spare));
    await settleIo();
    await gate.release();
    await expectError(await refusedByNumber, 429, "rate_limit_exceeded");
    expect((await last).status).toBe(201);

    // The 1201st, on a number with a free window, is refused by the workspace limit.
    clock.set(lastSecond + 1_000);
    const fresh = numbers[numbers.length - 1]!;
    const refused = await send(key, "over", textMessage(fresh));
    expect(refused.headers.get("Retry-After")).toBe(String(Math.ceil((t0 + 60_000 - clock.now()) / 1000)));
    const err = await expectError(refused, 429, "rate_limit_exceeded");
    expect(err.error.message).toMatch(/1200 messages per minute/);

    // Retry-After is the whole number of seconds rounded up: 1.5 s left is 2.
    clock.set(t0 + 58_500);
    expect((await send(key, "over", textMessage(fresh))).headers.get("Retry-After")).toBe("2");
    // Just before the first second's sends leave the window: still refused.
    clock.set(t0 + 59_999);
    await expectError(await send(key, "over", textMessage(fresh)), 429, "rate_limit_exceeded");
    // As soon as they leave, the number has both of its slots: the refusals took none.
    clock.set(t0 + 60_000);
    expect((await send(key, "over", textMessage(fresh))).status).toBe(201);
    expect((await send(key, "over-2", textMessage(fresh))).status).toBe(201);
    expect(await usedMessages(key)).toBe(1202);
  }, 120_000);
});

describe("monthly quota", () => {
  it("refuses at the quota with monthly_message_limit_exceeded and renews on the 1st (UTC)", async () => {
    clock.set(Date.UTC(2034, 0, 31, 23, 59, 58));
    const t = await createTenant({ monthlyMessageQuota: 2 });
    expect((await send(t.key, "q1", textMessage(t.numberId))).status).toBe(201);
    expect((await send(t.key, "q2", textMessage(t.numberId))).status).toBe(201);
    clock.advance(1_000);
    await expectError(await send(t.key, "q3", textMessage(t.numberId)), 429, "monthly_message_limit_exceeded");
    const usage = await json<{ period: { start: string }; messages: { used: number; remaining: number } }>(
      await api("/usage", t.key),
    );
    expect(usage).toMatchObject({ period: { start: "2034-01-01T00:00:00.000Z" }, messages: { used: 2, remaining: 0 } });

    clock.set(Date.UTC(2034, 1, 1, 0, 0, 0));
    expect((await send(t.key, "q3", textMessage(t.numberId))).status).toBe(201);
    const february = await json<{ period: { start: string }; messages: { used: number } }>(await api("/usage", t.key));
    expect(february).toMatchObject({ period: { start: "2034-02-01T00:00:00.000Z" }, messages: { used: 1 } });
  });

  it("a quota change through the admin API applies to the next send", async () => {
    const t = await createTenant({ monthlyMessageQuota: 0 });
    await expectError(await send(t.key, "z", textMessage(t.numberId)), 429, "monthly_message_limit_exceeded");
    // Disconnect applies at once too.
    await admin(`/channel-numbers/${t.numberId}`, { method: "DELETE" });
    await expectError(await send(t.key, "z", textMessage(t.numberId)), 403, "forbidden");
  });
});
