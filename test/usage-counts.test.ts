import { createExecutionContext, createMessageBatch, getQueueResult, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../src/index";
import { createTenant } from "./helpers/fixtures";
import { send, textMessage } from "./helpers/send";
import { workspaceStub } from "../src/durable-objects/stubs";
import type { UsageCountMessage } from "../src/durable-objects/workspace/workspace";
import { fakeClockPerTest } from "./helpers/clock";

const clock = fakeClockPerTest(Date.UTC(2043, 2, 10, 12), (t) => t + 5 * 24 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

const d1Counts = (workspaceId: string) =>
  env.DB.prepare("SELECT day, channel_number_id, accepted, sent FROM usage_daily WHERE workspace_id = ?")
    .bind(workspaceId)
    .all();

describe("daily counts in D1", () => {
  it("reach D1 off the request path, one row per number and day, never one write per send", async () => {
    const t = await createTenant();
    expect((await send(t.key, "c1", textMessage(t.numberId))).status).toBe(201);
    expect((await send(t.key, "c2", textMessage(t.numberId))).status).toBe(201);
    expect((await d1Counts(t.workspaceId)).results).toEqual([]); // nothing on the request path
    const day = new Date(clock.now()).toISOString().slice(0, 10);
    // Counts ship at most once a minute per workspace.
    clock.advance(61_000);
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    await vi.waitFor(
      async () =>
        expect((await d1Counts(t.workspaceId)).results).toEqual([
          { day, channel_number_id: t.numberId, accepted: 2, sent: 0 },
        ]),
      {
        timeout: 15_000,
        interval: 100,
      },
    );
  });

  it("a count that changes while it is being shipped ships again: D1 never keeps a stale total", async () => {
    const t = await createTenant();
    expect((await send(t.key, "v1", textMessage(t.numberId))).status).toBe(201);
    const original = env.USAGE_QUEUE.sendBatch.bind(env.USAGE_QUEUE);
    vi.spyOn(env.USAGE_QUEUE, "sendBatch").mockImplementationOnce(async (messages, options) => {
      // Another send is accepted while the first total is on its way.
      expect((await send(t.key, "v2", textMessage(t.numberId))).status).toBe(201);
      return original(messages, options);
    });
    clock.advance(61_000);
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId)); // ships 1 while the count becomes 2
    clock.advance(61_000);
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId)); // the row stayed dirty: ships 2
    await vi.waitFor(async () => expect((await d1Counts(t.workspaceId)).results).toMatchObject([{ accepted: 2 }]), {
      timeout: 15_000,
      interval: 100,
    });
  });

  it("the consumer keeps the larger total, so redelivered and reordered messages are harmless", async () => {
    const base: UsageCountMessage = {
      workspaceId: crypto.randomUUID(),
      day: "2043-01-01",
      channelNumberId: crypto.randomUUID(),
      accepted: 5,
      sent: 4,
      failed: 1,
      received: 0,
    };
    for (const bodies of [[base], [{ ...base, accepted: 3, sent: 2 }], [base]]) {
      const batch = createMessageBatch(
        "usage-counts",
        bodies.map((body, i) => ({ id: `u${i}`, timestamp: new Date(), attempts: 1, body })),
      );
      const ctx = createExecutionContext();
      await worker.queue(batch, env, ctx);
      expect((await getQueueResult(batch, ctx)).ackAll).toBe(true);
    }
    expect((await d1Counts(base.workspaceId)).results).toEqual([
      { day: "2043-01-01", channel_number_id: base.channelNumberId, accepted: 5, sent: 4 },
    ]);
  });
});
