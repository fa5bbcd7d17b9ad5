import { lastFailedAttempt, webhookAttempts, type AttemptRow } from "../../engine/webhooks";
import type { WebhookRow } from "./store";

const webhookOf = (webhook: WebhookRow) => ({
  workspaceId: webhook.workspace_id,
  channelNumberId: webhook.channel_number_id,
  webhookId: webhook.id,
});

/** The webhook's delivery attempts, newest first, before the attempt `beforeSeq` (the workspace object keeps them 3 days). */
export function deliveryLog(
  env: Env,
  webhook: WebhookRow,
  beforeSeq: number | null,
  limit: number,
): Promise<AttemptRow[]> {
  return webhookAttempts(env, webhookOf(webhook), beforeSeq, limit);
}

/** The webhook's latest attempt that did not deliver: why it is failing or was disabled. */
export function lastFailure(env: Env, webhook: WebhookRow): Promise<AttemptRow | null> {
  return lastFailedAttempt(env, webhookOf(webhook));
}
