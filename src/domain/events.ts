import { z } from "@hono/zod-openapi";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { MESSAGE_STATUSES, MessageError } from "./message";

/**
 * Events we send to customer webhooks. `id` is ours (never client-chosen) and is
 * the Standard Webhooks `webhook-id`: the same on every retry and replay.
 */
export const MessageStatusData = z
  .object({
    messageId: z.string().uuid().openapi({ description: "The jobId returned on send." }),
    channelNumberId: z.string().uuid(),
    to: z.string(),
    status: z.enum(MESSAGE_STATUSES),
    previousStatus: z.enum(MESSAGE_STATUSES).nullable(),
    upstreamMessageId: z.string().nullable(),
    error: MessageError.nullable(),
    deliveredAt: z.string().datetime().nullable(),
    readAt: z.string().datetime().nullable(),
    updatedAt: z.string().datetime(),
  })
  .openapi("MessageStatusEventData");

export const MessageReceivedData = z
  .object({
    messageId: z.string().openapi({ description: "Our id for the inbound message." }),
    channelNumberId: z.string().uuid(),
    from: z.string().openapi({
      description:
        "Sender, E.164 digits. When the user withholds their number (operator usernames), the operator's business-scoped user id instead, which is not digits.",
    }),
    type: z.string().openapi({ description: "`text`, or the operator's type for other content (image, audio, …)." }),
    text: z.object({ body: z.string() }).nullable(),
    content: z
      .record(z.string(), z.unknown())
      .nullable()
      .openapi({ description: "The operator's payload for non-text types, unchanged." }),
    upstreamMessageId: z.string().nullable(),
    receivedAt: z.string().datetime(),
  })
  .openapi("MessageReceivedEventData");

export const WebhookTestData = z.object({ message: z.string() }).openapi("WebhookTestEventData");

export type MessageStatusData = z.infer<typeof MessageStatusData>;
export type MessageReceivedData = z.infer<typeof MessageReceivedData>;

export type WebhookEvent =
  | {
      id: string;
      type: "message.status";
      workspaceId: string;
      channelNumberId: string;
      createdAt: string;
      data: MessageStatusData;
    }
  | {
      id: string;
      type: "message.received";
      workspaceId: string;
      channelNumberId: string;
      createdAt: string;
      data: MessageReceivedData;
    }
  | {
      id: string;
      type: "webhook.test";
      workspaceId: string;
      channelNumberId: string;
      createdAt: string;
      data: z.infer<typeof WebhookTestData>;
    };

export type WebhookEventType = WebhookEvent["type"];

/**
 * The body of a WEBHOOK_QUEUE message: several events in publishing order
 * (each queue operation is billed per 64 KB, so one message carries dozens of
 * events for the price of one), with the attempts already made at each (a
 * pack re-queued after a partial failure); or one event, as queued before
 * events were packed (and by replays of that era still in flight).
 */
export type WebhookQueueMessage = { events: WebhookEvent[]; tried?: number[] } | { event: WebhookEvent };

export const eventsOf = (m: WebhookQueueMessage): WebhookEvent[] => ("events" in m ? m.events : [m.event]);

/** Attempts made at each event of the message before it was queued. */
export const triedOf = (m: WebhookQueueMessage): number[] =>
  "events" in m ? m.events.map((_, i) => m.tried?.[i] ?? 0) : [0];

/** The JSON a customer receives: the Standard Webhooks envelope. */
export const envelopeOf = (event: WebhookEvent) => ({ type: event.type, timestamp: event.createdAt, data: event.data });

/** Our event ids: `evt_` and 32 hex digits; the Standard Webhooks `webhook-id`. */
export const newEventId = (): string => `evt_${crypto.randomUUID().replaceAll("-", "")}`;

/**
 * The id of an event that a fact determines (a message reaching a status, an
 * inbound message's upstream id): the same fact always gets the same id, so
 * that recording it twice (a retry after a crash) records it once.
 */
export const derivedEventId = (...parts: string[]): string =>
  `evt_${bytesToHex(sha256(utf8ToBytes(parts.join("\n")))).slice(0, 32)}`;

export const EVENT_ID_PATTERN = /^evt_[0-9a-f]{32}$/;
