import { createRoute, z } from "@hono/zod-openapi";
import type { Context, Next } from "hono";
import type { AppEnv } from "../../context";
import { bucket, scopes } from "../../domain/abuse-limits";
import { markRead } from "../../engine/read-marks";
import { ApiError, notFound } from "../../lib/errors";
import { bearerSecurity, errorResponses, jsonContent, newRouter, requestIdHeader } from "../../lib/openapi";
import { EXAMPLE } from "../../lib/openapi-examples";
import { ReadMark } from "../../messages/read-mark";
import { jsonBody } from "../../middleware/json-body";
import { enforceLimit } from "../../middleware/rate-limit";

const MarkReadRequest = z
  .strictObject({
    typing: z
      .boolean()
      .optional()
      .openapi({
        description:
          "Also show the typing indicator: the user sees it until your reply, or for about 25 seconds. Show it only when " +
          "you are about to reply.",
      }),
  })
  .openapi("MarkReadRequest");

/** The operator refused the read mark (or did not answer): its normalized error, in the uniform envelope. */
const ReadMarkRefused = z
  .object({
    error: z.object({
      code: z.string().openapi({
        description: "Our normalized error code (as a message's `error.code`).",
        example: "upstream_auth_failed",
      }),
      message: z.string(),
      requestId: z.string(),
      retriable: z.boolean().openapi({ description: "Whether marking it again later may succeed." }),
      upstreamCode: z.string().nullable().openapi({ description: "The operator's own error code, if any." }),
    }),
  })
  .openapi("ReadMarkRefused");

const markReadRoute = createRoute({
  method: "post",
  path: "/messages/{id}/read",
  "x-key-role": "developer",
  operationId: "markMessageRead",
  tags: ["Messages"],
  summary: "Mark an inbound message read, optionally with the typing indicator",
  description:
    "Marks a message a user sent read at the operator: the user sees two blue ticks on it and on every earlier message " +
    "of the conversation (the operator marks those read too; they get no mark here). With `typing: true` the user also " +
    "sees the typing indicator until your reply or for about 25 seconds. Idempotent: a message already marked answers " +
    "its first mark again, without calling the operator (a later `typing: true` shows no indicator then). The body is " +
    "optional. Not a message: it does not count against the number's 2-per-second send limit; it spends a token of the " +
    "workspace's read-mark budget (1,200 per minute). An outbound message's id answers 400 (`inbound_only`); an id of no " +
    "message of the workspace, 404. When the operator refuses the mark (or does not answer), 502 carries its normalized " +
    "error with `retriable`.",
  security: bearerSecurity,
  middleware: [optionalJsonBody] as const,
  request: {
    params: z.object({
      id: z.string().openapi({
        description: "An inbound message's id (`messageId` of its `message.received` event).",
        format: "uuid",
        example: EXAMPLE.inboundMessageId,
      }),
    }),
    body: {
      required: false,
      content: { "application/json": { schema: MarkReadRequest, example: { typing: true } } },
    },
  },
  responses: {
    200: jsonContent(ReadMark, "Marked read (now, or by an earlier call).", {
      messageId: EXAMPLE.inboundMessageId,
      readAt: "2026-11-22T18:40:05.210Z",
      typingIndicator: true,
    }),
    ...errorResponses(400, 401, 403, 404, 429),
    502: {
      description: "The operator refused the read mark or did not answer: nothing was marked.",
      headers: requestIdHeader,
      content: {
        "application/json": {
          schema: ReadMarkRefused,
          example: {
            error: {
              code: "upstream_auth_failed",
              message: "The number's access token is invalid or expired.",
              requestId: "req_6a4c0e3f2b9d4e71a8c5d2f1e0b3a7c9",
              retriable: true,
              upstreamCode: "190",
            },
          },
        },
      },
    },
  },
});

/** A body is optional here: none (no Content-Type) reads as `{}`; one that is sent must be JSON, as everywhere. */
async function optionalJsonBody(c: Context<AppEnv>, next: Next) {
  if (c.req.header("content-type") === undefined && (c.req.header("content-length") ?? "0") === "0") return next();
  return jsonBody(c, next);
}

export const readMarkRoutes = newRouter().openapi(markReadRoute, async (c) => {
  const { id } = c.req.valid("param");
  const typing = c.req.valid("json").typing === true;
  const { workspaceId } = c.get("principal");
  // Before the lookup: unknown ids are not free.
  await enforceLimit(c, scopes.workspace(workspaceId), [bucket("readMark")], "1200 read marks per 60 s per workspace");
  const outcome = await markRead(c.env, workspaceId, id, typing);
  switch (outcome.kind) {
    case "marked":
      return c.json(outcome.mark, 200);
    case "not_found":
      throw notFound("Message");
    case "outbound":
      throw new ApiError("invalid_request", "Only a message a user sent (an inbound message) can be marked read.", {
        details: [
          {
            path: "id",
            rule: "inbound_only",
            message: "This is a message your workspace sent; mark the user's message you are answering instead.",
          },
        ],
      });
    case "disconnected":
      throw new ApiError("forbidden", "The message's channel number is disconnected: nothing can be marked with it.");
    case "refused":
      return c.json(
        {
          error: {
            code: outcome.error.code,
            message: outcome.error.message,
            requestId: c.get("requestId"),
            retriable: outcome.error.retriable,
            upstreamCode: outcome.error.upstreamCode,
          },
        },
        502,
      );
  }
});
