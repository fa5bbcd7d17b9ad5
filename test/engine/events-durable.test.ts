import { abortAllDurableObjects, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, json } from "../helpers/http";
import { send, textMessage } from "../helpers/send";
import { accepted, operatorError } from "../helpers/operator";
import { liveNumberOnEdge } from "../helpers/number-edge";
import { queuedEvents, statusEventsOf } from "../helpers/events";
import { testWorkspace } from "../helpers/objects";
import { channelNumberStub } from "../../src/durable-objects/stubs";
import { PUBLISH_BACKSTOP_MS, PUBLISH_PAGE } from "../../src/durable-objects/workspace/event-publisher";
import { eventIdOf, type WebhookEvent } from "../../src/messages/events";
import type { InboundRecord } from "../../src/messages/inbound";
import { fakeClockPerTest } from "../helpers/clock";

// The obligation to announce a committed change is stored in the change's own transaction (the
// owed list, event-publisher.ts): a restart of every object between a commit and the queue loses no
// event, and what the publisher holds in memory is one page, however long the queue refuses.

const clock = fakeClockPerTest(Date.UTC(2058, 0, 1, 10), (t) => t + 30 * 24 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

/** The webhook queue refuses everything until the returned function is called. */
function queueDown(): () => void {
  const batch = vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockRejectedValue(new Error("queue unavailable"));
  const one = vi.spyOn(env.WEBHOOK_QUEUE, "send").mockRejectedValue(new Error("queue unavailable"));
  return () => {
    batch.mockRestore();
    one.mockRestore();
  };
}

/** Waits until the queue refused a send: a flush was tried and failed. */
const refused = () =>
  vi.waitFor(
    () => expect(vi.mocked(env.WEBHOOK_QUEUE.send).mock.settledResults.some((r) => r.type === "rejected")).toBe(true),
    { timeout: 5_000, interval: 10 },
  );

/** Polls `check` in real time, the fake clock standing still (vi.waitFor would move it). */
async function eventually(check: () => void, timeoutMs = 5_000): Promise<void> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    try {
      check();
      return;
    } catch (err) {
      if (performance.now() > until) throw err;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

const statusesOf = (events: WebhookEvent[], messageId: string) =>
  statusEventsOf(events, messageId).map((e) => (e.type === "message.status" ? e.data.status : null));

describe("a committed change is announced whatever restarts before its events left", () => {
  it("both objects restart after the answer committed, the queue refusing meanwhile: the next instance announces processing then failed, once each (its alarm set as the backstop)", async () => {
    const t = await liveNumberOnEdge(() => operatorError(400, 131026, "Message undeliverable"));
    const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId));
    const { jobId } = await json<{ jobId: string }>(res);
    const restore = queueDown();
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId)); // the call, 131026, the answer committed
    const workspace = testWorkspace(t.workspaceId);
    expect((await workspace.storedRecord(jobId))?.status).toBe("failed");
    await refused();
    expect(await workspace.owedEvents()).toEqual([{ id: jobId, from_change: 0 }]);

    await abortAllDurableObjects(); // a deploy restarts every object
    restore();
    // Nothing calls the workspace: its alarm (the publisher's backstop) runs the new instance.
    const restarted = testWorkspace(t.workspaceId);
    const alarm = await restarted.alarmAt();
    expect(alarm).not.toBeNull();
    expect(alarm!).toBeLessThanOrEqual(clock.now() + PUBLISH_BACKSTOP_MS);
    clock.set(alarm!);
    await runDurableObjectAlarm(restarted);
    await t.hook.waitForStatus(jobId, "failed");
    await t.hook.settled();
    expect(t.hook.statusChanges(jobId)).toEqual([
      ["queued", "processing"],
      ["processing", "failed"],
    ]);
    expect(await restarted.owedEvents()).toEqual([]);
  });

  it("a restarted workspace publishes what it owed on the first call into it, with no alarm", async () => {
    const t = await liveNumberOnEdge(() => accepted("wamid.R1"));
    const { jobId } = await json<{ jobId: string }>(await send(t.key, crypto.randomUUID(), textMessage(t.numberId)));
    const restore = queueDown();
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    await refused();
    await abortAllDurableObjects();
    restore();
    const queued = queuedEvents();
    // Any call wakes it (here a read through the API): the new instance finds the owed list on start.
    expect((await api(`/messages/${jobId}`, t.key)).status).toBe(200);
    await eventually(() => expect(statusesOf(queued(), jobId)).toEqual(["processing", "sent"]));
  });

  it("a change committed while its message's earlier change is on its way to the queue is announced too", async () => {
    const t = await liveNumberOnEdge(() => accepted("wamid.F1"));
    const { jobId } = await json<{ jobId: string }>(await send(t.key, crypto.randomUUID(), textMessage(t.numberId)));
    // The queue holds the first publication (the claim's `processing`) until the test lets it go.
    const send1 = env.WEBHOOK_QUEUE.send.bind(env.WEBHOOK_QUEUE);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let first = true;
    const sent = vi.spyOn(env.WEBHOOK_QUEUE, "send").mockImplementation(async (body, opts) => {
      if (first) {
        first = false;
        await held;
      }
      return send1(body, opts);
    });
    // The claim, the call and its `sent` answer all commit while `processing` is in flight.
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    expect((await testWorkspace(t.workspaceId).storedRecord(jobId))?.status).toBe("sent");
    const queued = queuedEvents();
    release();
    await eventually(() => expect(sent.mock.calls.length).toBeGreaterThanOrEqual(2));
    await t.hook.waitForStatus(jobId, "sent");
    expect(t.hook.statusChanges(jobId)).toEqual([
      ["queued", "processing"],
      ["processing", "sent"],
    ]);
    expect(statusEventsOf(queued(), jobId).map((e) => e.id)).toContain(eventIdOf(jobId, "sent"));
    expect(await testWorkspace(t.workspaceId).owedEvents()).toEqual([]);
  });
});

describe("events waiting for a queue that refuses", () => {
  it("wait in storage, the publisher holding one page at most; all of them leave once the queue works, once each, in the order recorded", async () => {
    const t = await liveNumberOnEdge(() => accepted("wamid.X"));
    const workspace = testWorkspace(t.workspaceId);
    const restore = queueDown();
    const ids: string[] = [];
    // Three pages' worth of inbound messages, recorded (and answered) while nothing can leave.
    for (let batch = 0; batch < 3; batch++)
      ids.push(
        ...(await workspace.recordInbound(
          t.workspaceId,
          Array.from({ length: PUBLISH_PAGE }, (_, i) => inbound(t.numberId, batch * PUBLISH_PAGE + i)),
        )),
      );
    await refused();
    expect((await workspace.owedEvents()).map((o) => o.id)).toEqual(ids);
    expect(await workspace.publisherPeakHeld()).toBeLessThanOrEqual(PUBLISH_PAGE);

    restore();
    const queued = queuedEvents();
    clock.advance(60_000); // past the back-off
    await runDurableObjectAlarm(workspace);
    await eventually(() =>
      expect(queued().map((e) => (e.type === "message.received" ? e.data.messageId : e.id))).toEqual(ids),
    );
    expect(await workspace.owedEvents()).toEqual([]);
    expect(await workspace.publisherPeakHeld()).toBeLessThanOrEqual(PUBLISH_PAGE);
  }, 30_000);
});

describe("publishing on an in-memory timer (EVENT_PUBLISH_DELAY_MS > 0, as in production)", () => {
  it("a message's processing and sent leave together in one queue message, with no alarm armed for the pack; an inbound message leaves at once", async () => {
    const vars = env as unknown as Record<string, string>;
    const before = vars.EVENT_PUBLISH_DELAY_MS!;
    vars.EVENT_PUBLISH_DELAY_MS = "1000";
    try {
      // Objects created now read the var in their constructors.
      const t = await liveNumberOnEdge(() => accepted("wamid.P1"));
      const workspace = testWorkspace(t.workspaceId);
      const { jobId } = await json<{ jobId: string }>(await send(t.key, crypto.randomUUID(), textMessage(t.numberId)));
      const sent = vi.spyOn(env.WEBHOOK_QUEUE, "send");
      const queued = queuedEvents();
      await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
      // The pack waits for its second; the object's alarm is not set for it (the backstop is a minute on).
      expect(statusesOf(queued(), jobId)).toEqual([]);
      expect((await workspace.alarmAt()) ?? Infinity).toBeGreaterThan(clock.now() + 1_000);

      // The pack leaves on the in-memory timer once its second passed on the object's clock, in one queue message.
      clock.advance(1_000);
      await eventually(() => expect(statusesOf(queued(), jobId)).toEqual(["processing", "sent"]), 5_000);
      const carrying = sent.mock.calls.filter(([body]) =>
        JSON.stringify(body).includes(eventIdOf(jobId, "processing")),
      );
      expect(carrying).toHaveLength(1);
      expect(JSON.stringify(carrying[0]![0])).toContain(eventIdOf(jobId, "sent"));

      // An inbound message does not wait for a pack: it left when `recordInbound` answers.
      const [inboundId] = await workspace.recordInbound(t.workspaceId, [inbound(t.numberId, 1)]);
      expect(queued().some((e) => e.type === "message.received" && e.data.messageId === inboundId)).toBe(true);
    } finally {
      vars.EVENT_PUBLISH_DELAY_MS = before;
    }
  });
});

function inbound(channelNumberId: string, i: number): InboundRecord {
  return {
    channelNumberId,
    upstreamMessageId: `wamid.IN-${i}-${crypto.randomUUID()}`,
    from: "5511977776666",
    type: "text",
    text: `message ${i}`,
    content: null,
    at: clock.now(),
  };
}
