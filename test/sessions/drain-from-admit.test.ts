import { afterEach, describe, expect, it, vi } from "vitest";
import { createKey, createWorkspace } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { accepted, connectLiveNumber, mockOperator } from "../helpers/operator";
import { api, json } from "../helpers/http";
import { fakeClock } from "../helpers/clock";
import { testNumber } from "../helpers/objects";
import { WORK_BACKSTOP_MS } from "../../src/durable-objects/channel-number/channel-number";

// Drain sessions as in production (DRAIN_SESSION_MS 10 s), in real time, on a clock years ahead:
// the object's alarm, due by that clock, never fires on its own here, so every call below was
// started by the send itself.

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a send to a number with sessions in memory", () => {
  it("reaches the operator from the send's own hand-off, without an alarm run; the alarm is only armed, once, as the backstop", async () => {
    const calls = mockOperator((c) => accepted(`wamid.${c.body.text.body}`));
    const clock = fakeClock(Date.now(), { advancing: true });
    const start = Date.UTC(2045, 0, 1) + Math.floor(Math.random() * 1e9);
    const workspaceId = await createWorkspace({ plan: "pro" });
    const { key } = await createKey(workspaceId);
    const number = await connectLiveNumber(workspaceId);
    const jobIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      clock.set(start + i * 600);
      const res = await send(key, `from-admit-${i}`, textMessage(number.numberId, `m${i}`, `551190000010${i}`));
      expect(res.status).toBe(201);
      jobIds.push((await json<{ jobId: string }>(res)).jobId);
      await vi.waitFor(() => expect(calls).toHaveLength(i + 1), { timeout: 5_000, interval: 10 });
    }
    const stub = testNumber(number.numberId);
    expect(await stub.alarmRunCount()).toBe(0);
    // Armed by the first send (the durable sign of work and the pace's lease), not moved by the next two.
    const alarmAt = await stub.alarmAt();
    expect(alarmAt).toBeGreaterThanOrEqual(start + WORK_BACKSTOP_MS);
    expect(alarmAt).toBeLessThan(start + 600 + WORK_BACKSTOP_MS);
    for (const jobId of jobIds)
      await vi.waitFor(
        async () =>
          expect(await json<{ status: string }>(await api(`/messages/${jobId}`, key))).toMatchObject({
            status: "sent",
          }),
        { timeout: 5_000, interval: 20 },
      );
  });
});
