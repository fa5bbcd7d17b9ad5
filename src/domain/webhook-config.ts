import { getEventOfWebhook, getWebhook, upsertWebhook, type WebhookRow } from "../db/webhooks";
import { getConnectedNumber } from "../db/channel-numbers";
import type { WebhookEvent, WebhookQueueMessage } from "./events";
import { UUID_PATTERN } from "./job-id";
import { isoNow } from "../lib/clock";
import { seal } from "../lib/secret-box";
import { checkWebhookUrl, checkWebhookUrlSyntax } from "../webhooks/ssrf";
import { newWebhookSecret } from "../webhooks/signature";

// What the API routes and the dashboard share about configuring webhooks and
// sending them events. Each caller turns the outcomes into its own answer
// (an error envelope, or a message beside a form field).

export type ConfigureOutcome =
  | { ok: true; webhook: WebhookRow; secret: string }
  | { ok: false; problem: "url"; reason: string }
  | { ok: false; problem: "number_not_found" };

/**
 * Creates or replaces the webhook of a connected number of the workspace after
 * the SSRF checks; a new signing secret every time (returned here only).
 */
export async function configureWebhook(env: Env, workspaceId: string, channelNumberId: string, url: string): Promise<ConfigureOutcome> {
  const allowInsecure = env.ALLOW_INSECURE_WEBHOOK_URLS === "true";
  // Input that is wrong whatever the number gets its answer before the lookup.
  const syntax = checkWebhookUrlSyntax(url, { allowInsecure });
  if (!syntax.ok) return { ok: false, problem: "url", reason: syntax.reason };
  // A foreign, disconnected or unknown number: the same answer.
  const number = UUID_PATTERN.test(channelNumberId) ? await getConnectedNumber(env.DB, workspaceId, channelNumberId.toLowerCase()) : null;
  if (!number) return { ok: false, problem: "number_not_found" };
  const check = await checkWebhookUrl(url, { allowInsecure, dohResolverUrl: env.DOH_RESOLVER_URL });
  if (!check.ok) return { ok: false, problem: "url", reason: check.reason };

  const secret = newWebhookSecret();
  const webhook = await upsertWebhook(env.DB, {
    id: crypto.randomUUID(),
    workspaceId,
    channelNumberId: number.id,
    // The parser's normal form is what deliveries call.
    url: check.url.href,
    sealedSecret: await seal(env.CREDENTIALS_ENCRYPTION_KEY, secret),
    at: isoNow(),
  });
  return { ok: true, webhook, secret };
}

/** A webhook of the workspace by id; a malformed or foreign id reads as missing. */
export async function findOwnWebhook(db: D1Database, workspaceId: string, id: string): Promise<WebhookRow | null> {
  return UUID_PATTERN.test(id) ? getWebhook(db, workspaceId, id.toLowerCase()) : null;
}

/** Puts an event on the delivery queue (a new test event, or a stored one replayed with the same id and bytes). */
export async function queueEvent(env: Env, event: WebhookEvent): Promise<void> {
  const message: WebhookQueueMessage = { event };
  await env.WEBHOOK_QUEUE.send(message);
}

/** A new signed `webhook.test` event for the webhook's number. */
export function testEvent(webhook: WebhookRow): WebhookEvent {
  return {
    // The same id format as every other event (`evt_` + 32 hex digits).
    id: `evt_${crypto.randomUUID().replaceAll("-", "")}`,
    type: "webhook.test",
    workspaceId: webhook.workspace_id,
    channelNumberId: webhook.channel_number_id,
    createdAt: isoNow(),
    data: { message: "This is a test event. Your endpoint received and can verify our webhooks." },
  };
}

/** A stored event of the webhook's number, for replay; null if there is no such event. */
export async function storedEvent(db: D1Database, webhook: WebhookRow, eventId: string): Promise<WebhookEvent | null> {
  const row = eventId.length <= 200 ? await getEventOfWebhook(db, webhook, eventId) : null;
  return row ? (JSON.parse(row.payload) as WebhookEvent) : null;
}
