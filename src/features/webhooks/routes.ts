import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../context";
import { bearerSecurity, errorResponses, jsonContent, jsonRequestBody, newRouter } from "../../lib/openapi";
import { EXAMPLE } from "../../lib/openapi-examples";
import { listWebhooks, type WebhookRow } from "./store";
import { WebhookDelivery, redactWebhookUrl, toDeliveryView } from "../../domain/webhook-view";
import { auditApi } from "../audit/api-audit";
import { configureWebhook } from "./configure-webhook";
import { deliveryLog } from "./delivery-attempts";
import { findOwnWebhook } from "./find-webhook";
import { replayEvent, sendTestEvent } from "./trigger-events";
import { PaginationQuery, decodeCursor, invalidCursor, toPage } from "../../lib/pagination";
import { ApiError, foundOr404, notFound } from "../../lib/errors";
import { jsonBody } from "../../middleware/json-body";
import { noStore } from "../../middleware/security-headers";
import { limitHeaders, throwIfLimited } from "../../middleware/rate-limit";
import type { Caller } from "../../domain/actor";
import type { WebhookApiVersion } from "../../messages/events";

export const Webhook = z
  .object({
    id: z.string().uuid(),
    channelNumberId: z.string().uuid(),
    url: z.string().url(),
    status: z.enum(["enabled", "disabled"]).openapi({
      description: "`disabled` after the endpoint kept failing for days; configure it again to re-enable.",
    }),
    failingSince: z.string().datetime().nullable(),
    disabledAt: z.string().datetime().nullable(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Webhook");

export const toWebhookView = (row: WebhookRow): z.infer<typeof Webhook> => ({
  id: row.id,
  channelNumberId: row.channel_number_id,
  url: row.url,
  status: row.status,
  failingSince: row.failing_since,
  disabledAt: row.disabled_at,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

export const WebhookList = z
  .object({ data: z.array(Webhook), nextCursor: z.string().nullable() })
  .openapi("WebhookList");

/** A webhook as API v2 shows it: v1's view and the API version whose event shapes it receives. */
export const WebhookV2 = z
  .object({
    ...Webhook.shape,
    apiVersion: z.union([z.literal(1), z.literal(2)]).openapi({
      description:
        "The API version the webhook was configured through, whose event shapes it receives: `2` through " +
        "`POST /api/v2/webhooks` (`delivered` and `read` are statuses of their own), `1` through `POST /api/v1/webhooks`.",
    }),
  })
  .openapi("WebhookV2");

export const toWebhookViewV2 = (row: WebhookRow): z.infer<typeof WebhookV2> => ({
  ...toWebhookView(row),
  apiVersion: row.api_version,
});

const WebhookListV2 = z
  .object({ data: z.array(WebhookV2), nextCursor: z.string().nullable() })
  .openapi("WebhookListV2");

const MAX_URL_CHARS = 2048;

const ConfigureWebhookRequest = z
  .strictObject(
    {
      channelNumberId: z
        .string({ error: "channelNumberId must be a string (a number id from GET /channel-numbers)." })
        .uuid({ error: "channelNumberId must be a UUID taken from GET /channel-numbers." })
        .openapi({ format: "uuid", description: "Number whose webhook is set." }),
      url: z
        .string({ error: "url must be a string." })
        .min(1, { error: "url is empty." })
        .max(MAX_URL_CHARS, { error: `url is longer than ${MAX_URL_CHARS} characters.` })
        .openapi({
          example: "https://hooks.example.com/messaging",
          description:
            "Public HTTPS URL. Refused: userinfo, non-public IP literals in any encoding, local or metadata host names, " +
            "well-known ports other than 443, and host names that resolve to any non-public address.",
        }),
    },
    { error: "The body must be a JSON object." },
  )
  .openapi("ConfigureWebhookRequest");

export const ConfigureWebhookResponse = Webhook.extend({
  secret: z.string().openapi({
    example: "whsec_xpy1Lo63uByyVzKTVQkxY9CGRmMeIjQaDMVQqHtunxs=",
    description: "Signing secret (`whsec_` + base64). Shown only in this response: store it now.",
  }),
}).openapi("ConfigureWebhookResponse");

const ConfigureWebhookResponseV2 = z
  .object({ ...WebhookV2.shape, secret: ConfigureWebhookResponse.shape.secret })
  .openapi("ConfigureWebhookResponseV2");

const WebhookDeliveryList = z
  .object({ data: z.array(WebhookDelivery), nextCursor: z.string().nullable() })
  .openapi("WebhookDeliveryList");

const EventAccepted = z
  .object({ eventId: z.string().openapi({ description: "The event's `webhook-id`." }), status: z.literal("queued") })
  .openapi("WebhookEventQueued");

const WebhookParams = z.object({
  id: z.string().openapi({ format: "uuid", description: "Webhook id.", example: EXAMPLE.webhookId }),
});

const WEBHOOK_EXAMPLE: z.output<typeof Webhook> = {
  id: EXAMPLE.webhookId,
  channelNumberId: EXAMPLE.channelNumberId,
  url: "https://hooks.example.com/messaging",
  status: "enabled",
  failingSince: null,
  disabledAt: null,
  createdAt: EXAMPLE.createdAt,
  updatedAt: EXAMPLE.createdAt,
};

const QUEUED_EXAMPLE = { eventId: EXAMPLE.eventId, status: "queued" as const };

const list = createRoute({
  method: "get",
  path: "/webhooks",
  "x-key-role": "viewer",
  operationId: "listWebhooks",
  tags: ["Webhooks"],
  summary: "List the workspace's webhooks (secrets are never included)",
  security: bearerSecurity,
  request: { query: PaginationQuery },
  responses: {
    200: jsonContent(WebhookList, "Webhooks, oldest first.", { data: [WEBHOOK_EXAMPLE], nextCursor: null }),
    ...errorResponses(400, 401, 429),
  },
});

const configure = createRoute({
  method: "post",
  path: "/webhooks",
  "x-key-role": "developer",
  operationId: "configureWebhook",
  tags: ["Webhooks"],
  summary: "Create or replace the webhook of a number",
  description:
    "One webhook per number: this creates it, or replaces its URL. Every call issues a new signing secret, returned only here; " +
    "the previous secret stops being used at once. Replacing also re-enables a disabled webhook. " +
    "The URL is checked against server-side request forgery (and again at every delivery).",
  security: bearerSecurity,
  // The answer carries the signing secret.
  middleware: [noStore, jsonBody] as const,
  request: {
    body: jsonRequestBody(ConfigureWebhookRequest, {
      channelNumberId: EXAMPLE.channelNumberId,
      url: "https://hooks.example.com/messaging",
    }),
  },
  responses: {
    201: jsonContent(ConfigureWebhookResponse, "The webhook and its signing secret (shown once).", {
      ...WEBHOOK_EXAMPLE,
      secret: "whsec_xpy1Lo63uByyVzKTVQkxY9CGRmMeIjQaDMVQqHtunxs=",
    }),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

const deliveries = createRoute({
  method: "get",
  path: "/webhooks/{id}/deliveries",
  "x-key-role": "viewer",
  operationId: "listWebhookDeliveries",
  tags: ["Webhooks"],
  summary: "List delivery attempts of a webhook, newest first (extension)",
  security: bearerSecurity,
  request: { params: WebhookParams, query: PaginationQuery },
  responses: {
    200: jsonContent(WebhookDeliveryList, "Attempts, newest first.", {
      data: [
        {
          id: EXAMPLE.deliveryId,
          eventId: EXAMPLE.eventId,
          eventType: "message.status",
          attempt: 1,
          nextRetryAt: null,
          attemptedAt: EXAMPLE.updatedAt,
          statusCode: 204,
          latencyMs: 84,
          error: null,
          outcome: "delivered",
        },
      ],
      nextCursor: null,
    }),
    ...errorResponses(400, 401, 404, 429),
  },
});

const replay = createRoute({
  method: "post",
  path: "/webhooks/{id}/deliveries/{eventId}/replay",
  "x-key-role": "developer",
  operationId: "replayWebhookEvent",
  tags: ["Webhooks"],
  summary: "Deliver a stored event again, with the same webhook-id (extension)",
  security: bearerSecurity,
  request: {
    params: WebhookParams.extend({
      eventId: z.string().openapi({ description: "`eventId` from the delivery log.", example: EXAMPLE.eventId }),
    }),
  },
  responses: {
    202: jsonContent(EventAccepted, "Queued for delivery; it is signed again with the current secret.", QUEUED_EXAMPLE),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

const WEBHOOK_EXAMPLE_V2: z.output<typeof WebhookV2> = { ...WEBHOOK_EXAMPLE, apiVersion: 2 };

const listV2 = createRoute({
  ...list,
  responses: {
    200: jsonContent(WebhookListV2, "Webhooks, oldest first.", { data: [WEBHOOK_EXAMPLE_V2], nextCursor: null }),
    ...errorResponses(400, 401, 429),
  },
});

const configureV2 = createRoute({
  ...configure,
  description:
    "As v1's, and the webhook receives API v2's event shapes (`delivered` and `read` are statuses of their own in " +
    "`message.status`). Configuring a number's webhook through `/api/v1/webhooks` again gives it v1's shapes.",
  responses: {
    201: jsonContent(ConfigureWebhookResponseV2, "The webhook and its signing secret (shown once).", {
      ...WEBHOOK_EXAMPLE_V2,
      secret: "whsec_xpy1Lo63uByyVzKTVQkxY9CGRmMeIjQaDMVQqHtunxs=",
    }),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

const sendTest = createRoute({
  method: "post",
  path: "/webhooks/{id}/test",
  "x-key-role": "developer",
  operationId: "sendWebhookTest",
  tags: ["Webhooks"],
  summary: "Send a signed `webhook.test` event (extension)",
  security: bearerSecurity,
  request: { params: WebhookParams },
  responses: {
    202: jsonContent(EventAccepted, "Queued for delivery.", QUEUED_EXAMPLE),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

function refuseUrl(reason: string): ApiError {
  return new ApiError("invalid_request", "The webhook URL is not allowed.", {
    details: [{ path: "url", rule: "ssrf", message: reason }],
  });
}

const callerOf = (c: Context<AppEnv>): Caller => {
  const { workspaceId, keyId } = c.get("principal");
  return { workspaceId, actor: { type: "api_key", id: keyId } };
};

async function ownWebhook(db: D1Database, workspaceId: string, id: string): Promise<WebhookRow> {
  // A malformed or foreign id is indistinguishable from an unknown one.
  return foundOr404(await findOwnWebhook(db, workspaceId, id), "Webhook");
}

function requireEnabled(webhook: WebhookRow): void {
  if (webhook.status !== "enabled") {
    throw new ApiError(
      "invalid_request",
      "The webhook is disabled. Configure it again with POST /webhooks to re-enable it.",
      {
        details: [
          { path: "path.id", rule: "webhook_disabled", message: "Configure the webhook again to re-enable it." },
        ],
      },
    );
  }
}

/** The workspace's webhooks from a cursor: a page of rows one more than `limit` (whose view each version makes). */
const webhookRows = (c: Context<AppEnv>, query: { limit: number; cursor?: string | undefined }) =>
  listWebhooks(c.env.DB, c.get("principal").workspaceId, query.limit + 1, decodeCursor(query.cursor));

const pageKey = (r: WebhookRow) => ({ sortKey: r.created_at, id: r.id });

/**
 * Configures the webhook of a number through the API of `apiVersion` (its event shapes), audited;
 * a refusal thrown as the uniform error.
 */
async function configureThrough(
  c: Context<AppEnv>,
  request: { channelNumberId: string; url: string },
  apiVersion: WebhookApiVersion,
): Promise<{ webhook: WebhookRow; secret: string }> {
  const outcome = await configureWebhook(c.env, callerOf(c), request.channelNumberId, request.url, apiVersion);
  throwIfLimited(outcome);
  if (!outcome.ok) throw outcome.problem === "url" ? refuseUrl(outcome.reason) : notFound("Channel number");
  limitHeaders(c, outcome.limit);
  await auditApi(c, {
    action: "webhook.configured",
    target: { type: "webhook", id: outcome.webhook.id },
    detail: `number ${outcome.webhook.channel_number_id}, ${redactWebhookUrl(outcome.webhook.url)}, API v${apiVersion}`,
  });
  return outcome;
}

/** A webhook's delivery log, replays and test events: the same in every version. */
const webhookEventRoutes = newRouter()
  .openapi(deliveries, async (c) => {
    const { id } = c.req.valid("param");
    const { limit, cursor } = c.req.valid("query");
    const webhook = await ownWebhook(c.env.DB, c.get("principal").workspaceId, id);
    const after = decodeCursor(cursor);
    const before = after === undefined ? null : Number(after.sortKey);
    if (before !== null && !Number.isSafeInteger(before)) throw invalidCursor();
    const rows = await deliveryLog(c.env, webhook, before, limit + 1);
    return c.json(
      toPage(
        rows,
        limit,
        (r) => ({ sortKey: String(r.seq), id: "" }),
        (r) => toDeliveryView(webhook.id, r),
      ),
      200,
    );
  })
  .openapi(replay, async (c) => {
    const { id, eventId } = c.req.valid("param");
    const webhook = await ownWebhook(c.env.DB, c.get("principal").workspaceId, id);
    requireEnabled(webhook);
    const outcome = await replayEvent(c.env, webhook, eventId);
    throwIfLimited(outcome);
    if (!outcome.ok) throw notFound("Event");
    limitHeaders(c, outcome.limit);
    await auditApi(c, {
      action: "webhook.event_replayed",
      target: { type: "webhook", id: webhook.id },
      detail: `event ${eventId}`,
    });
    return c.json({ eventId, status: "queued" as const }, 202);
  })
  .openapi(sendTest, async (c) => {
    const { id } = c.req.valid("param");
    const webhook = await ownWebhook(c.env.DB, c.get("principal").workspaceId, id);
    requireEnabled(webhook);
    const outcome = await sendTestEvent(c.env, webhook);
    throwIfLimited(outcome);
    limitHeaders(c, outcome.limit);
    await auditApi(c, {
      action: "webhook.test_sent",
      target: { type: "webhook", id: webhook.id },
      detail: `event ${outcome.eventId}`,
    });
    return c.json({ eventId: outcome.eventId, status: "queued" as const }, 202);
  });

/** Webhooks configured through v1 receive v1's event shapes (v1's view does not show the version). */
export const webhookRoutes = newRouter()
  .openapi(list, async (c) => {
    const query = c.req.valid("query");
    return c.json(toPage(await webhookRows(c, query), query.limit, pageKey, toWebhookView), 200);
  })
  .openapi(configure, async (c) => {
    const { webhook, secret } = await configureThrough(c, c.req.valid("json"), 1);
    return c.json({ ...toWebhookView(webhook), secret }, 201);
  })
  .route("/", webhookEventRoutes);

/** Webhooks configured through v2 receive v2's event shapes; its views show each webhook's version. */
export const webhookRoutesV2 = newRouter()
  .openapi(listV2, async (c) => {
    const query = c.req.valid("query");
    return c.json(toPage(await webhookRows(c, query), query.limit, pageKey, toWebhookViewV2), 200);
  })
  .openapi(configureV2, async (c) => {
    const { webhook, secret } = await configureThrough(c, c.req.valid("json"), 2);
    return c.json({ ...toWebhookViewV2(webhook), secret }, 201);
  })
  .route("/", webhookEventRoutes);
