import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent, jsonRequestBody, newRouter } from "../../lib/openapi";
import { EXAMPLE } from "../../lib/openapi-examples";
import { IdempotencyKeyHeader } from "../../domain/send-request";
import { ownContentOf, SendMessageRequestV2 } from "../../domain/send-request-v2";
import { templateSendContent } from "../../domain/template-send";
import { templatesForSend } from "../../features/templates/number-templates";
import { MessageListQuery, toFilter } from "../../messages/list";
import { findByUuid } from "../../lib/job-id";
import { jsonBody } from "../../middleware/json-body";
import type { SendContent } from "../../messages/send";
import { admitSend, MESSAGE_EXAMPLE, MessageList, messagePage, sendResponses, sendValidationHook } from "../messages";

const send = createRoute({
  method: "post",
  path: "/messages",
  "x-key-role": "developer",
  operationId: "sendMessageV2",
  tags: ["Messages"],
  summary: "Queue a text or template message for delivery",
  description:
    "As v1's send (same `Idempotency-Key` rules, limits, quota and statuses), plus `type: template`: an approved template " +
    "of the number's business account (`GET /templates`), with its parameters. A template is checked before anything is " +
    "queued: an unknown name (`template_not_found`), a language it does not have (`template_language_not_found`), a " +
    "paused template (`template_paused`), any other status than APPROVED (`template_not_approved`), or parameters that do " +
    "not fit it (`template_parameters_invalid`, `details` naming each) answer 400. A template is how a business starts a " +
    "conversation: it is delivered outside the 24-hour window, where free-form text is not.",
  security: bearerSecurity,
  middleware: [jsonBody] as const,
  request: {
    headers: z.object({ "idempotency-key": IdempotencyKeyHeader }),
    body: jsonRequestBody(SendMessageRequestV2, {
      channelNumberId: EXAMPLE.channelNumberId,
      to: EXAMPLE.to,
      type: "template",
      template: { name: "order_update", language: "en_US", parameters: { body: ["Ana", "#1042", "Friday"] } },
    }),
  },
  responses: sendResponses,
});

const MessageListQueryV2 = MessageListQuery.safeExtend({
  type: z
    .string()
    .regex(/^[a-z_]{1,32}$/, { error: "type is a message type: text, template, or an inbound type such as image." })
    .optional()
    .openapi({
      description: "Only messages of this type: `text`, `template`, or an inbound message's type (`image`, …).",
      example: "template",
    }),
});

const list = createRoute({
  method: "get",
  path: "/messages",
  "x-key-role": "viewer",
  operationId: "listMessagesV2",
  tags: ["Messages"],
  summary: "List messages, outbound and inbound, newest first",
  description:
    "As v1's list, with a `type` filter. Pages are bounded in the work they do: a page can hold fewer than `limit` " +
    "messages while more exist; keep following `nextCursor` until it is null.",
  security: bearerSecurity,
  request: { query: MessageListQueryV2 },
  responses: {
    200: jsonContent(MessageList, "Messages, newest first.", { data: [MESSAGE_EXAMPLE], nextCursor: EXAMPLE.cursor }),
    ...errorResponses(400, 401, 429),
  },
});

/**
 * What a v2 send records: a text as in v1, or a template checked against the number's templates
 * now (a number that is not the workspace's is left to the workspace object's 403).
 */
async function contentOf(env: Env, workspaceId: string, request: SendMessageRequestV2): Promise<SendContent> {
  const own = ownContentOf(request);
  if (own) return own;
  const { template } = request;
  if (!template) throw new Error("a validated template send has its template");
  const found = await findByUuid(request.channelNumberId, (id) =>
    templatesForSend(env.DB, workspaceId, id, template.name),
  );
  // Not the workspace's number: the workspace object answers 403 as for any send.
  if (!found)
    return {
      refused: {
        code: "forbidden",
        message: "channelNumberId is not a connected number of this workspace.",
        details: [],
      },
    };
  return templateSendContent(found.templates, template, found.hasAccount);
}

export const messageRoutesV2 = newRouter()
  .openapi(
    send,
    async (c) => {
      const request = c.req.valid("json");
      const content = await contentOf(c.env, c.get("principal").workspaceId, request);
      const admitted = await admitSend(c, request, content);
      return admitted.status === 201 ? c.json(admitted.body, 201) : c.json(admitted.body, 200);
    },
    (result, c) => sendValidationHook(result, c),
  )
  .openapi(list, async (c) => {
    const query = c.req.valid("query");
    const filter = toFilter(query);
    if (query.type !== undefined) filter.type = query.type;
    return c.json(await messagePage(c, filter, query), 200);
  });
