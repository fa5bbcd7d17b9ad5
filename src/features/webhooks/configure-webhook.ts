import { config } from "../../config";
import { upsertWebhook, webhookIdOfNumber, type WebhookRow } from "./store";
import { getConnectedNumber } from "../../db/channel-numbers";
import { findByUuid } from "../../lib/job-id";
import { isoNow } from "../../lib/clock";
import { sealWebhookSecret } from "../../lib/sealed-secrets";
import { checkWebhookUrl, checkWebhookUrlSyntax } from "../../webhooks/ssrf";
import { newWebhookSecret } from "../../webhooks/signature";
import type { ThrottleDecision } from "../../lib/throttle-client";
import { bucket, scopes } from "../../domain/abuse-limits";
import type { Caller } from "../../domain/actor";
import { spend, type RateLimited } from "../../domain/limit-check";
import type { WebhookApiVersion } from "../../messages/events";

// What the API routes and the dashboard share about configuring a webhook. Each
// caller turns the outcomes into its own answer (an error envelope, or a
// message beside a form field).

export type ConfigureOutcome =
  | { ok: true; webhook: WebhookRow; secret: string; limit: ThrottleDecision }
  | { ok: false; problem: "url"; reason: string }
  | { ok: false; problem: "number_not_found" }
  | RateLimited;

/**
 * Creates or replaces the webhook of a connected number of the workspace after
 * the SSRF checks; a new signing secret every time (returned here only). It
 * receives the event shapes of `apiVersion` (the API it was configured through).
 * Limited per caller (each call may resolve a host over DNS), before anything else.
 */
export async function configureWebhook(
  env: Env,
  caller: Caller,
  channelNumberId: string,
  url: string,
  apiVersion: WebhookApiVersion,
): Promise<ConfigureOutcome> {
  const perCaller = bucket("webhookConfigure");
  const spent = await spend(
    env,
    scopes.actor(caller.actor),
    [perCaller],
    `webhook configuration: ${perCaller.limit} per ${perCaller.periodSeconds} s per caller`,
  );
  if (!spent.ok) return spent;
  const { workspaceId } = caller;
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
  const webhook = await storeWebhook(env, {
    workspaceId,
    channelNumberId: number.id,
    url: check.url.href,
    secret,
    apiVersion,
  });
  return { ok: true, webhook, secret, limit: spent.decision };
}

/**
 * Creates or replaces the number's webhook with a new secret sealed for the
 * webhook's row id. If a concurrent request creates the row between our read of
 * its id and our write, the id is read again and the secret sealed again.
 */
async function storeWebhook(
  env: Env,
  w: { workspaceId: string; channelNumberId: string; url: string; secret: string; apiVersion: WebhookApiVersion },
): Promise<WebhookRow> {
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
      apiVersion: w.apiVersion,
      at: isoNow(),
    });
    if (row) return row;
  }
  throw new Error("webhook upsert kept losing a race, or matched a number of another workspace");
}
