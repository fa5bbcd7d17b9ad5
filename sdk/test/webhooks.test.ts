import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebhookVerificationError, verifyWebhook } from "../src/index.js";
import { createTenant } from "./helpers/tenant.js";

interface Delivery {
  body: string;
  headers: IncomingHttpHeaders;
}

// A customer endpoint on loopback (dx ports 8800-8809); the local Worker allows http://127.0.0.1 receivers.
const RECEIVER_PORT = Number(process.env.SDK_TEST_RECEIVER_PORT ?? 8801);
const deliveries: Delivery[] = [];
let server: Server;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      deliveries.push({ body: Buffer.concat(chunks).toString("utf8"), headers: req.headers });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(RECEIVER_PORT, "127.0.0.1", resolve));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Waits for the positive signal: a delivery whose webhook-id is `eventId` (or any matching `match`). */
async function delivered(match: (d: Delivery) => boolean): Promise<Delivery> {
  const started = Date.now();
  while (Date.now() - started < 20_000) {
    const found = deliveries.find(match);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("no such delivery within 20 s");
}

describe("webhooks.verify on real deliveries", () => {
  it("verifies a test event and a message.status event, typed by their `type`", async () => {
    const t = await createTenant();
    const client = t.client();
    const webhook = await client.webhooks.configure({ channelNumberId: t.numberId, url: `http://127.0.0.1:${RECEIVER_PORT}/hooks/${t.numberId}` });

    const { eventId } = await client.webhooks.test(webhook.id);
    const test = await delivered((d) => d.headers["webhook-id"] === eventId);
    const event = client.webhooks.verify(test.body, test.headers, webhook.secret);
    expect(event.type).toBe("webhook.test");
    if (event.type === "webhook.test") expect(event.data.message).toMatch(/test event/);

    const sent = await client.messages.send({ channelNumberId: t.numberId, to: "5511999998888", text: { body: "status please" } });
    const status = await delivered((d) => d.body.includes(sent.jobId) && d.body.includes('"status":"sent"'));
    const statusEvent = verifyWebhook(status.body, new Headers(status.headers as Record<string, string>), webhook.secret);
    expect(statusEvent.type).toBe("message.status");
    if (statusEvent.type === "message.status") expect(statusEvent.data).toMatchObject({ messageId: sent.jobId, status: "sent" });
  });

  it("refuses a tampered body, another secret and a missing signature", async () => {
    const t = await createTenant();
    const client = t.client();
    const webhook = await client.webhooks.configure({ channelNumberId: t.numberId, url: `http://127.0.0.1:${RECEIVER_PORT}/hooks/${t.numberId}` });
    const { eventId } = await client.webhooks.test(webhook.id);
    const d = await delivered((x) => x.headers["webhook-id"] === eventId);

    expect(() => verifyWebhook(d.body.replace("test event", "TEST EVENT"), d.headers, webhook.secret)).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(d.body, d.headers, "whsec_" + btoa("another secret, 32 bytes long....."))).toThrow(WebhookVerificationError);
    const { ["webhook-signature"]: _, ...unsigned } = d.headers;
    expect(() => verifyWebhook(d.body, unsigned, webhook.secret)).toThrow(WebhookVerificationError);
    // The genuine delivery verifies, from the raw bytes as well.
    expect(verifyWebhook(new TextEncoder().encode(d.body), d.headers, webhook.secret).type).toBe("webhook.test");
  });
});
