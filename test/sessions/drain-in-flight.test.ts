import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createKey, createWorkspace } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { accepted, connectLiveNumber, mockOperator } from "../helpers/operator";
import { api, json } from "../helpers/http";
import { fakeClock } from "../helpers/clock";
import { channelNumberStub } from "../../src/durable-objects/stubs";
import { MAX_CALLS_IN_FLIGHT, PACE_SPACING_MS } from "../../src/durable-objects/channel-number/delivery-policy";

// A drain session as in production (DRAIN_SESSION_MS 10 s, this project's binding), in real time:
// calls overlap only within a session.

afterEach(() => {
  vi.restoreAllMocks();
});

const TOTAL = MAX_CALLS_IN_FLIGHT + 2;

/**
 * A live number with TOTAL sends queued, 2 a second as the number accepts them, each to its own
 * recipient (no pair pace), bodies `${tag}0`…; the clock then just past them. The clock is in the future
 * (the object's alarm, due by it, fires only when the test runs it) and advances in real time (the
 * session paces and sleeps in real time).
 */
async function queuedSends(tag: string, year: number, recipientPrefix: string) {
  const clock = fakeClock(Date.now(), { advancing: true });
  const start = Date.UTC(year, 0, 1) + Math.floor(Math.random() * 1e9);
  const workspaceId = await createWorkspace({ plan: "pro" });
  const { key } = await createKey(workspaceId);
  const { numberId } = await connectLiveNumber(workspaceId);
  const jobIds: string[] = [];
  for (let i = 0; i < TOTAL; i++) {
    clock.set(start + i * 600);
    const to = `${recipientPrefix}${String(i).padStart(2, "0")}`;
    const res = await send(key, `${tag}-${i}`, textMessage(numberId, `${tag}${i}`, to));
    expect(res.status).toBe(201);
    jobIds.push((await json<{ jobId: string }>(res)).jobId);
  }
  // Just past the last send, no further: a send starts its number's session in memory, and that
  // session's 10 s are counted on this clock (a jump of seconds here left it too little to make its calls).
  clock.set(start + TOTAL * 600);
  return { key, numberId, jobIds };
}

describe("calls waiting on the operator", () => {
  it(`are at most ${MAX_CALLS_IN_FLIGHT} at once: the next one starts when an answer comes, not in the runtime's queue`, async () => {
    expect(env.DRAIN_SESSION_MS).toBe("10000");
    // The operator answers a call only once the test released it. The answer is made in the
    // caller's context (the object's), which polls for its release: an answer created here could
    // not be read there.
    let released = 0;
    const calls = mockOperator(async (c, index) => {
      while (index >= released) await new Promise((r) => setTimeout(r, 5));
      return accepted(`wamid.${c.body.text.body}`);
    });
    const total = TOTAL;
    const { key, numberId, jobIds } = await queuedSends("m", 2043, "55119000000");
    const session = runDurableObjectAlarm(channelNumberStub(env, numberId));

    await vi.waitFor(() => expect(calls).toHaveLength(MAX_CALLS_IN_FLIGHT), { timeout: 10_000, interval: 20 });
    // The next call's pace slot comes PACE_SPACING_MS after the last start; three slots later it
    // still has not started, because every allowed call is waiting on the operator.
    const lastStart = calls.at(-1)!.at;
    await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(lastStart + 3 * PACE_SPACING_MS), {
      timeout: 5_000,
      interval: 20,
    });
    expect(calls).toHaveLength(MAX_CALLS_IN_FLIGHT);

    const answeredAt = Date.now();
    released = 1;
    await vi.waitFor(() => expect(calls).toHaveLength(MAX_CALLS_IN_FLIGHT + 1), { timeout: 5_000, interval: 10 });
    expect(calls.at(-1)!.at - answeredAt).toBeLessThan(PACE_SPACING_MS);

    // Everything answered: the session ends with every message sent, each called once.
    released = total;
    await session;
    // The last ones may start in the session an answer starts after the alarm's ended.
    await vi.waitFor(() => expect(calls).toHaveLength(total), { timeout: 5_000, interval: 10 });
    for (const jobId of jobIds) {
      const res = await api(`/messages/${jobId}`, key);
      expect(await json<{ status: string }>(res)).toMatchObject({ status: "sent" });
    }
    expect(new Set(calls.map((c) => c.body.text.body)).size).toBe(total);
  });

  it("do not slow the number: the next call starts without waiting for the answer to the one before", async () => {
    // The slowest operator there is: it answers a call only once the number's next call has started
    // (the last one at once). A drain that waited for each answer would never start a second call;
    // this one keeps its pace whatever the operator's latency, up to the cap above (6/L calls/s).
    const total = TOTAL;
    const calls = mockOperator(async (c, index) => {
      while (index < total - 1 && calls.length <= index + 1) await new Promise((r) => setTimeout(r, 5));
      return accepted(`wamid.${c.body.text.body}`);
    });
    const { numberId } = await queuedSends("s", 2044, "55119100000");
    await runDurableObjectAlarm(channelNumberStub(env, numberId));

    await vi.waitFor(() => expect(calls).toHaveLength(total), { timeout: 10_000, interval: 20 });
    expect(calls.map((c) => c.body.text.body)).toEqual(Array.from({ length: total }, (_, i) => `s${i}`));
  });
});
