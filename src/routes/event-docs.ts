import { z, type OpenAPIHono } from "@hono/zod-openapi";
import { MessageReceivedData, MessageStatusData, WebhookTestData } from "../domain/events";

const SIGNATURE_HEADERS = z.object({
  "webhook-id": z.string().openapi({ description: "The event id; the same on every retry and replay. Deduplicate on it." }),
  "webhook-timestamp": z.string().openapi({ description: "Unix seconds of this attempt." }),
  "webhook-signature": z.string().openapi({ description: "`v1,<base64 HMAC-SHA256 of \"{id}.{timestamp}.{body}\">` (Standard Webhooks)." }),
});

const envelope = <T extends z.ZodType>(type: string, data: T) =>
  z.object({ type: z.literal(type), timestamp: z.string().datetime(), data });

const EVENTS = [
  ["message.status", "A sent message's status changed, or the operator reported it delivered or read.", MessageStatusData],
  ["message.received", "A user wrote to one of your numbers.", MessageReceivedData],
  ["webhook.test", "Sent by POST /webhooks/{id}/test.", WebhookTestData],
] as const;

/** Documents the events we POST to customer webhooks in the OpenAPI 3.1 `webhooks` section. */
export function registerEventDocs(registry: OpenAPIHono["openAPIRegistry"]): void {
  for (const [type, description, data] of EVENTS) {
    registry.registerWebhook({
      method: "post",
      path: type,
      summary: type,
      description: `${description} Signed with the Standard Webhooks scheme; answer 2xx within the timeout.`,
      request: {
        headers: SIGNATURE_HEADERS,
        body: { content: { "application/json": { schema: envelope(type, data) } } },
      },
      responses: { 200: { description: "Any 2xx acknowledges the event; anything else is retried." } },
    });
  }
}
