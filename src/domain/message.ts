import { z } from "@hono/zod-openapi";

export const MESSAGE_STATUSES = ["queued", "processing", "sent", "failed"] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/** Ranks make status changes monotonic: a late or duplicate update never moves a message back. */
export const STATUS_RANK: Record<MessageStatus, number> = { queued: 0, processing: 1, sent: 2, failed: 2 };
export const isTerminal = (s: MessageStatus): boolean => s === "sent" || s === "failed";

export const MessageError = z
  .object({
    code: z.string().openapi({ example: "service_window_closed", description: "Our normalized error code." }),
    message: z.string(),
    retriable: z.boolean().openapi({ description: "Whether sending the same content again later may succeed." }),
    upstreamCode: z.string().nullable().openapi({ description: "The upstream operator's own error code, if any." }),
  })
  .openapi("MessageError");

export const Message = z
  .object({
    id: z.string().uuid().openapi({ description: "The jobId returned on send." }),
    channelNumberId: z.string().uuid(),
    to: z.string(),
    type: z.literal("text"),
    text: z.object({ body: z.string() }),
    status: z.enum(MESSAGE_STATUSES),
    upstreamMessageId: z.string().nullable(),
    error: MessageError.nullable(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
    processingAt: z.string().datetime().nullable(),
    sentAt: z.string().datetime().nullable(),
    failedAt: z.string().datetime().nullable(),
    deliveredAt: z.string().datetime().nullable().openapi({ description: "When the operator reported delivery." }),
    readAt: z.string().datetime().nullable().openapi({ description: "When the operator reported the message read." }),
  })
  .openapi("Message");
export type Message = z.infer<typeof Message>;

/** A row of the message copy that the workspace object ships to D1. */
export interface MessageCopy {
  id: string;
  workspaceId: string;
  channelNumberId: string;
  to: string;
  type: "text";
  body: string;
  status: MessageStatus;
  upstreamMessageId: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  createdAt: string;
  updatedAt: string;
  deliveredAt: string | null;
  readAt: string | null;
  version: number;
}
