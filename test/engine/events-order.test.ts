import { abortAllDurableObjects, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, json } from "../helpers/http";
import { send, textMessage } from "../helpers/send";
import { accepted } from "../helpers/operator";
import { postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { liveNumberOnEdge, type DeliveredEvent } from "../helpers/number-edge";
import { channelNumberStub } from "../../src/durable-objects/stubs";
import { fakeClockPerTest } from "../helpers/clock";

// A message's changes come from three clocks: the workspace's claim, the number's answer (ms) and
// the operator's reports (whole seconds). Their events follow the order the changes were committed
// in the record, `previousStatus` is the status before each in that order, and `updatedAt` never
// goes back: docs/customers/webhooks.md tells customers to keep the event with the latest `updatedAt`.

const clock = fakeClockPerTest(Date.UTC(2059, 0, 1, 10), (t) => t + 30 * 24 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

/** The status a customer following docs/customers/webhooks.md ends with: the event with the latest `updatedAt` (the later on a tie). */
const customerFinal = (events: DeliveredEvent[]): unknown =>
  events.reduce((cur, e) => (String(e.data.updatedAt) >= String(cur.data.updatedAt) ? e : cur)).data.status;

const statusEvents = (events: DeliveredEvent[], messageId: string) =>
  events.filter((e) => e.type === "message.status" && e.data.messageId === messageId);

describe("a message's events in the order its changes were committed", () => {
  it("a failure the operator reports in the second of the send: previousStatus sent, dated no earlier than sent, last in the timeline", async () => {
    const t = await liveNumberOnEdge(() => accepted("wamid.ONE"));
    clock.set(clock.now() + 600); // past the start of a second
    const { jobId } = await json<{ jobId: string }>(await send(t.key, crypto.randomUUID(), textMessage(t.numberId)));
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId)); // claimed and answered sent at .600
    const sent = await t.hook.waitForStatus(jobId, "sent");

    clock.advance(200); // the operator's asynchronous 131026, dated with that whole second
    const failed = statusPayload(t.phoneNumberId, [
      {
        id: "wamid.ONE",
        status: "failed",
        timestamp: seconds(clock.now()),
        recipient_id: "5511999998888",
        biz_opaque_callback_data: jobId,
        errors: [{ code: 131026, title: "Message undeliverable" }],
      },
    ]);
    expect((await postOperator(failed)).status).toBe(200);
    const event = await t.hook.waitForStatus(jobId, "failed");

    expect(event.data).toMatchObject({ status: "failed", previousStatus: "sent" });
    expect(String(event.data.updatedAt) >= String(sent.data.updatedAt)).toBe(true);
    expect(customerFinal(statusEvents(t.hook.events(), jobId))).toBe("failed");
    const view = await json<{ sentAt: string; failedAt: string }>(await api(`/messages/${jobId}`, t.key));
    expect(view.failedAt >= view.sentAt).toBe(true);
    const { timeline } = await json<{ timeline: { status: string; at: string }[] }>(
      await api(`/messages/${jobId}/events`, t.key),
    );
    expect(timeline.map((e) => e.status)).toEqual(["queued", "processing", "sent", "failed"]);
    expect(timeline.map((e) => e.at)).toEqual([...timeline.map((e) => e.at)].sort());
  });

  it("a delivery the operator dates before our sent: updatedAt never goes back, deliveredAt is the operator's own time", async () => {
    const t = await liveNumberOnEdge(() => accepted("wamid.TWO"));
    clock.set(clock.now() + 700);
    const { jobId } = await json<{ jobId: string }>(await send(t.key, crypto.randomUUID(), textMessage(t.numberId)));
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    const sent = await t.hook.waitForStatus(jobId, "sent");
    clock.advance(100);
    const delivered = statusPayload(t.phoneNumberId, [
      {
        id: "wamid.TWO",
        status: "delivered",
        timestamp: seconds(clock.now()),
        recipient_id: "5511999998888",
        biz_opaque_callback_data: jobId,
      },
    ]);
    expect((await postOperator(delivered)).status).toBe(200);
    const event = await t.hook.waitForStatus(jobId, "sent").then(() =>
      vi.waitFor(
        () => {
          const e = statusEvents(t.hook.events(), jobId).find((x) => x.data.deliveredAt !== null);
          if (!e) throw new Error("no delivery event yet");
          return e;
        },
        { timeout: 15_000, interval: 50 },
      ),
    );
    expect(event.data.deliveredAt).toBe(new Date(Math.floor(clock.now() / 1000) * 1000).toISOString());
    expect(String(event.data.updatedAt) >= String(sent.data.updatedAt)).toBe(true);
    expect(event.data).toMatchObject({ status: "sent", previousStatus: "sent" });
    // The timeline in the same order, its times never going back.
    const { timeline } = await json<{ timeline: { status: string; at: string }[] }>(
      await api(`/messages/${jobId}/events`, t.key),
    );
    expect(timeline.map((e) => e.status)).toEqual(["queued", "processing", "sent", "delivered"]);
    expect(timeline.map((e) => e.at)).toEqual([...timeline.map((e) => e.at)].sort());
  });

  it("after every object restarted, a sent report announces the claim's processing first", async () => {
    // The call hangs and the objects die with it; the claim's processing event had not left.
    const t = await liveNumberOnEdge(() => new Promise<Response>(() => undefined));
    clock.set(clock.now() + 600);
    const { jobId } = await json<{ jobId: string }>(await send(t.key, crypto.randomUUID(), textMessage(t.numberId)));
    const batch = vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockRejectedValue(new Error("queue unavailable"));
    const one = vi.spyOn(env.WEBHOOK_QUEUE, "send").mockRejectedValue(new Error("queue unavailable"));
    void runDurableObjectAlarm(channelNumberStub(env, t.numberId)).catch(() => "aborted");
    await vi.waitFor(() => expect(t.calls).toHaveLength(1), { timeout: 10_000, interval: 20 });
    await vi.waitFor(() => expect(one.mock.settledResults.some((r) => r.type === "rejected")).toBe(true), {
      timeout: 5_000,
      interval: 10,
    });
    await abortAllDurableObjects();
    batch.mockRestore();
    one.mockRestore();

    clock.advance(300); // the operator accepted the call: its sent webhook, in the same whole second
    const sent = statusPayload(t.phoneNumberId, [
      {
        id: "wamid.HUNG",
        status: "sent",
        timestamp: seconds(clock.now()),
        recipient_id: "5511999998888",
        biz_opaque_callback_data: jobId,
      },
    ]);
    expect((await postOperator(sent)).status).toBe(200);
    await t.hook.waitForStatus(jobId, "sent");
    await t.hook.settled();
    expect(t.hook.statusChanges(jobId)).toEqual([
      ["queued", "processing"],
      ["processing", "sent"],
    ]);
    const updated = statusEvents(t.hook.events(), jobId).map((e) => String(e.data.updatedAt));
    expect(updated).toEqual([...updated].sort());
  });
});
