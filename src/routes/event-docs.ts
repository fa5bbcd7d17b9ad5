import { z, type OpenAPIHono } from "@hono/zod-openapi";
import {
  MessageReceivedData,
  MessageReceivedDataV2,
  MessageStatusData,
  MessageStatusDataV2,
  WebhookTestData,
} from "../messages/events";
import { EXAMPLE } from "../lib/openapi-examples";

const SIGNATURE_HEADERS = z.object({
  "webhook-id": z.string().openapi({
    description: "The event id; the same on every retry and replay. Deduplicate on it.",
    example: EXAMPLE.eventId,
  }),
  "webhook-timestamp": z.string().openapi({ description: "Unix seconds of this attempt.", example: "1795372553" }),
  "webhook-signature": z.string().openapi({
    description: '`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` (Standard Webhooks).',
    example: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
  }),
});

const envelope = <T extends z.ZodType>(type: string, data: T) =>
  z.object({ type: z.literal(type), timestamp: z.string().datetime(), data });

const EVENTS = [
  {
    type: "message.status",
    operationId: "onMessageStatus",
    description: "A sent message's status changed, or the operator reported it delivered or read.",
    data: MessageStatusData,
    example: {
      type: "message.status",
      timestamp: "2026-11-22T18:35:52.320Z",
      data: {
        messageId: EXAMPLE.jobId,
        channelNumberId: EXAMPLE.channelNumberId,
        to: EXAMPLE.to,
        toUserId: null,
        status: "sent",
        previousStatus: "processing",
        upstreamMessageId: "wamid.HBgLNTUxMTk5OTk5ODg4OBUCABEYEjRBMkI",
        error: null,
        deliveredAt: null,
        readAt: null,
        updatedAt: "2026-11-22T18:35:52.314Z",
      } satisfies z.output<typeof MessageStatusData>,
    },
  },
  {
    type: "message.received",
    operationId: "onMessageReceived",
    description: "A user wrote to one of your numbers.",
    data: MessageReceivedData,
    example: {
      type: "message.received",
      timestamp: "2026-11-22T18:40:03.118Z",
      data: {
        messageId: EXAMPLE.inboundMessageId,
        channelNumberId: EXAMPLE.channelNumberId,
        from: EXAMPLE.to,
        fromUserId: "US.13491208655302741918",
        profileName: "Ana",
        username: null,
        replyTo: { messageId: EXAMPLE.jobId, upstreamMessageId: "wamid.HBgLNTUxMTk5OTk5ODg4OBUCABEYEjRBMkI" },
        forwarded: null,
        reaction: null,
        referral: null,
        system: null,
        type: "text",
        text: { body: "Hi! Is my order on its way?" },
        content: null,
        upstreamMessageId: "wamid.HBgLNTUxMTk5OTk5ODg4OBUCABIYFjNFQjA",
        receivedAt: "2026-11-22T18:40:02.000Z",
        media: null,
      } satisfies z.output<typeof MessageReceivedData>,
    },
  },
  {
    type: "webhook.test",
    operationId: "onWebhookTest",
    description: "Sent by POST /webhooks/{id}/test.",
    data: WebhookTestData,
    example: {
      type: "webhook.test",
      timestamp: "2026-11-22T18:35:53.201Z",
      data: { message: "This is a test event. Your endpoint received and can verify our webhooks." } satisfies z.output<
        typeof WebhookTestData
      >,
    },
  },
] as const;

/** v2's `message.status`: `delivered` and `read` are statuses of their own. */
const STATUS_EVENT_V2 = {
  type: "message.status",
  operationId: "onMessageStatus",
  description:
    "A sent message's status changed (`queued` → `processing` → `sent` → `delivered` → `read`, or `failed`), to " +
    "webhooks configured through `POST /api/v2/webhooks`. A delivery or read reported after a failure keeps `failed` " +
    "(`status` and `previousStatus` both `failed`), as does a delivery reported after the read (both `read`).",
  data: MessageStatusDataV2,
  example: {
    type: "message.status",
    timestamp: "2026-11-22T18:35:54.000Z",
    data: {
      ...EVENTS[0].example.data,
      status: "delivered",
      previousStatus: "sent",
      deliveredAt: "2026-11-22T18:35:54.000Z",
      updatedAt: "2026-11-22T18:35:54.000Z",
    } satisfies z.output<typeof MessageStatusDataV2>,
  },
} as const;

/** v2's `message.received`: a user's answer to your buttons, list or Flow as typed fields. */
const RECEIVED_EVENT_V2 = {
  type: "message.received",
  operationId: "onMessageReceived",
  description:
    "A user wrote to one of your numbers, to webhooks configured through `POST /api/v2/webhooks`. An answer to your " +
    "reply buttons, list or Flow, or to a template's quick-reply button, carries it as `answer` (null otherwise), and " +
    "the message it answers as `replyTo`.",
  data: MessageReceivedDataV2,
  example: {
    type: "message.received",
    timestamp: "2026-11-22T18:40:03.118Z",
    data: {
      ...EVENTS[1].example.data,
      type: "interactive",
      text: null,
      content: { type: "button_reply", button_reply: { id: "confirm", title: "Confirm" } },
      answer: { type: "button_reply", id: "confirm", title: "Confirm", description: null, flow: null },
    } satisfies z.output<typeof MessageReceivedDataV2>,
  },
} as const;

/**
 * Documents the events we POST to customer webhooks in the OpenAPI 3.1 `webhooks` section: those
 * of the API version whose document it is (webhooks receive the shapes of the version they were
 * configured through).
 */
export function registerEventDocs(registry: OpenAPIHono["openAPIRegistry"], version: 1 | 2 = 1): void {
  const events = version === 2 ? [STATUS_EVENT_V2, RECEIVED_EVENT_V2, ...EVENTS.slice(2)] : EVENTS;
  for (const { type, operationId, description, data, example } of events) {
    registry.registerWebhook({
      method: "post",
      path: type,
      operationId,
      // The "Webhooks" tag of the configuration routes: a tag of its own would show in Swagger UI as an
      // empty section among the paths (the events have their own section, OpenAPI 3.1 `webhooks`).
      tags: ["Webhooks"],
      summary: type,
      description: `${description} Signed with the Standard Webhooks scheme; answer 2xx within the timeout.`,
      // We call your endpoint: it authenticates us by the signature, not by a key of yours.
      security: [],
      request: {
        headers: SIGNATURE_HEADERS,
        body: { required: true, content: { "application/json": { schema: envelope(type, data), example } } },
      },
      responses: {
        200: { description: "Any 2xx acknowledges the event; anything else (including 3xx) is retried." },
      },
    });
  }
}
