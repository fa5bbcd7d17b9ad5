import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent, jsonRequestBody, newRouter } from "../../lib/openapi";
import { EXAMPLE } from "../../lib/openapi-examples";
import { IdempotencyKeyHeader } from "../../domain/send-request";
import { ownContentOf, SendMessageRequestV2 } from "../../domain/send-request-v2";
import { templateSendContent } from "../../domain/template-send";
import { templatesForSend } from "../../features/templates/number-templates";
import { richSendContent } from "../../features/messages/rich-send";
import { listQueryRules, MessageListQueryFields, toFilterV2 } from "../../messages/list";
import { MESSAGE_STATUSES_V2 } from "../../messages/status";
import { findByUuid, storedUuid } from "../../lib/job-id";
import { now } from "../../lib/clock";
import { findUploadedMedia } from "../../db/uploaded-media";
import type { UploadedMedia } from "../../messages/uploaded-media";
import { jsonBody } from "../../middleware/json-body";
import type { SendContent } from "../../messages/send";
import { admitSend, MESSAGE_EXAMPLE, sendResponses, sendValidationHook } from "../messages";
import { MessageListV2, MessageV2, OutboundMessageV2, toMessageViewV2 } from "../../messages/message-v2";
import { listMessagePageAs } from "../../features/messages/message-page";
import { readMessageAs } from "../../engine/messages";
import { foundOr404 } from "../../lib/errors";

const send = createRoute({
  method: "post",
  path: "/messages",
  "x-key-role": "developer",
  operationId: "sendMessageV2",
  tags: ["Messages"],
  summary: "Queue a message of any type for delivery",
  description:
    "As v1's send (same `Idempotency-Key` rules, limits, quota and statuses), plus `type: template`: an approved template " +
    "of the number's business account (`GET /templates`), with its parameters. A template is checked before anything is " +
    "queued: an unknown name (`template_not_found`), a language it does not have (`template_language_not_found`), a " +
    "paused template (`template_paused`), any other status than APPROVED (`template_not_approved`), or parameters that do " +
    "not fit it (`template_parameters_invalid`, `details` naming each) answer 400. A template is how a business starts a " +
    "conversation: it is delivered outside the 24-hour window, where free-form text is not. Every other type but text " +
    "(media by link, `interactive`, `location`, `contacts`, `reaction`) is checked against the recipient's 24-hour " +
    "window before anything is queued: outside it, 400 `service_window_closed`. A reaction names a message you " +
    "received by its id; one that is unknown on this number, from another sender, or itself a reaction answers 400 " +
    "`invalid_request` naming `reaction.messageId`. Each type's limits are the operator's (docs/customers/rich-messages.md).",
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

/** A v2 message: an image sent by link (a text message reads as in v1). */
const MESSAGE_EXAMPLE_V2: z.output<typeof OutboundMessageV2> = {
  ...MESSAGE_EXAMPLE,
  type: "image",
  text: { body: "[image] Your parcel" },
  image: { link: "https://cdn.example.com/parcel.png", caption: "Your parcel" },
};

const get = createRoute({
  method: "get",
  path: "/messages/{id}",
  "x-key-role": "viewer",
  operationId: "getMessage",
  tags: ["Messages"],
  summary: "Get a message and its delivery status",
  description:
    "As v1's, with each type's fields (a rich message's object under its type's name, as it was sent) and v2's " +
    "statuses: `delivered` and `read` are statuses of their own.",
  security: bearerSecurity,
  request: {
    params: z.object({
      id: z.string().openapi({ description: "The jobId returned on send.", format: "uuid", example: EXAMPLE.jobId }),
    }),
  },
  responses: {
    200: jsonContent(MessageV2, "The message record.", MESSAGE_EXAMPLE_V2),
    ...errorResponses(401, 404, 429),
  },
});

const MessageListQueryV2 = MessageListQueryFields.extend({
  status: z
    .enum([...MESSAGE_STATUSES_V2, "received"])
    .optional()
    .openapi({
      description:
        "Outbound statuses (`sent` only those the operator has not reported delivered or read since; `delivered` " +
        "those not read yet), or `received` (every inbound message).",
      example: "delivered",
    }),
  type: z
    .string()
    .regex(/^[a-z_]{1,32}$/, { error: "type is a message type: text, template, or an inbound type such as image." })
    .optional()
    .openapi({
      description:
        "Only messages of this type: `text`, `template`, a rich message's (`image`, `interactive`, `reaction`, …), " +
        "or an inbound message's type.",
      example: "template",
    }),
}).superRefine(listQueryRules);

const list = createRoute({
  method: "get",
  path: "/messages",
  "x-key-role": "viewer",
  operationId: "listMessagesV2",
  tags: ["Messages"],
  summary: "List messages, outbound and inbound, newest first",
  description:
    "As v1's list, with a `type` filter and v2's statuses (`status=delivered`, `status=read`). Pages are bounded in the work they do: a page can hold fewer than `limit` " +
    "messages while more exist; keep following `nextCursor` until it is null.",
  security: bearerSecurity,
  request: { query: MessageListQueryV2 },
  responses: {
    200: jsonContent(MessageListV2, "Messages, newest first.", {
      data: [MESSAGE_EXAMPLE_V2],
      nextCursor: EXAMPLE.cursor,
    }),
    ...errorResponses(400, 401, 429),
  },
});

/**
 * What a v2 send records: a text as in v1, a template checked against the number's templates
 * now, or a rich kind checked against the recipient's window (and a reaction's message) now (a
 * number that is not the workspace's is left to the workspace object's 403).
 */
async function contentOf(env: Env, workspaceId: string, request: SendMessageRequestV2): Promise<SendContent> {
  const own = ownContentOf(request);
  if (request.type === "text" && own) return own;
  if (request.type !== "template") return richSendContent(env, workspaceId, request, own);
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
  return templateSendContent(
    found.templates,
    template,
    found.hasAccount,
    await headerMediaOf(env, workspaceId, template),
  );
}

/** The stored file a template's media header names by `mediaId`, while it is kept (null otherwise, or none named). */
async function headerMediaOf(
  env: Env,
  workspaceId: string,
  template: NonNullable<SendMessageRequestV2["template"]>,
): Promise<UploadedMedia | null> {
  const header = template.parameters?.header;
  const id = typeof header === "object" && "mediaId" in header ? storedUuid(header.mediaId) : null;
  if (id === null) return null;
  const media = await findUploadedMedia(env.DB, workspaceId, id);
  return media && media.expiresAt > now() ? media : null;
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
    const filter = toFilterV2(query);
    if (query.type !== undefined) filter.type = query.type;
    const page = await listMessagePageAs(c.env, c.get("principal").workspaceId, filter, query, toMessageViewV2);
    return c.json({ data: page.messages, nextCursor: page.nextCursor }, 200);
  })
  .openapi(get, async (c) => {
    const { id } = c.req.valid("param");
    const read = foundOr404(await readMessageAs(c.env, c.get("principal").workspaceId, id, toMessageViewV2), "Message");
    return c.json(read.message, 200);
  });
