import { bucket, scopes } from "../../domain/abuse-limits";
import { EVENT_ID_PATTERN } from "../../messages/events";
import { spend, type RateLimited } from "../../domain/limit-check";
import { recordTestEvent, replayEvent as publishAgain } from "../../engine/webhooks";
import type { ThrottleDecision } from "../../lib/throttle-client";
import type { WebhookRow } from "./store";

// A test event and a replay, shared by the API routes and the Webhooks page.

/**
 * Test events and replays make us call a URL of the customer's choosing:
 * limited per webhook and per workspace, all or nothing (a request refused by
 * one limit spends nothing of the other), whoever asks.
 */
function spendTrigger(
  env: Env,
  webhook: WebhookRow,
  kind: "webhookTest" | "webhookReplay",
): Promise<RateLimited | { ok: true; decision: ThrottleDecision }> {
  const perWebhook = bucket(kind, webhook.id);
  const perWorkspace = bucket("webhookTriggers");
  return spend(
    env,
    scopes.workspace(webhook.workspace_id),
    [perWebhook, perWorkspace],
    `${kind === "webhookTest" ? "test events" : "replays"}: ${perWebhook.limit} per ${perWebhook.periodSeconds} s per webhook, ` +
      `${perWorkspace.limit} test events and replays per ${perWorkspace.periodSeconds} s per workspace`,
  );
}

/** Records a new signed `webhook.test` event for the webhook's number and publishes it, within the limits. */
export async function sendTestEvent(
  env: Env,
  webhook: WebhookRow,
): Promise<{ ok: true; eventId: string; limit: ThrottleDecision } | RateLimited> {
  const spent = await spendTrigger(env, webhook, "webhookTest");
  if (!spent.ok) return spent;
  const eventId = await recordTestEvent(env, webhook.workspace_id, webhook.channel_number_id);
  return { ok: true, eventId, limit: spent.decision };
}

/**
 * Publishes a stored event of the webhook's number again, with the same id and
 * bytes, within the limits (spent even when there is no such event: the lookup
 * is what costs).
 */
export async function replayEvent(
  env: Env,
  webhook: WebhookRow,
  eventId: string,
): Promise<{ ok: true; limit: ThrottleDecision } | { ok: false; problem: "event_not_found" } | RateLimited> {
  const spent = await spendTrigger(env, webhook, "webhookReplay");
  if (!spent.ok) return spent;
  if (!EVENT_ID_PATTERN.test(eventId)) return { ok: false, problem: "event_not_found" };
  const found = await publishAgain(env, webhook.workspace_id, webhook.channel_number_id, eventId);
  return found ? { ok: true, limit: spent.decision } : { ok: false, problem: "event_not_found" };
}
