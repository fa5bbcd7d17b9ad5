import { config } from "../config";
import { getWebhook, upsertWebhook, webhookIdOfNumber, type WebhookRow } from "../db/webhooks";
import { getConnectedNumber } from "../db/channel-numbers";
import { workspaceStub } from "../durable-objects/stubs";
import type { AttemptRow } from "../durable-objects/workspace/event-log";
import { EVENT_ID_PATTERN } from "./events";
import { findByUuid } from "./job-id";
import { isoNow } from "../lib/clock";
import { sealWebhookSecret } from "../lib/sealed-secrets";
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
  const { allowInsecureUrls: allowInsecure, dohResolverUrl } = config(env).webhooks;
  // Input that is wrong whatever the number gets its answer before the lookup.
  const syntax = checkWebhookUrlSyntax(url, { allowInsecure });
  if (!syntax.ok) return { ok: false, problem: "url", reason: syntax.reason };
  // A foreign, disconnected or unknown number: the same answer.
  const number = await findByUuid(channelNumberId, (stored) => getConnectedNumber(env.DB, workspaceId, stored));
  if (!number) return { ok: false, problem: "number_not_found" };
  const check = await checkWebhookUrl(url, { allowInsecure, dohResolverUrl });
  if (!check.ok) return { ok: false, problem: "url", reason: check.reason };

  const secret = newWebhookSecret();
  // The parser's normal form is what deliveries call.
  const webhook = await storeWebhook(env, { workspaceId, channelNumberId: number.id, url: check.url.href, secret });
  return { ok: true, webhook, secret };
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
      url: w.url,
      sealedSecret: await sealWebhookSecret(env, id, w.secret),
      at: isoNow(),
    });
    if (row) return row;
  }
  throw new Error("webhook upsert kept losing a race, or matched a number of another workspace");
}

/** A webhook of the workspace by id; a malformed or foreign id reads as missing. */
export async function findOwnWebhook(db: D1Database, workspaceId: string, id: string): Promise<WebhookRow | null> {
  return findByUuid(id, (stored) => getWebhook(db, workspaceId, stored));
}

/** Records a new signed `webhook.test` event for the webhook's number and publishes it; returns its id. */
export function sendTestEvent(env: Env, webhook: WebhookRow): Promise<string> {
  return workspaceStub(env, webhook.workspace_id).recordTestEvent(webhook.workspace_id, webhook.channel_number_id);
}

/** Publishes a stored event of the webhook's number again, with the same id and bytes; false if there is no such event. */
export async function replayEvent(env: Env, webhook: WebhookRow, eventId: string): Promise<boolean> {
  if (!EVENT_ID_PATTERN.test(eventId)) return false;
  return workspaceStub(env, webhook.workspace_id).replayEvent(webhook.channel_number_id, eventId);
}

/** The webhook's delivery attempts, newest first, before the attempt `beforeSeq` (the workspace object keeps them 7 days). */
export function deliveryLog(env: Env, webhook: WebhookRow, beforeSeq: number | null, limit: number): Promise<AttemptRow[]> {
  return workspaceStub(env, webhook.workspace_id).listDeliveries(webhook.id, beforeSeq, limit);
}

/** The webhook's latest attempt that did not deliver: why it is failing or was disabled. */
export function lastFailure(env: Env, webhook: WebhookRow): Promise<AttemptRow | null> {
  return workspaceStub(env, webhook.workspace_id).lastFailedAttempt(webhook.id);
}
