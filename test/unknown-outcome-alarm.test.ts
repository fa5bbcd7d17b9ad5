import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, json } from "./helpers/http";
import { send, textMessage } from "./helpers/send";
import { cloudTenant, mockOperator } from "./helpers/operator";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import { fakeClockPerTest } from "./helpers/clock";

// A future clock: the objects' alarms fire only when the test runs them.
const clock = fakeClockPerTest(Date.UTC(2041, 0, 1), (t) => t + 24 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

/** Whether `p` settles within `ms` of real time. */
const settlesWithin = (p: Promise<unknown>, ms: number): Promise<boolean> =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe("unknown outcomes when events are packed (EVENT_PUBLISH_DELAY_MS > 0, as in production)", () => {
  it("the alarm that fails an expired unknown outcome publishes its event and ends, with no other call into the object", async () => {
    // Found by `npm run soak`: the expiry step waited for the publisher's next flush, which only the
    // next alarm (or a call into the object) makes; the next alarm never starts while this one runs, so
    // once the load stopped the message's `failed` event never left and the alarm never ended: the
    // next unknown outcomes of the workspace stayed `processing` for good.
    const vars = env as unknown as Record<string, string>;
    const before = { delay: vars.EVENT_PUBLISH_DELAY_MS, window: vars.UNKNOWN_OUTCOME_WINDOW_MS };
    vars.EVENT_PUBLISH_DELAY_MS = "1000";
    vars.UNKNOWN_OUTCOME_WINDOW_MS = "60000";
    try {
      // Objects created now read these vars in their constructors.
      const t = await cloudTenant();
      const calls = mockOperator(() => Promise.reject(new TypeError("Network connection lost.")));
      const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Hello", "5511999998888"));
      expect(res.status).toBe(201);
      const { jobId } = await json<{ jobId: string }>(res);
      await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
      expect(calls).toHaveLength(1);
      // The packed events of the claim and its answer leave with the workspace's next alarm.
      clock.advance(1_000);
      await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
      expect(await json(await api(`/messages/${jobId}`, t.key))).toMatchObject({
        status: "processing",
        outcomeUnknownSince: expect.any(String),
      });

      clock.advance(60_000);
      const ran = settlesWithin(runDurableObjectAlarm(workspaceStub(env, t.workspaceId)), 5_000);
      expect(await ran).toBe(true);
      expect(await json(await api(`/messages/${jobId}`, t.key))).toMatchObject({
        status: "failed",
        error: { code: "upstream_outcome_unknown" },
      });
      expect(calls).toHaveLength(1);
    } finally {
      vars.EVENT_PUBLISH_DELAY_MS = before.delay!;
      vars.UNKNOWN_OUTCOME_WINDOW_MS = before.window!;
    }
  });
});
