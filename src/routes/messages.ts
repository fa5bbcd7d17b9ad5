import { createRoute, z, type RouteHandler } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../context";
import {
  bearerSecurity,
  errorResponses,
  jsonContent,
  jsonRequestBody,
  newRouter,
  rateLimitHeaders,
} from "../lib/openapi";
import { EXAMPLE } from "../lib/openapi-examples";
import { SendMessageRequest, IdempotencyKeyHeader, idempotencyKeyError } from "../domain/send-request";
import { Message, type OutboundMessage } from "../messages/message";
import { ApiError, foundOr404 } from "../lib/errors";
import { validationHook } from "../lib/validation";
import { sendRateLimitHeaders } from "../domain/rate-limit-fields";
import { retryAfterSeconds } from "../domain/rate-window";
import { jsonBody } from "../middleware/json-body";
import { MessageListQuery, toFilter, type MessageFilter } from "../messages/list";
import { MessageTimeline, timelineOf } from "../messages/timeline";
import { WebhookDelivery } from "../domain/webhook-view";
import { messageDeliveries, readMessage, sendMessage, type SendInput } from "../engine/messages";
import { type SendContent } from "../messages/send";
import { type OutboundContent } from "../messages/content";
import { listMessagePage } from "../features/messages/message-page";

export const SendMessageAccepted = z
  .object({ jobId: z.string().uuid(), status: z.literal("created") })
  .openapi("SendMessageAccepted");
export const SendMessageDuplicate = z
  .object({
    jobId: z.string().uuid().openapi({ description: "The jobId of the original send." }),
    status: z.literal("duplicado_identico"),
  })
  .openapi("SendMessageDuplicate");

/** What a send answers, in both API versions: accepted, an identical retry, or an error. */
export const sendResponses = {
  201: jsonContent(
    SendMessageAccepted,
    "Accepted and queued.",
    { jobId: EXAMPLE.jobId, status: "created" as const },
    rateLimitHeaders,
  ),
  200: jsonContent(SendMessageDuplicate, "Identical retry of an accepted send: nothing is sent again.", {
    jobId: EXAMPLE.jobId,
    status: "duplicado_identico" as const,
  }),
  ...errorResponses(400, 401, 403, 409, 429, 500),
};

const send = createRoute({
  method: "post",
  path: "/messages",
  "x-key-role": "developer",
  operationId: "sendMessage",
  tags: ["Messages"],
  summary: "Queue a text message for delivery",
  description:
    "Queues the message and answers at once; it does not wait for delivery. `Idempotency-Key` is required: " +
    "an identical retry (same key, same JSON payload) within 24 hours answers 200 `duplicado_identico` with the original jobId " +
    "and sends nothing again; the same key with another payload answers 409 `idempotency_conflict`. " +
    "A request refused with 400, 401, 403, 429 or 500 does not bind the key.",
  security: bearerSecurity,
  middleware: [jsonBody] as const,
  request: {
    headers: z.object({ "idempotency-key": IdempotencyKeyHeader }),
    body: jsonRequestBody(SendMessageRequest, {
      channelNumberId: EXAMPLE.channelNumberId,
      to: EXAMPLE.to,
      text: { body: "Your order has shipped." },
    }),
  },
  responses: sendResponses,
});

export const MESSAGE_EXAMPLE: OutboundMessage = {
  id: EXAMPLE.jobId,
  direction: "outbound",
  channelNumberId: EXAMPLE.channelNumberId,
  to: EXAMPLE.to,
  toUserId: null,
  type: "text",
  text: { body: "Your order has shipped." },
  status: "sent",
  upstreamMessageId: "wamid.HBgLNTUxMTk5OTk5ODg4OBUCABEYEjRBMkI",
  error: null,
  outcomeUnknownSince: null,
  createdAt: EXAMPLE.createdAt,
  updatedAt: EXAMPLE.updatedAt,
  processingAt: "2026-11-22T18:35:47.512Z",
  sentAt: EXAMPLE.updatedAt,
  failedAt: null,
  deliveredAt: null,
  readAt: null,
};

export const MessageList = z
  .object({ data: z.array(Message), nextCursor: z.string().nullable() })
  .openapi("MessageList");

const list = createRoute({
  method: "get",
  path: "/messages",
  "x-key-role": "viewer",
  operationId: "listMessages",
  tags: ["Messages"],
  summary: "List messages, outbound and inbound, newest first",
  description:
    "Every message of the plan's history window (30 days on pro and scale, 7 on free; older days are in `GET /message-archives`), " +
    "newest first, with optional filters. Pages are bounded in the work they do: a page can hold fewer than `limit` messages " +
    "while more exist; keep following `nextCursor` until it is null. New messages never shift a page: they are newer than the first one.",
  security: bearerSecurity,
  request: { query: MessageListQuery },
  responses: {
    200: jsonContent(MessageList, "Messages, newest first.", { data: [MESSAGE_EXAMPLE], nextCursor: EXAMPLE.cursor }),
    ...errorResponses(400, 401, 429),
  },
});

const MessageEvents = z
  .object({
    messageId: z.string().uuid(),
    timeline: MessageTimeline,
    deliveries: z.array(WebhookDelivery).openapi({
      description: "Attempts to deliver this message's events to its number's webhook (kept 3 days), oldest first.",
    }),
  })
  .openapi("MessageEvents");

const events = createRoute({
  method: "get",
  path: "/messages/{id}/events",
  "x-key-role": "viewer",
  operationId: "getMessageEvents",
  tags: ["Messages"],
  summary: "A message's status timeline and its webhook deliveries",
  security: bearerSecurity,
  request: {
    params: z.object({
      id: z.string().openapi({
        description: "A message id (the jobId of a send, or an inbound message's id).",
        format: "uuid",
        example: EXAMPLE.jobId,
      }),
    }),
  },
  responses: {
    200: jsonContent(MessageEvents, "The timeline, oldest first.", {
      messageId: EXAMPLE.jobId,
      timeline: [
        { status: "queued", at: EXAMPLE.createdAt, error: null },
        { status: "processing", at: "2026-11-22T18:35:47.512Z", error: null },
        { status: "sent", at: EXAMPLE.updatedAt, error: null },
      ],
      deliveries: [],
    }),
    ...errorResponses(401, 404, 429),
  },
});

const get = createRoute({
  method: "get",
  path: "/messages/{id}",
  "x-key-role": "viewer",
  operationId: "getMessage",
  tags: ["Messages"],
  summary: "Get a message and its delivery status",
  security: bearerSecurity,
  request: {
    params: z.object({
      id: z.string().openapi({ description: "The jobId returned on send.", format: "uuid", example: EXAMPLE.jobId }),
    }),
  },
  responses: { 200: jsonContent(Message, "The message record.", MESSAGE_EXAMPLE), ...errorResponses(401, 404, 429) },
});

const setRateHeaders = (c: Context<AppEnv>, headers: Record<string, string>): void => {
  for (const [name, value] of Object.entries(headers)) c.header(name, value);
};

export type Admitted =
  | { status: 201; body: { jobId: string; status: "created" } }
  | { status: 200; body: { jobId: string; status: "duplicado_identico" } };

/**
 * Admits a validated send: what every version's `POST /messages` shares once it knows what to
 * record (`content`). The engine's send (the dashboard's test send is the same call); its outcome
 * mapped to HTTP: refusals thrown as the uniform error, an acceptance sets the rate headers.
 */
export async function admitSend(
  c: Context<AppEnv>,
  request: SendInput["request"],
  content: SendContent,
): Promise<Admitted> {
  const outcome = await sendMessage(c.env, {
    workspaceId: c.get("principal").workspaceId,
    idempotencyKey: c.req.header("idempotency-key") ?? "",
    request,
    content,
  });
  switch (outcome.kind) {
    case "created":
      setRateHeaders(c, sendRateLimitHeaders(outcome.rate));
      return { status: 201, body: { jobId: outcome.jobId, status: "created" } };
    case "duplicate":
      return { status: 200, body: { jobId: outcome.jobId, status: "duplicado_identico" } };
    case "conflict":
      throw new ApiError("idempotency_conflict", "This Idempotency-Key was already used with a different payload.", {
        details: [
          {
            path: "header.idempotency-key",
            rule: "bound_to_another_payload",
            message: `This key is bound for 24 hours to the send that created jobId ${outcome.jobId}. Use a new key for a new message.`,
            jobId: outcome.jobId,
          },
        ],
      });
    case "forbidden":
      throw new ApiError("forbidden", "channelNumberId is not a connected number of this workspace.");
    case "refused":
      throw new ApiError(outcome.code, outcome.message, { details: outcome.details });
    case "quota_exceeded":
      throw new ApiError(
        "monthly_message_limit_exceeded",
        `The plan's monthly quota of ${outcome.limit} messages is used up; it renews on the 1st (UTC).`,
      );
    case "rate_limited": {
      const which =
        outcome.scope === "number" ? "2 messages per second per number" : "1200 messages per minute per workspace";
      throw new ApiError(
        "rate_limit_exceeded",
        `Rate limit exceeded (${which}). Retry after the Retry-After seconds.`,
        {
          headers: {
            "Retry-After": String(retryAfterSeconds(outcome.retryAfterMs)),
            ...sendRateLimitHeaders(outcome.rate),
          },
        },
      );
    }
  }
}

/** The validation hook of every `POST /messages`: a missing or malformed Idempotency-Key gets its own message, saying what to send. */
export const sendValidationHook = (result: Parameters<typeof validationHook>[0], c: Context<AppEnv>): undefined => {
  if (!result.success && result.target === "header") throw idempotencyKeyError(c.req.header("idempotency-key"));
  validationHook(result, c);
  return undefined;
};

/** A page of `GET /messages` (every version's list, with the version's filters). */
export async function messagePage(
  c: Context<AppEnv>,
  filter: MessageFilter,
  query: { cursor?: string | undefined; limit: number },
): Promise<{ data: Message[]; nextCursor: string | null }> {
  // One call to the workspace object: an API page is bounded in the work it does.
  const page = await listMessagePage(c.env, c.get("principal").workspaceId, filter, query);
  return { data: page.messages, nextCursor: page.nextCursor };
}

const messageEvents: RouteHandler<typeof events, AppEnv> = async (c) => {
  const { id } = c.req.valid("param");
  const { workspaceId } = c.get("principal");
  const { message, changes } = foundOr404(await readMessage(c.env, workspaceId, id), "Message");
  return c.json(
    {
      messageId: message.id,
      timeline: timelineOf(message, changes),
      deliveries: await messageDeliveries(c.env, workspaceId, message.id),
    },
    200,
  );
};

/** A message's timeline and webhook deliveries: the same in every version (each shows the message its own way). */
export const messageEventRoutes = newRouter().openapi(events, messageEvents);

/** One message and its timeline: the same in every version. */
export const messageReadRoutes = newRouter()
  .openapi(events, messageEvents)
  .openapi(get, async (c) => {
    const { id } = c.req.valid("param");
    const read = foundOr404(await readMessage(c.env, c.get("principal").workspaceId, id), "Message");
    return c.json(read.message, 200);
  });

export const messageRoutes = newRouter()
  .openapi(
    send,
    async (c) => {
      const request = c.req.valid("json");
      const text: OutboundContent = { type: "text", body: request.text.body, content: null, details: null };
      const admitted = await admitSend(c, request, text);
      return admitted.status === 201 ? c.json(admitted.body, 201) : c.json(admitted.body, 200);
    },
    (result, c) => sendValidationHook(result, c),
  )
  .openapi(list, async (c) => {
    const query = c.req.valid("query");
    return c.json(await messagePage(c, toFilter(query), query), 200);
  })
  .route("/", messageReadRoutes);
