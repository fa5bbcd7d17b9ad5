import { exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { ApiError, MessagingClient, verifyWebhook } from "../sdk/src/index";
import { BASE } from "./helpers/http";
import { createTenant } from "./helpers/fixtures";
import { mockNetwork } from "./helpers/webhook-net";

// The SDK uses web APIs only, so it runs in a Worker: here, inside workerd, against this
// Worker's own fetch handler.
const clientFor = (apiKey: string) =>
  new MessagingClient({ apiKey, baseUrl: BASE, fetch: (request) => exports.default.fetch(request), retry: { maxRetries: 0 } });

describe("the SDK inside the Workers runtime", () => {
  it("sends, reads, pages and raises typed errors", async () => {
    const t = await createTenant();
    const client = clientFor(t.key);
    const sent = await client.messages.send({ channelNumberId: t.numberId, to: "5511999998888", text: { body: "from a Worker" } });
    expect(sent.status).toBe("created");
    expect(await client.messages.get(sent.jobId)).toMatchObject({ direction: "outbound", text: { body: "from a Worker" } });
    expect((await client.channelNumbers.list({ limit: 1 }).toArray()).map((n) => n.id)).toEqual([t.numberId]);
    const err = await client.messages.get(crypto.randomUUID()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 404, code: "not_found" });
  });

  it("verifies a signed delivery with verifyWebhook", async () => {
    const net = mockNetwork();
    try {
      const t = await createTenant();
      const client = clientFor(t.key);
      net.dns.set("hooks.example.com", ["93.184.216.34"]);
      const received: { headers: Record<string, string>; body: string }[] = [];
      net.receivers.set("https://hooks.example.com/in", (req) => {
        received.push({ headers: req.headers, body: req.body });
        return new Response(null, { status: 204 });
      });
      const webhook = await client.webhooks.configure({ channelNumberId: t.numberId, url: "https://hooks.example.com/in" });
      const { eventId } = await client.webhooks.test(webhook.id);
      // The real queue delivers it to the mocked receiver.
      await vi.waitFor(() => expect(received).toHaveLength(1), { timeout: 10_000, interval: 50 });
      expect(received[0]!.headers["webhook-id"]).toBe(eventId);
      const event = verifyWebhook(received[0]!.body, received[0]!.headers, webhook.secret);
      expect(event.type).toBe("webhook.test");
      expect(net.unhandled).toEqual([]);
    } finally {
      net.restore();
    }
  });
});
