import { Webhook } from "standardwebhooks";
import { describe, expect, it, vi } from "vitest";
import { api, json } from "../helpers/http";
import { createTenant } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { answers, mockNetworkPerTest } from "../helpers/webhook-net";
import { eventsOfMessage } from "../helpers/events";
import { envelopeOf } from "../../src/messages/events";

// Nothing here is driven by hand: real time, the objects' own alarms and the
// real queues carry a send and an inbound message all the way to the
// customer's receiver, which is the only thing mocked (with its DNS).

const net = mockNetworkPerTest();

interface Envelope {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

describe("events of real sends and inbound messages", () => {
  it("reach the number's webhook signed, each exactly once", async () => {
    const host = `events-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
    net.dns.set(host, ["93.184.216.34"]);
    const url = `https://${host}/hook`;
    net.receivers.set(url, answers(200));

    const t = await createTenant();
    const configured = await api("/webhooks", t.key, { method: "POST", json: { channelNumberId: t.numberId, url } });
    expect(configured.status).toBe(201);
    const { id: webhookId, secret } = await json<{ id: string; secret: string }>(configured);

    const sent = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Your order shipped"));
    expect(sent.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(sent);
    const injected = await api("/sandbox/inbound", t.key, {
      method: "POST",
      json: { channelNumberId: t.numberId, from: "5511977776666", text: { body: "Thanks!" } },
    });
    expect(injected.status).toBe(202);
    const { messageId } = await json<{ messageId: string }>(injected);

    // processing, sent, received; then the sandbox operator's delivered (2 s) and read (5 s) reports.
    await vi.waitFor(() => expect(net.seen.length).toBeGreaterThanOrEqual(5), { timeout: 15_000, interval: 100 });
    // A positive signal that everything published before it was delivered: a test event
    // published after them arrives. Only then is "nothing else came" meaningful.
    const marker = await json<{ eventId: string }>(await api(`/webhooks/${webhookId}/test`, t.key, { method: "POST" }));
    await vi.waitFor(() => expect(net.seen.map((s) => s.headers["webhook-id"])).toContain(marker.eventId), {
      timeout: 15_000,
      interval: 100,
    });
    expect(net.seen).toHaveLength(6);
    expect(net.seen[5]!.headers["webhook-id"]).toBe(marker.eventId);

    const verifier = new Webhook(secret);
    const events = net.seen
      .slice(0, 5)
      .map((seen) => ({ id: seen.headers["webhook-id"]!, ...(verifier.verify(seen.body, seen.headers) as Envelope) }));
    expect(new Set(events.map((e) => e.id)).size).toBe(5);

    const statuses = events.filter((e) => e.type === "message.status").map((e) => e.data);
    expect(statuses).toHaveLength(4);
    expect(statuses).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ messageId: jobId, previousStatus: "queued", status: "processing" }),
        expect.objectContaining({
          messageId: jobId,
          previousStatus: "processing",
          status: "sent",
          upstreamMessageId: `sandbox.${jobId}`,
        }),
        // Operator-style reports, through the same path as a live number's.
        expect.objectContaining({ messageId: jobId, status: "sent", deliveredAt: expect.any(String), readAt: null }),
        expect.objectContaining({
          messageId: jobId,
          status: "sent",
          deliveredAt: expect.any(String),
          readAt: expect.any(String),
        }),
      ]),
    );
    const received = events.filter((e) => e.type === "message.received").map((e) => e.data);
    expect(received).toEqual([
      expect.objectContaining({
        messageId,
        channelNumberId: t.numberId,
        from: "5511977776666",
        type: "text",
        text: { body: "Thanks!" },
      }),
    ]);

    expect((await json<{ status: string }>(await api(`/messages/${jobId}`, t.key))).status).toBe("sent");
    // The delivery log shows one delivered attempt per event.
    await vi.waitFor(
      async () => {
        const log = await json<{ data: { eventId: string; outcome: string; attempt: number }[] }>(
          await api(`/webhooks/${webhookId}/deliveries`, t.key),
        );
        expect(log.data.map((d) => [d.eventId, d.outcome, d.attempt]).sort()).toEqual(
          [...events.map((e) => e.id), marker.eventId].map((id) => [id, "delivered", 1]).sort(),
        );
      },
      { timeout: 5_000, interval: 100 },
    );
    // Each is the event its message's record determines: the id of the change, and the content as of
    // it (the delivered event says nothing of the read that came later); what a replay rebuilds.
    const rebuilt = [
      ...(await eventsOfMessage(t.workspaceId, jobId)),
      ...(await eventsOfMessage(t.workspaceId, messageId)),
    ];
    expect(rebuilt.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
    for (const e of events) {
      const { id, ...envelope } = e;
      expect(envelope).toEqual(envelopeOf(rebuilt.find((r) => r.id === id)!));
    }
  }, 30_000);
});
