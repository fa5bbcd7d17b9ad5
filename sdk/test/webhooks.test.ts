import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebhookVerificationError, verifyWebhook } from "../src/index.js";
import { startReceiver } from "./helpers/receiver.js";
import { createTenant } from "./helpers/tenant.js";

// A customer endpoint on loopback (dx ports 8800-8809); the local Worker allows http://127.0.0.1 receivers.
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  receiver = await startReceiver(Number(process.env.SDK_TEST_RECEIVER_PORT ?? 8801));
});
afterAll(() => receiver.close());

describe("webhooks.verify on real deliveries", () => {
  it("verifies a test event and a message.status event, typed by their `type`", async () => {
    const t = await createTenant();
    const client = t.client();
    const webhook = await client.webhooks.configure({
      channelNumberId: t.numberId,
      url: receiver.url(`/hooks/${t.numberId}`),
    });

    const { eventId } = await client.webhooks.test(webhook.id);
    const test = await receiver.delivered((d) => d.headers["webhook-id"] === eventId);
    const event = client.webhooks.verify(test.body, test.headers, webhook.secret);
    expect(event.type).toBe("webhook.test");
    if (event.type === "webhook.test") expect(event.data.message).toMatch(/test event/);

    const sent = await client.messages.send({
      channelNumberId: t.numberId,
      to: "5511999998888",
      text: { body: "status please" },
    });
    const status = await receiver.delivered((d) => d.body.includes(sent.jobId) && d.body.includes('"status":"sent"'));
    const statusEvent = verifyWebhook(
      status.body,
      new Headers(status.headers as Record<string, string>),
      webhook.secret,
    );
    expect(statusEvent.type).toBe("message.status");
    if (statusEvent.type === "message.status")
      expect(statusEvent.data).toMatchObject({ messageId: sent.jobId, status: "sent" });
  });

  it("refuses a tampered body, another secret and a missing signature", async () => {
    const t = await createTenant();
    const client = t.client();
    const webhook = await client.webhooks.configure({
      channelNumberId: t.numberId,
      url: receiver.url(`/hooks/${t.numberId}`),
    });
    const { eventId } = await client.webhooks.test(webhook.id);
    const d = await receiver.delivered((x) => x.headers["webhook-id"] === eventId);

    expect(() => verifyWebhook(d.body.replace("test event", "TEST EVENT"), d.headers, webhook.secret)).toThrow(
      WebhookVerificationError,
    );
    expect(() => verifyWebhook(d.body, d.headers, "whsec_" + btoa("another secret, 32 bytes long....."))).toThrow(
      WebhookVerificationError,
    );
    const { ["webhook-signature"]: _, ...unsigned } = d.headers;
    expect(() => verifyWebhook(d.body, unsigned, webhook.secret)).toThrow(WebhookVerificationError);
    // The genuine delivery verifies, from the raw bytes as well.
    expect(verifyWebhook(new TextEncoder().encode(d.body), d.headers, webhook.secret).type).toBe("webhook.test");
  });
});
