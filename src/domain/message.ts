import { z } from "@hono/zod-openapi";
import { InboundMedia } from "./inbound-media";

export const MESSAGE_STATUSES = ["queued", "processing", "sent", "failed"] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

export const MessageError = z
  .object({
    code: z.string().openapi({ example: "service_window_closed", description: "Our normalized error code." }),
    message: z.string(),
    retriable: z.boolean().openapi({ description: "Whether sending the same content again later may succeed." }),
    upstreamCode: z.string().nullable().openapi({ description: "The upstream operator's own error code, if any." }),
  })
  .openapi("MessageError");

export const OutboundMessage = z
  .object({
    id: z.string().uuid().openapi({ description: "The jobId returned on send." }),
    direction: z.literal("outbound"),
    channelNumberId: z.string().uuid(),
    to: z.string(),
    type: z.literal("text"),
    text: z.object({ body: z.string() }),
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

export const InboundMessage = z
  .object({
    id: z
      .string()
      .uuid()
      .openapi({ description: "Our id for the inbound message (the `messageId` of its `message.received` event)." }),
    direction: z.literal("inbound"),
    channelNumberId: z.string().uuid(),
    from: z.string().openapi({
      description: "The sender: E.164 digits, or the operator's user id when the phone number is withheld.",
    }),
    type: z.string().openapi({ description: "`text`, or the operator's type for other content (image, audio, …)." }),
    text: z.object({ body: z.string() }).nullable(),
    content: z
      .record(z.string(), z.unknown())
      .nullable()
      .openapi({ description: "The operator's payload for non-text types, unchanged." }),
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
