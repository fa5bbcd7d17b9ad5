import { runDurableObjectAlarm } from "cloudflare:test";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, json } from "../helpers/http";
import { send, textMessage } from "../helpers/send";
import { accepted, liveNumberTenant, operatorMessagesUrl } from "../helpers/operator";
import { postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { eventsOfMessage, queuedEvents, statusEventsOf } from "../helpers/events";
import { testNumber } from "../helpers/objects";
import { answers, mockNetworkPerTest } from "../helpers/webhook-net";
import { envelopeOf, eventIdOf, type WebhookEvent } from "../../src/messages/events";
import { fakeClockPerTest } from "../helpers/clock";

// A live number's message through its whole life, as its customer sees it: the operator (mocked
// at the network edge with the customer's receiver) accepts the call and reports delivery and
// read; every change reaches the webhook as one event, through the real queue and consumer.

const clock = fakeClockPerTest(Date.UTC(2049, 5, 1, 9), (t) => t + 2 * 24 * 3_600_000);
const net = mockNetworkPerTest();
afterEach(() => vi.restoreAllMocks());

/** A live number with a webhook to a receiver that answers 204; the operator accepts every call. */
async function liveNumberWithWebhook() {
  const t = await liveNumberTenant();
  net.receivers.set(operatorMessagesUrl(t.phoneNumberId), () => accepted("wamid.LIFE1"));
  const host = `life-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
  net.dns.set(host, ["93.184.216.34"]);
  const url = `https://${host}/hook`;
  net.receivers.set(url, answers(204));
  const res = await api("/webhooks", t.key, { method: "POST", json: { channelNumberId: t.numberId, url } });
  expect(res.status).toBe(201);
  const { id: webhookId, secret } = await json<{ id: string; secret: string }>(res);
  /** What the receiver got, verified as a customer verifies it, in the order it arrived. */
  const received = () =>
    net.seen
      .filter((s) => s.url === url)
      .map((s) => ({ id: s.headers["webhook-id"]!, ...(new Webhook(secret).verify(s.body, s.headers) as object) }));
  return { ...t, webhookId, received };
}

/** The operator's times are whole seconds. */
const whole = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString();

const report = (phoneNumberId: string, jobId: string, status: string, at: number) =>
  statusPayload(phoneNumberId, [
    {
      id: "wamid.LIFE1",
      status,
      timestamp: seconds(at),
      biz_opaque_callback_data: jobId,
      recipient_id: "5511999998888",
    },
  ]);

describe("a message's events", () => {
  it("each change is one event with a stable id, in causal order, delivered to the webhook; a duplicate report adds none", async () => {
    const t = await liveNumberWithWebhook();
    const queued = queuedEvents();

    const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Your order shipped"));
    expect(res.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(res);
    // The number claims (processing) and calls; the operator's answer makes it sent.
    await runDurableObjectAlarm(testNumber(t.numberId));
    expect(net.seen.filter((s) => s.url === operatorMessagesUrl(t.phoneNumberId))).toHaveLength(1);
    // The operator reports delivery, twice (it retries its webhooks), then the read.
    expect((await postOperator(report(t.phoneNumberId, jobId, "delivered", clock.now() + 2_000))).status).toBe(200);
    expect((await postOperator(report(t.phoneNumberId, jobId, "delivered", clock.now() + 2_000))).status).toBe(200);
    expect((await postOperator(report(t.phoneNumberId, jobId, "read", clock.now() + 5_000))).status).toBe(200);

    // The queue carried one event per change, in the order they happened, each with the id of its change.
    const kinds = ["processing", "sent", "delivered", "read"] as const;
    const expectedIds = kinds.map((k) => eventIdOf(jobId, k));
    await vi.waitFor(() => expect(statusEventsOf(queued(), jobId).map((e) => e.id)).toEqual(expectedIds), {
      timeout: 5_000,
      interval: 20,
    });
    // Each is the event the record determines (what a replay rebuilds): same id, same content.
    expect(statusEventsOf(queued(), jobId)).toEqual(await eventsOfMessage(t.workspaceId, jobId));
    expect(
      statusEventsOf(queued(), jobId).map((e) => (e as Extract<WebhookEvent, { type: "message.status" }>).data),
    ).toMatchObject([
      { status: "processing", previousStatus: "queued", upstreamMessageId: null },
      { status: "sent", previousStatus: "processing", upstreamMessageId: "wamid.LIFE1", deliveredAt: null },
      { status: "sent", previousStatus: "sent", deliveredAt: whole(clock.now() + 2_000) },
      { status: "sent", readAt: whole(clock.now() + 5_000) },
    ]);

    // At the receiver: all four, then a test event sent after them (the positive signal that
    // nothing published before it is still on its way): nothing else, each once, in order.
    await vi.waitFor(() => expect(t.received()).toHaveLength(4), { timeout: 15_000, interval: 50 });
    const marker = await json<{ eventId: string }>(
      await api(`/webhooks/${t.webhookId}/test`, t.key, { method: "POST" }),
    );
    await vi.waitFor(() => expect(t.received().map((r) => r.id)).toContain(marker.eventId), {
      timeout: 15_000,
      interval: 50,
    });
    const received = t.received();
    expect(received.map((r) => r.id)).toEqual([...expectedIds, marker.eventId]);
    const published = statusEventsOf(queued(), jobId);
    for (let i = 0; i < 4; i++) {
      const { id, ...envelope } = received[i]!;
      expect(id).toBe(published[i]!.id);
      expect(envelope).toEqual(envelopeOf(published[i]!));
    }
  });
});
