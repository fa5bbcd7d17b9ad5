import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../context";
import { bearerSecurity, errorResponses, jsonContent, newRouter } from "../lib/openapi";
import { SendMessageRequest, IDEMPOTENCY_KEY, canonicalJson } from "../domain/send-request";
import { Message } from "../domain/message";
import { sha256Hex } from "../lib/crypto";
import { ApiError, notFound } from "../lib/errors";
import { workspaceStub } from "../durable-objects/stubs";
import type { RateInfo } from "../durable-objects/workspace/contract";
import { retryAfterSeconds } from "../domain/rate-window";
import { UUID_PATTERN } from "../domain/job-id";
import { jsonBody } from "../middleware/json-body";

const SendMessageAccepted = z
  .object({ jobId: z.string().uuid(), status: z.literal("created") })
  .openapi("SendMessageAccepted");
const SendMessageDuplicate = z
  .object({ jobId: z.string().uuid().openapi({ description: "The jobId of the original send." }), status: z.literal("duplicado_identico") })
  .openapi("SendMessageDuplicate");

const rateHeaders = {
  "RateLimit-Limit": { schema: { type: "integer" as const }, description: "Sends allowed in the window of the limit closest to refusing." },
  "RateLimit-Remaining": { schema: { type: "integer" as const }, description: "Sends left in that window." },
  "RateLimit-Reset": { schema: { type: "integer" as const }, description: "Seconds until that window is entirely free." },
};

const send = createRoute({
  method: "post",
  path: "/messages",
  summary: "Queue a text message for delivery",
  description:
    "Queues the message and answers at once; it does not wait for delivery. `Idempotency-Key` is required: " +
    "an identical retry (same key, same JSON payload) within 24 hours answers 200 `duplicado_identico` with the original jobId " +
    "and sends nothing again; the same key with another payload answers 409 `idempotency_conflict`. " +
    "A request refused with 400, 401, 403, 429 or 500 does not bind the key.",
  security: bearerSecurity,
  middleware: [jsonBody] as const,
  request: {
    headers: z.object({
      "idempotency-key": z.string().openapi({ description: "1–255 printable ASCII characters; one stable key (e.g. a UUID) per message." }),
    }),
    body: { required: true, content: { "application/json": { schema: SendMessageRequest } } },
  },
  responses: {
    201: { ...jsonContent(SendMessageAccepted, "Accepted and queued."), headers: rateHeaders },
    200: jsonContent(SendMessageDuplicate, "Identical retry of an accepted send: nothing is sent again."),
    ...errorResponses(400, 401, 403, 409, 429, 500),
  },
});

const get = createRoute({
  method: "get",
  path: "/messages/{id}",
  summary: "Get a message and its delivery status",
  security: bearerSecurity,
  request: { params: z.object({ id: z.string().openapi({ description: "The jobId returned on send.", format: "uuid" }) }) },
  responses: { 200: jsonContent(Message, "The message record."), ...errorResponses(401, 404, 429) },
});

function setRateHeaders(c: Context<AppEnv>, rate: RateInfo): void {
  c.header("RateLimit-Limit", String(rate.limit));
  c.header("RateLimit-Remaining", String(rate.remaining));
  c.header("RateLimit-Reset", String(rate.resetSeconds));
}

function idempotencyKeyOf(c: Context<AppEnv>): string {
  const key = c.req.header("idempotency-key");
  if (key === undefined || key === "") {
    throw new ApiError("invalid_request", "The Idempotency-Key header is required.", {
      details: [{ path: "header.idempotency-key", rule: "required", message: "Send one stable key (for example a UUID) per message." }],
    });
  }
  if (!IDEMPOTENCY_KEY.test(key)) {
    throw new ApiError("invalid_request", "The Idempotency-Key header is invalid.", {
      details: [{ path: "header.idempotency-key", rule: "format", message: "Use 1 to 255 printable ASCII characters." }],
    });
  }
  return key;
}

export const messageRoutes = newRouter()
  .openapi(
    send,
    async (c) => {
      const request = c.req.valid("json");
      const idempotencyKey = idempotencyKeyOf(c);
      const { workspaceId } = c.get("principal");
      const fingerprint = await sha256Hex(canonicalJson(request));
      const outcome = await workspaceStub(c.env, workspaceId).send({ workspaceId, idempotencyKey, fingerprint, request });
      switch (outcome.kind) {
        case "created":
          setRateHeaders(c, outcome.rate);
          return c.json({ jobId: outcome.jobId, status: "created" as const }, 201);
        case "duplicate":
          return c.json({ jobId: outcome.jobId, status: "duplicado_identico" as const }, 200);
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
        case "quota_exceeded":
          throw new ApiError(
            "monthly_message_limit_exceeded",
            `The plan's monthly quota of ${outcome.limit} messages is used up; it renews on the 1st (UTC).`,
          );
        case "rate_limited": {
          setRateHeaders(c, outcome.rate);
          const which = outcome.scope === "number" ? "2 messages per second per number" : "1200 messages per minute per workspace";
          throw new ApiError("rate_limit_exceeded", `Rate limit exceeded (${which}). Retry after the Retry-After seconds.`, {
            headers: {
              "Retry-After": String(retryAfterSeconds(outcome.retryAfterMs)),
              "RateLimit-Limit": String(outcome.rate.limit),
              "RateLimit-Remaining": String(outcome.rate.remaining),
              "RateLimit-Reset": String(outcome.rate.resetSeconds),
            },
          });
        }
      }
    },
    // Header validation runs in the handler so that the message names the header clearly.
  )
  .openapi(get, async (c) => {
    const { id } = c.req.valid("param");
    const message = UUID_PATTERN.test(id) ? await workspaceStub(c.env, c.get("principal").workspaceId).getMessage(id.toLowerCase()) : null;
    if (!message) throw notFound("Message");
    return c.json(message, 200);
  });
