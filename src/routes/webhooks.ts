import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../context";
import { bearerSecurity, errorResponses, jsonContent, newRouter } from "../lib/openapi";
import {
  getEventOfWebhook,
  getWebhook,
  listDeliveries,
  webhookIdOfNumber,
  listWebhooks,
  upsertWebhook,
  type DeliveryListRow,
  type WebhookRow,
} from "../db/webhooks";
import { getConnectedNumber } from "../db/channel-numbers";
import { Webhook, toWebhookView } from "../domain/webhook-view";
import type { WebhookEvent, WebhookQueueMessage } from "../domain/events";
import { UUID_PATTERN } from "../domain/job-id";
import { PaginationQuery, decodeCursor, toPage } from "../lib/pagination";
import { ApiError, notFound } from "../lib/errors";
import { isoNow } from "../lib/clock";
import { sealWebhookSecret } from "../lib/sealed-secrets";
import { jsonBody } from "../middleware/json-body";
import { noStore } from "../middleware/security-headers";
import { checkWebhookUrl, checkWebhookUrlSyntax, type UrlCheck } from "../webhooks/ssrf";
import { newWebhookSecret } from "../webhooks/signature";
import { bucket, scopes } from "../domain/abuse-limits";
import { enforceLimit } from "../middleware/rate-limit";

const WebhookList = z.object({ data: z.array(Webhook), nextCursor: z.string().nullable() }).openapi("WebhookList");

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

const ConfigureWebhookResponse = Webhook.extend({
  secret: z.string().openapi({
    example: "whsec_xpy1Lo63uByyVzKTVQkxY9CGRmMeIjQaDMVQqHtunxs=",
    description: "Signing secret (`whsec_` + base64). Shown only in this response: store it now.",
  }),
}).openapi("ConfigureWebhookResponse");

const WebhookDelivery = z
  .object({
    id: z.string().uuid(),
    eventId: z.string().openapi({ description: "The event's `webhook-id`; the same on every attempt and replay." }),
    eventType: z.string().nullable(),
    attempt: z.number().int().openapi({ description: "Attempt number within the delivery run (a replay starts a new run at 1)." }),
    attemptedAt: z.string().datetime(),
    statusCode: z.number().int().nullable().openapi({ description: "HTTP status your endpoint answered, if it answered." }),
    latencyMs: z.number().int().nullable(),
    error: z.string().nullable(),
    outcome: z.enum(["delivered", "failed", "refused", "dead"]).openapi({
      description: "`refused`: the URL failed the SSRF check at delivery time. `dead`: retries ran out after the previous attempt.",
    }),
  })
  .openapi("WebhookDelivery");

const WebhookDeliveryList = z
  .object({ data: z.array(WebhookDelivery), nextCursor: z.string().nullable() })
  .openapi("WebhookDeliveryList");

const EventAccepted = z
  .object({ eventId: z.string().openapi({ description: "The event's `webhook-id`." }), status: z.literal("queued") })
  .openapi("WebhookEventQueued");

const WebhookParams = z.object({ id: z.string().openapi({ format: "uuid", description: "Webhook id." }) });

const list = createRoute({
  method: "get",
  path: "/webhooks",
  summary: "List the workspace's webhooks (secrets are never included)",
  security: bearerSecurity,
  request: { query: PaginationQuery },
  responses: { 200: jsonContent(WebhookList, "Webhooks, oldest first."), ...errorResponses(400, 401, 429) },
});

const configure = createRoute({
  method: "post",
  path: "/webhooks",
  summary: "Create or replace the webhook of a number",
  description:
    "One webhook per number: this creates it, or replaces its URL. Every call issues a new signing secret, returned only here; " +
    "the previous secret stops being used at once. Replacing also re-enables a disabled webhook. " +
    "The URL is checked against server-side request forgery (and again at every delivery).",
  security: bearerSecurity,
  // The answer carries the signing secret.
  middleware: [noStore, jsonBody] as const,
  request: { body: { required: true, content: { "application/json": { schema: ConfigureWebhookRequest } } } },
  responses: {
    201: jsonContent(ConfigureWebhookResponse, "The webhook and its signing secret (shown once)."),
    ...errorResponses(400, 401, 404, 429),
  },
});

const deliveries = createRoute({
  method: "get",
  path: "/webhooks/{id}/deliveries",
  summary: "List delivery attempts of a webhook, newest first (extension)",
  security: bearerSecurity,
  request: { params: WebhookParams, query: PaginationQuery },
  responses: { 200: jsonContent(WebhookDeliveryList, "Attempts, newest first."), ...errorResponses(400, 401, 404, 429) },
});

const replay = createRoute({
  method: "post",
  path: "/webhooks/{id}/deliveries/{eventId}/replay",
  summary: "Deliver a stored event again, with the same webhook-id (extension)",
  security: bearerSecurity,
  request: { params: WebhookParams.extend({ eventId: z.string().openapi({ description: "`eventId` from the delivery log." }) }) },
  responses: {
    202: jsonContent(EventAccepted, "Queued for delivery; it is signed again with the current secret."),
    ...errorResponses(400, 401, 404, 429),
  },
});

const sendTest = createRoute({
  method: "post",
  path: "/webhooks/{id}/test",
  summary: "Send a signed `webhook.test` event (extension)",
  security: bearerSecurity,
  request: { params: WebhookParams },
  responses: { 202: jsonContent(EventAccepted, "Queued for delivery."), ...errorResponses(400, 401, 404, 429) },
});

function refuseUrl(check: Extract<UrlCheck, { ok: false }>): ApiError {
  return new ApiError("invalid_request", "The webhook URL is not allowed.", {
    details: [{ path: "url", rule: "ssrf", message: check.reason }],
  });
}

async function ownWebhook(db: D1Database, workspaceId: string, id: string): Promise<WebhookRow> {
  // A malformed or foreign id is indistinguishable from an unknown one.
  const row = UUID_PATTERN.test(id) ? await getWebhook(db, workspaceId, id.toLowerCase()) : null;
  if (!row) throw notFound("Webhook");
  return row;
}

function requireEnabled(webhook: WebhookRow): void {
  if (webhook.status !== "enabled") {
    throw new ApiError("invalid_request", "The webhook is disabled. Configure it again with POST /webhooks to re-enable it.", {
      details: [{ path: "path.id", rule: "webhook_disabled", message: "Configure the webhook again to re-enable it." }],
    });
  }
}

/**
 * Test events and replays make us call a URL of the caller's choosing: limited
 * per webhook and per workspace (all-or-nothing: a request refused by one limit
 * spends nothing of the other).
 */
async function limitTriggers(c: Context<AppEnv>, webhook: WebhookRow, kind: "webhookTest" | "webhookReplay"): Promise<void> {
  const perWebhook = bucket(kind, webhook.id);
  const perWorkspace = bucket("webhookTriggers");
  await enforceLimit(
    c,
    scopes.workspace(webhook.workspace_id),
    [perWebhook, perWorkspace],
    `${kind === "webhookTest" ? "test events" : "replays"}: ${perWebhook.limit} per ${perWebhook.periodSeconds} s per webhook, ` +
      `${perWorkspace.limit} test events and replays per ${perWorkspace.periodSeconds} s per workspace`,
  );
}

const toDeliveryView = (row: DeliveryListRow): z.infer<typeof WebhookDelivery> => ({
  id: row.id,
  eventId: row.event_id,
  eventType: row.event_type,
  attempt: row.attempt,
  attemptedAt: row.attempted_at,
  statusCode: row.status_code,
  latencyMs: row.latency_ms,
  error: row.error,
  outcome: row.outcome,
});

/**
 * Creates or replaces the number's webhook with a new secret sealed for the
 * webhook's row id. If a concurrent request creates the row between our read of
 * its id and our write, the id is read again and the secret sealed again.
 */
async function storeWebhook(env: Env, w: { workspaceId: string; channelNumberId: string; url: string; secret: string }): Promise<WebhookRow> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const existing = await webhookIdOfNumber(env.DB, w.channelNumberId);
    if (existing && existing.workspace_id !== w.workspaceId) break;
    const id = existing?.id ?? crypto.randomUUID();
    const row = await upsertWebhook(env.DB, {
      id,
      workspaceId: w.workspaceId,
      channelNumberId: w.channelNumberId,
      // The parser's normal form is what deliveries call.
      url: w.url,
      sealedSecret: await sealWebhookSecret(env, id, w.secret),
      at: isoNow(),
    });
    if (row) return row;
  }
  throw new Error("webhook upsert kept losing a race, or matched a number of another workspace");
}

async function enqueue(env: Env, event: WebhookEvent): Promise<void> {
  const message: WebhookQueueMessage = { event };
  await env.WEBHOOK_QUEUE.send(message);
}

export const webhookRoutes = newRouter()
  .openapi(list, async (c) => {
    const { limit, cursor } = c.req.valid("query");
    const rows = await listWebhooks(c.env.DB, c.get("principal").workspaceId, limit + 1, decodeCursor(cursor));
    return c.json(toPage(rows, limit, (r) => ({ sortKey: r.created_at, id: r.id }), toWebhookView), 200);
  })
  .openapi(configure, async (c) => {
    const { channelNumberId, url } = c.req.valid("json");
    const { workspaceId } = c.get("principal");
    const allowInsecure = c.env.ALLOW_INSECURE_WEBHOOK_URLS === "true";

    // Input that is wrong whatever the number gets its 400 before the lookup.
    const syntax = checkWebhookUrlSyntax(url, { allowInsecure });
    if (!syntax.ok) throw refuseUrl(syntax);
    // A foreign, disconnected or unknown number: the same 404.
    const number = await getConnectedNumber(c.env.DB, workspaceId, channelNumberId.toLowerCase());
    if (!number) throw notFound("Channel number");
    const check = await checkWebhookUrl(url, { allowInsecure, dohResolverUrl: c.env.DOH_RESOLVER_URL });
    if (!check.ok) throw refuseUrl(check);

    const secret = newWebhookSecret();
    const row = await storeWebhook(c.env, { workspaceId, channelNumberId: number.id, url: check.url.href, secret });
    return c.json({ ...toWebhookView(row), secret }, 201);
  })
  .openapi(deliveries, async (c) => {
    const { id } = c.req.valid("param");
    const { limit, cursor } = c.req.valid("query");
    const webhook = await ownWebhook(c.env.DB, c.get("principal").workspaceId, id);
    const rows = await listDeliveries(c.env.DB, webhook.id, limit + 1, decodeCursor(cursor));
    return c.json(toPage(rows, limit, (r) => ({ sortKey: r.attempted_at, id: r.id }), toDeliveryView), 200);
  })
  .openapi(replay, async (c) => {
    const { id, eventId } = c.req.valid("param");
    const webhook = await ownWebhook(c.env.DB, c.get("principal").workspaceId, id);
    const row = eventId.length <= 200 ? await getEventOfWebhook(c.env.DB, webhook, eventId) : null;
    if (!row) throw notFound("Event");
    requireEnabled(webhook);
    await limitTriggers(c, webhook, "webhookReplay");
    const event: WebhookEvent = JSON.parse(row.payload);
    await enqueue(c.env, event);
    return c.json({ eventId: event.id, status: "queued" as const }, 202);
  })
  .openapi(sendTest, async (c) => {
    const { id } = c.req.valid("param");
    const webhook = await ownWebhook(c.env.DB, c.get("principal").workspaceId, id);
    requireEnabled(webhook);
    await limitTriggers(c, webhook, "webhookTest");
    const event: WebhookEvent = {
      // The same id format as every other event (`evt_` + 32 hex digits).
      id: `evt_${crypto.randomUUID().replaceAll("-", "")}`,
      type: "webhook.test",
      workspaceId: webhook.workspace_id,
      channelNumberId: webhook.channel_number_id,
      createdAt: isoNow(),
      data: { message: "This is a test event. Your endpoint received and can verify our webhooks." },
    };
    await enqueue(c.env, event);
    return c.json({ eventId: event.id, status: "queued" as const }, 202);
  });
