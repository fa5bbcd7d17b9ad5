import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../context";
import { bearerSecurity, errorResponses, jsonContent, newRouter } from "../lib/openapi";
import { getWebhook, listWebhooks, upsertWebhook, webhookIdOfNumber, type WebhookRow } from "../db/webhooks";
import { workspaceStub } from "../durable-objects/stubs";
import type { AttemptRow } from "../durable-objects/workspace/event-log";
import { getConnectedNumber } from "../db/channel-numbers";
import { Webhook, toWebhookView } from "../domain/webhook-view";
import { EVENT_ID_PATTERN } from "../domain/events";
import { UUID_PATTERN } from "../domain/job-id";
import { PaginationQuery, decodeCursor, invalidCursor, toPage } from "../lib/pagination";
import { ApiError, notFound } from "../lib/errors";
import { isoNow } from "../lib/clock";
import { sealWebhookSecret } from "../lib/sealed-secrets";
import { jsonBody } from "../middleware/json-body";
import { noStore } from "../middleware/security-headers";
import { enforceLimit } from "../middleware/rate-limit";
import { bucket, scopes } from "../domain/abuse-limits";
import { checkWebhookUrl, checkWebhookUrlSyntax, type UrlCheck } from "../webhooks/ssrf";
import { newWebhookSecret } from "../webhooks/signature";

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
    nextRetryAt: z.string().datetime().nullable().openapi({ description: "When the next attempt is due, after a failed one." }),
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

const DELIVERY_OUTCOMES = ["delivered", "failed", "refused", "dead"] as const;

const toDeliveryView = (webhookId: string, row: AttemptRow): z.infer<typeof WebhookDelivery> => ({
  // Attempt rows are numbered per workspace; the id is stable and unique within the webhook.
  id: attemptId(webhookId, row.seq),
  eventId: row.event_id,
  eventType: row.event_type,
  attempt: row.attempt,
  nextRetryAt: row.next_retry_at === null ? null : new Date(row.next_retry_at).toISOString(),
  attemptedAt: new Date(row.attempted_at).toISOString(),
  statusCode: row.status_code,
  latencyMs: row.latency_ms,
  error: row.error,
  outcome: DELIVERY_OUTCOMES.find((o) => o === row.outcome) ?? "failed",
});

/** A UUID-shaped id for an attempt row, derived from the webhook's id and the row's sequence number. */
function attemptId(webhookId: string, seq: number): string {
  const hex = seq.toString(16).padStart(12, "0").slice(-12);
  return `${webhookId.slice(0, 24)}${hex}`;
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
    const after = decodeCursor(cursor);
    const before = after === undefined ? null : Number(after.sortKey);
    if (before !== null && !Number.isSafeInteger(before)) throw invalidCursor();
    const rows = await workspaceStub(c.env, webhook.workspace_id).listDeliveries(webhook.id, before, limit + 1);
    return c.json(toPage(rows, limit, (r) => ({ sortKey: String(r.seq), id: "" }), (r) => toDeliveryView(webhook.id, r)), 200);
  })
  .openapi(replay, async (c) => {
    const { id, eventId } = c.req.valid("param");
    const webhook = await ownWebhook(c.env.DB, c.get("principal").workspaceId, id);
    const stub = workspaceStub(c.env, webhook.workspace_id);
    if (!EVENT_ID_PATTERN.test(eventId)) throw notFound("Event");
    requireEnabled(webhook);
    await limitTriggers(c, webhook, "webhookReplay");
    if (!(await stub.replayEvent(webhook.channel_number_id, eventId))) throw notFound("Event");
    return c.json({ eventId, status: "queued" as const }, 202);
  })
  .openapi(sendTest, async (c) => {
    const { id } = c.req.valid("param");
    const webhook = await ownWebhook(c.env.DB, c.get("principal").workspaceId, id);
    requireEnabled(webhook);
    await limitTriggers(c, webhook, "webhookTest");
    const eventId = await workspaceStub(c.env, webhook.workspace_id).recordTestEvent(webhook.workspace_id, webhook.channel_number_id);
    return c.json({ eventId, status: "queued" as const }, 202);
  });
