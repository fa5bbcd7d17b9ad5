import { z } from "@hono/zod-openapi";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { newUuidV7 } from "../lib/job-id";
import { TemplateFacts } from "./content";
import { INBOUND_EXTRA_FIELDS } from "./inbound-details";
import { answerOf, InboundAnswer } from "./inbound-answer";
import { ReceivedMedia } from "./inbound-media";
import { INBOUND_CONTENT, type OutboundMessage } from "./message";
import { EVENT_KINDS, MESSAGE_STATUSES, MESSAGE_STATUSES_V2, MessageError, type EventKind } from "./status";

/**
 * Events we send to customer webhooks. `id` is ours (never client-chosen) and is
 * the Standard Webhooks `webhook-id`: the same on every retry and replay.
 */
export const MessageStatusData = z
  .object({
    messageId: z.string().uuid().openapi({ description: "The jobId returned on send." }),
    channelNumberId: z.string().uuid(),
    to: z.string().nullable().openapi({ description: "The recipient's E.164 digits; null for a send to `toUserId`." }),
    toUserId: z
      .string()
      .nullable()
      .openapi({ description: "The recipient's user id, for a send made with `toUserId`." }),
    status: z.enum(MESSAGE_STATUSES),
    previousStatus: z.enum(MESSAGE_STATUSES).nullable(),
    upstreamMessageId: z.string().nullable(),
    error: MessageError.nullable(),
    deliveredAt: z.string().datetime().nullable(),
    readAt: z.string().datetime().nullable(),
    updatedAt: z.string().datetime(),
    // Template messages only (absent for text messages, whose events are as they always were).
    type: z.literal("template").optional().openapi({ description: "Template messages only: `template`." }),
    template: TemplateFacts.optional().openapi({ description: "Template messages only: the template sent." }),
    text: z
      .object({ body: z.string() })
      .optional()
      .openapi({ description: "Template messages only: the template's text with its parameters filled in." }),
  })
  .openapi("MessageStatusEventData");

/**
 * A status event as API v2 shows it: v1's, with v2's statuses (`delivered` and `read` are statuses
 * of their own) and the delivery a read report implies.
 */
export const MessageStatusDataV2 = z
  .object({
    ...MessageStatusData.shape,
    status: z.enum(MESSAGE_STATUSES_V2).openapi({
      description: "The message's status after this change (`delivered` and `read` are statuses of their own).",
    }),
    previousStatus: z
      .enum(MESSAGE_STATUSES_V2)
      .nullable()
      .openapi({ description: "The status before this change, in the order the message's changes happened to it." }),
    deliveredAt: z.string().datetime().nullable().openapi({
      description:
        "When the operator reported delivery, as of this change; its read time when it reported the read first.",
    }),
    readAt: z
      .string()
      .datetime()
      .nullable()
      .openapi({ description: "When the operator reported the message read, as of this change." }),
  })
  .openapi("MessageStatusEventDataV2");
export type MessageStatusDataV2 = z.infer<typeof MessageStatusDataV2>;

/** What a v2 status event says differently from v1's (the rest of its data is the same). */
export type StatusFieldsV2 = Pick<MessageStatusDataV2, "status" | "previousStatus" | "deliveredAt" | "readAt">;

/**
 * What the message and kind of a v1 status event imply in v2, for an event queued without its v2
 * fields: exact for a processing, sent or failed change (the same in both versions), and for a
 * delivery or read reported in the lifecycle's order.
 */
export function statusFieldsV2From(id: string, data: MessageStatusData): StatusFieldsV2 {
  const parsed = parseEventId(id);
  const kind = parsed && "kind" in parsed ? parsed.kind : null;
  const same = {
    status: data.status,
    previousStatus: data.previousStatus,
    deliveredAt: data.deliveredAt,
    readAt: data.readAt,
  };
  if (data.status !== "sent") return same;
  if (kind === "delivered") return { ...same, status: "delivered", previousStatus: "sent" };
  if (kind === "read")
    return {
      ...same,
      status: "read",
      previousStatus: data.deliveredAt === null ? "sent" : "delivered",
      deliveredAt: data.deliveredAt ?? data.readAt,
    };
  return same;
}

/**
 * What a status event shows of the message's kind: a template's facts and rendered text; nothing
 * for a text message, whose events stay as they always were.
 */
export function kindFieldsOf(
  view: Pick<OutboundMessage, "template" | "text">,
): Pick<MessageStatusData, "type" | "template" | "text"> {
  return view.template ? { type: "template", template: view.template, text: view.text } : {};
}

export const MessageReceivedData = z
  .object({
    messageId: z.string().openapi({ description: "Our id for the inbound message." }),
    channelNumberId: z.string().uuid(),
    from: z.string().nullable().openapi({
      description:
        "Sender, E.164 digits; null when the operator withholds them (a user with a username: see `fromUserId`).",
    }),
    ...INBOUND_EXTRA_FIELDS,
    type: z.string().openapi({
      description:
        "`text`, or the operator's type for other content (`image`, `reaction`, `contacts`, …); `system` for an identity change.",
    }),
    text: z.object({ body: z.string() }).nullable(),
    content: INBOUND_CONTENT,
    upstreamMessageId: z.string().nullable(),
    receivedAt: z.string().datetime(),
    media: ReceivedMedia.nullable(),
  })
  .openapi("MessageReceivedEventData");

/**
 * `message.received` as API v2 shows it: v1's, with the user's answer to your buttons, list or Flow
 * as typed fields, read from the event's own `type` and `content` (nothing more is queued for it).
 */
export const MessageReceivedDataV2 = z
  .object({
    ...MessageReceivedData.shape,
    // A named schema's nullable wrapper takes no metadata of its own: it would replace the component.
    answer: InboundAnswer.nullable(),
  })
  .openapi("MessageReceivedEventDataV2");
export type MessageReceivedDataV2 = z.infer<typeof MessageReceivedDataV2>;

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
      /**
       * What webhooks configured through API v2 receive differently: on a delivery's or a read's
       * event (the other changes' events are the same in both versions), absent on events queued
       * before versions (`statusFieldsV2From` derives it then).
       */
      v2?: StatusFieldsV2;
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

/** The API versions a webhook can be configured with: the version whose event shapes it receives. */
export const WEBHOOK_API_VERSIONS = [1, 2] as const;
export type WebhookApiVersion = (typeof WEBHOOK_API_VERSIONS)[number];

/** The JSON a customer receives: the Standard Webhooks envelope, in the shapes of the webhook's API version. */
export const envelopeOf = (event: WebhookEvent, version: WebhookApiVersion = 1) => ({
  type: event.type,
  timestamp: event.createdAt,
  data:
    version === 2 && event.type === "message.status"
      ? { ...event.data, ...(event.v2 ?? statusFieldsV2From(event.id, event.data)) }
      : version === 2 && event.type === "message.received"
        ? { ...event.data, answer: answerOf(event.data.type, event.data.content) }
        : event.data,
});

/**
 * The id of a test event (no fact determines one): `evt_` and the 32 hex digits of a fresh UUIDv7
 * of its time, whose kind digit is 0: it never names a message, and it dates the event (`parseEventId`).
 */
export const newEventId = (at: number = Date.now()): string => {
  const hex = newUuidV7(at).replaceAll("-", "");
  return `evt_${hex.slice(0, 12)}0${hex.slice(13)}`;
};

/** The one fixed content of a `webhook.test` event (its id carries its time: a replay rebuilds it). */
export const TEST_EVENT_MESSAGE = "This is a test event. Your endpoint received and can verify our webhooks.";

/**
 * The id of an event that a fact determines (a message reaching a status, an
 * inbound message's operator id): the same fact always gets the same id, so
 * that recording it twice (a retry after a crash) records it once. Kept for ids
 * that are not UUIDs of ours (see `eventIdOf`).
 */
export const derivedEventId = (...parts: string[]): string =>
  `evt_${bytesToHex(sha256(utf8ToBytes(parts.join("\n")))).slice(0, 32)}`;

/**
 * The id of the event of `kind` about message `messageId`: `evt_` and the message id's 32 hex
 * digits, with its version digit (7 for our ids, 4 for those issued before them) replaced by a
 * code for the kind. The same fact always gets the same id (it is the Standard Webhooks
 * `webhook-id` customers deduplicate on), and the id alone says which message and which change it
 * is about (a replay needs nothing stored). Another version digit cannot be encoded: such an id
 * gets a hash (`derivedEventId`), which cannot be replayed.
 */
export function eventIdOf(messageId: string, kind: EventKind): string {
  const hex = messageId.replaceAll("-", "").toLowerCase();
  const version = hex[12];
  const code = EVENT_KINDS.indexOf(kind) + 1 + (version === "4" ? 8 : 0);
  if (hex.length !== 32 || (version !== "7" && version !== "4")) return derivedEventId("event", messageId, kind);
  return `evt_${hex.slice(0, 12)}${code.toString(16)}${hex.slice(13)}`;
}

/** The message and kind an event id names, or null for a test event, a hash id or anything else. */
export function parseEventId(
  eventId: string,
): { messageId: string; kind: EventKind } | { test: true; at: number } | null {
  if (!EVENT_ID_PATTERN.test(eventId)) return null;
  const hex = eventId.slice(4);
  const code = parseInt(hex[12]!, 16);
  // A test event: its id is a UUIDv7 of when it was made, with a kind digit of 0.
  if (code === 0 && /^[89ab]$/.test(hex[16]!)) return { test: true, at: parseInt(hex.slice(0, 12), 16) };
  const kindIndex = (code > 8 ? code - 8 : code) - 1;
  const kind = EVENT_KINDS[kindIndex];
  if (kind === undefined || code === 0 || code === 8) return null;
  const restored = `${hex.slice(0, 12)}${code > 8 ? "4" : "7"}${hex.slice(13)}`;
  // The variant bits of a UUID of ours (10xx): a random test-event id rarely has them, and is refused.
  if (!/^[89ab]$/.test(restored[16]!)) return null;
  return {
    messageId: `${restored.slice(0, 8)}-${restored.slice(8, 12)}-${restored.slice(12, 16)}-${restored.slice(16, 20)}-${restored.slice(20)}`,
    kind,
  };
}

export const EVENT_ID_PATTERN = /^evt_[0-9a-f]{32}$/;
