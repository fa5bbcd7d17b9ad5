import { z } from "@hono/zod-openapi";
import { INBOUND_EXTRA_FIELDS } from "./inbound-details";
import { OUTBOUND_KINDS, TemplateFacts } from "./content";
import { InboundMedia } from "./inbound-media";
import { MESSAGE_STATUSES, MessageError } from "./status";

// The message as the API, its events and the dashboard show it: outbound (a send) or inbound.

export const OutboundMessage = z
  .object({
    id: z.string().uuid().openapi({ description: "The jobId returned on send." }),
    direction: z.literal("outbound"),
    channelNumberId: z.string().uuid(),
    to: z.string().nullable().openapi({ description: "The recipient's E.164 digits; null for a send to `toUserId`." }),
    toUserId: z
      .string()
      .nullable()
      .openapi({ description: "Extension: the recipient's user id, for a send made with `toUserId`; null otherwise." }),
    type: z.enum(OUTBOUND_KINDS).openapi({
      description:
        "`text`; `template` for a template message sent through `/api/v2` (its `text.body` is the rendered text).",
    }),
    text: z.object({ body: z.string() }).openapi({
      description: "The text sent; for a template message, the template's text with its parameters filled in.",
    }),
    template: TemplateFacts.optional().openapi({ description: "Template messages only: the template sent." }),
    status: z.enum(MESSAGE_STATUSES).openapi({
      description:
        "`queued` → `processing` → `sent` or `failed`. `sent` means the operator accepted the message; if the operator later " +
        "reports that it could not deliver it, the status becomes `failed` (with `error`). `failed` is final.",
    }),
    upstreamMessageId: z.string().nullable(),
    error: MessageError.nullable(),
    outcomeUnknownSince: z
      .string()
      .datetime()
      .nullable()
      .openapi({
        description:
          "Set while the operator's answer to our call was lost (a timeout or a dropped connection): the message may or may not " +
          "have reached the operator. It is never sent again; the operator's status report settles it.",
      }),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
    processingAt: z.string().datetime().nullable(),
    sentAt: z.string().datetime().nullable(),
    failedAt: z.string().datetime().nullable(),
    deliveredAt: z.string().datetime().nullable().openapi({ description: "When the operator reported delivery." }),
    readAt: z.string().datetime().nullable().openapi({ description: "When the operator reported the message read." }),
  })
  .openapi("OutboundMessage");
export type OutboundMessage = z.infer<typeof OutboundMessage>;

/** The operator's payload of a non-text message: always an object (a list, like `contacts`, is under its type's name). */
export const INBOUND_CONTENT = z
  .record(z.string(), z.unknown())
  .nullable()
  .openapi({
    description:
      "The operator's payload for non-text types, unchanged, except that a list is wrapped in an object under the type's " +
      'name: `contacts` reads `{"contacts": [...]}`.',
  });

export const InboundMessage = z
  .object({
    id: z
      .string()
      .uuid()
      .openapi({ description: "Our id for the inbound message (the `messageId` of its `message.received` event)." }),
    direction: z.literal("inbound"),
    channelNumberId: z.string().uuid(),
    from: z.string().nullable().openapi({
      description:
        "The sender's E.164 digits; null when the operator withholds them (a user with a username: see `fromUserId`).",
    }),
    ...INBOUND_EXTRA_FIELDS,
    type: z.string().openapi({
      description:
        "`text`, or the operator's type for other content (`image`, `audio`, `reaction`, `contacts`, …); `system` for an identity change.",
    }),
    text: z.object({ body: z.string() }).nullable(),
    content: INBOUND_CONTENT,
    status: z.literal("received"),
    upstreamMessageId: z.string().nullable(),
    receivedAt: z.string().datetime(),
    createdAt: z.string().datetime(),
    media: InboundMedia.nullable(),
  })
  .openapi("InboundMessage");
export type InboundMessage = z.infer<typeof InboundMessage>;

export const Message = z.discriminatedUnion("direction", [OutboundMessage, InboundMessage]).openapi("Message");
export type Message = z.infer<typeof Message>;
