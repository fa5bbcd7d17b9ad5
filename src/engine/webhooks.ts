import type { DeliveryReport } from "../durable-objects/workspace/contract";
import type { AttemptRow } from "../durable-objects/workspace/delivery-log";
import { workspaceObject } from "./objects";

// A workspace's events and its delivery log: what the webhook consumer reports, what the API and
// the dashboard read and trigger.

export type { AttemptRow, DeliveryReport };

/** A number's webhook, as the workspace's delivery log keys it. */
export interface WebhookOf {
  workspaceId: string;
  channelNumberId: string;
  webhookId: string;
}

/** What the webhook consumer did with a workspace's events (its delivery log). */
export const recordDeliveries = (env: Env, workspaceId: string, reports: DeliveryReport[]): Promise<void> =>
  workspaceObject(env, workspaceId).recordDeliveries(reports);

/** A new `webhook.test` event for a number's webhook, published at once; its id. */
export const recordTestEvent = (env: Env, workspaceId: string, channelNumberId: string): Promise<string> =>
  workspaceObject(env, workspaceId).recordTestEvent(workspaceId, channelNumberId);

/** Publishes an event of the number again, with the same id and content; false when the number has no such event. */
export const replayEvent = (
  env: Env,
  workspaceId: string,
  channelNumberId: string,
  eventId: string,
): Promise<boolean> => workspaceObject(env, workspaceId).replayEvent(channelNumberId, eventId);

/** A webhook's delivery attempts, newest first, before the attempt `beforeSeq` (kept 3 days). */
export const webhookAttempts = (
  env: Env,
  webhook: WebhookOf,
  beforeSeq: number | null,
  limit: number,
): Promise<AttemptRow[]> =>
  workspaceObject(env, webhook.workspaceId).listDeliveries(
    webhook.channelNumberId,
    webhook.webhookId,
    beforeSeq,
    limit,
  );

/** A webhook's latest attempt that did not deliver: why it is failing or was disabled. */
export const lastFailedAttempt = (env: Env, webhook: WebhookOf): Promise<AttemptRow | null> =>
  workspaceObject(env, webhook.workspaceId).lastFailedAttempt(webhook.channelNumberId, webhook.webhookId);
