import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createKey, createWorkspace } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { connectLiveNumber, mockOperator, operatorError } from "../helpers/operator";
import { json } from "../helpers/http";
import { fakeClock } from "../helpers/clock";
import { holdObject, testNumber, testWorkspace } from "../helpers/objects";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";

// A drain session as in production (DRAIN_SESSION_MS 10 s), in real time: a call's answer can
// arrive while the session waits on the next message's claim.

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a hold that begins while a claim is on its way", () => {
  it("the claimed message is not called: its attempt is given back, and nothing reaches the operator during the throttle", async () => {
    // The first call is answered only once the test releases it, with a number-wide throttle
    // ("not processed": 130429); no other call is expected.
    let release = false;
    const calls = mockOperator(async () => {
      while (!release) await new Promise((r) => setTimeout(r, 5));
      return operatorError(429, 130429, "Rate limit hit");
    });
    const clock = fakeClock(Date.now(), { advancing: true });
    const start = Date.UTC(2044, 0, 1) + Math.floor(Math.random() * 1e9);
    const workspaceId = await createWorkspace({ plan: "pro" });
    const { key } = await createKey(workspaceId);
    const number = await connectLiveNumber(workspaceId);
    const jobIds: string[] = [];
    for (let i = 0; i < 2; i++) {
      clock.set(start + i * 600);
      const res = await send(key, `hold-${i}`, textMessage(number.numberId, `m${i}`, `551190000010${i}`));
      expect(res.status).toBe(201);
      jobIds.push((await json<{ jobId: string }>(res)).jobId);
    }
    const [first, second] = jobIds as [string, string];
    clock.set(start + 5_000);
    const session = runDurableObjectAlarm(channelNumberStub(env, number.numberId));
    await vi.waitFor(() => expect(calls).toHaveLength(1), { timeout: 10_000, interval: 10 });

    // The workspace is busy: the second message's claim (due half a second later) waits there.
    const gate = await holdObject(workspaceStub(env, workspaceId));
    await vi.waitFor(
      async () =>
        expect((await testNumber(number.numberId).queued()).find((e) => e.jobId === second)?.state).toBe("calling"),
      { timeout: 5_000, interval: 10 },
    );
    // Meanwhile the first call's answer comes: the number is throttled (its answer waits at the workspace too).
    release = true;
    await vi.waitFor(
      async () => {
        const e = (await testNumber(number.numberId).queued()).find((x) => x.jobId === first);
        expect(e?.state).toBe("queued");
        expect(e!.nextAttemptAt).toBeGreaterThan(Date.now() + 30_000);
      },
      { timeout: 5_000, interval: 10 },
    );
    await gate.release();

    // The claim was granted before the hold; the attempt is given back, and the call never starts.
    await vi.waitFor(
      async () => expect(await testWorkspace(workspaceId).storedRecord(second)).toMatchObject({ attempts: 0 }),
      { timeout: 5_000, interval: 10 },
    );
    expect(calls.map((c) => c.body.text.body)).toEqual(["m0"]);
    await session;
    expect(calls.map((c) => c.body.text.body)).toEqual(["m0"]);
  }, 30_000);
});
