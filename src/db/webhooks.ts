import type { Cursor } from "../lib/pagination";

export interface WebhookRow {
  id: string;
  workspace_id: string;
  channel_number_id: string;
  url: string;
  sealed_secret: string;
  status: "enabled" | "disabled";
  failing_since: string | null;
  disabled_at: string | null;
  created_at: string;
  updated_at: string;
}

/**
 * `pending` (being delivered or retried), `delivered` (a 2xx was seen; sticky),
 * `dead` (retries ran out), `no_webhook` (no enabled webhook when it was due).
 */
export type WebhookEventState = "pending" | "delivered" | "dead" | "no_webhook";

export interface WebhookEventRow {
  id: string;
  workspace_id: string;
  channel_number_id: string;
  type: string;
  /** JSON of the whole WebhookEvent, so that a replay sends the same bytes. */
  payload: string;
  created_at: string;
  state: WebhookEventState;
}

export type DeliveryOutcome = "delivered" | "failed" | "refused" | "dead";

export interface WebhookDeliveryRow {
  id: string;
  webhook_id: string;
  event_id: string;
  attempt: number;
  attempted_at: string;
  status_code: number | null;
  latency_ms: number | null;
  error: string | null;
  outcome: DeliveryOutcome;
}

export async function listWebhooks(db: D1Database, workspaceId: string, limit: number, after?: Cursor): Promise<WebhookRow[]> {
  const stmt = after
    ? db
        .prepare("SELECT * FROM webhooks WHERE workspace_id = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?")
        .bind(workspaceId, after.sortKey, after.id, limit)
    : db.prepare("SELECT * FROM webhooks WHERE workspace_id = ? ORDER BY created_at, id LIMIT ?").bind(workspaceId, limit);
  return (await stmt.all<WebhookRow>()).results;
}

/** A webhook of the workspace; a foreign id reads as missing. */
export async function getWebhook(db: D1Database, workspaceId: string, id: string): Promise<WebhookRow | null> {
  return db.prepare("SELECT * FROM webhooks WHERE id = ? AND workspace_id = ?").bind(id, workspaceId).first<WebhookRow>();
}

/** The id of the number's webhook, if it has one (of any workspace). */
export async function webhookIdOfNumber(db: D1Database, channelNumberId: string): Promise<{ id: string; workspace_id: string } | null> {
  return db.prepare("SELECT id, workspace_id FROM webhooks WHERE channel_number_id = ?").bind(channelNumberId).first();
}

/**
 * Creates the number's webhook, or replaces its URL and secret. A replaced
 * webhook keeps its id (and so its delivery log), is enabled again and starts
 * with a clean failure record. The secret is sealed for the row id `w.id`, so
 * the update applies only if the existing row has that id (the caller read it
 * with webhookIdOfNumber): null when another request created the row first.
 */
export async function upsertWebhook(
  db: D1Database,
  w: { id: string; workspaceId: string; channelNumberId: string; url: string; sealedSecret: string; at: string },
): Promise<WebhookRow | null> {
  return db
    .prepare(
      `INSERT INTO webhooks (id, workspace_id, channel_number_id, url, sealed_secret, status, failing_since, disabled_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, 'enabled', NULL, NULL, ?, ?)
       ON CONFLICT (channel_number_id) DO UPDATE SET
         url = excluded.url, sealed_secret = excluded.sealed_secret, status = 'enabled',
         failing_since = NULL, disabled_at = NULL, updated_at = excluded.updated_at
       WHERE webhooks.workspace_id = excluded.workspace_id AND webhooks.id = excluded.id
       RETURNING *`,
    )
    .bind(w.id, w.workspaceId, w.channelNumberId, w.url, w.sealedSecret, w.at, w.at)
    .first<WebhookRow>();
}

/** The webhooks of the given numbers, in one query. */
export async function webhooksForNumbers(db: D1Database, channelNumberIds: string[]): Promise<WebhookRow[]> {
  if (channelNumberIds.length === 0) return [];
  const marks = channelNumberIds.map(() => "?").join(", ");
  return (
    await db
      .prepare(`SELECT * FROM webhooks WHERE channel_number_id IN (${marks})`)
      .bind(...channelNumberIds)
      .all<WebhookRow>()
  ).results;
}

/** A stored event of the webhook's number, for replay. */
export async function getEventOfWebhook(db: D1Database, webhook: WebhookRow, eventId: string): Promise<WebhookEventRow | null> {
  return db
    .prepare("SELECT * FROM webhook_events WHERE id = ? AND workspace_id = ? AND channel_number_id = ?")
    .bind(eventId, webhook.workspace_id, webhook.channel_number_id)
    .first<WebhookEventRow>();
}

export type DeliveryListRow = WebhookDeliveryRow & { event_type: string | null };

/** Delivery attempts of a webhook, newest first (keyset on attempted_at, id). */
export async function listDeliveries(db: D1Database, webhookId: string, limit: number, before?: Cursor): Promise<DeliveryListRow[]> {
  const select = `SELECT d.*, e.type AS event_type FROM webhook_deliveries d LEFT JOIN webhook_events e ON e.id = d.event_id`;
  const stmt = before
    ? db
        .prepare(`${select} WHERE d.webhook_id = ? AND (d.attempted_at, d.id) < (?, ?) ORDER BY d.attempted_at DESC, d.id DESC LIMIT ?`)
        .bind(webhookId, before.sortKey, before.id, limit)
    : db.prepare(`${select} WHERE d.webhook_id = ? ORDER BY d.attempted_at DESC, d.id DESC LIMIT ?`).bind(webhookId, limit);
  return (await stmt.all<DeliveryListRow>()).results;
}

// The statements below are building blocks of the delivery consumers' single
// `db.batch` per queue batch; they are never run one by one.

/** Upserts the event; `delivered` is sticky so a late retry or duplicate never hides a success. */
export function upsertEventStatement(db: D1Database, row: WebhookEventRow): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO webhook_events (id, workspace_id, channel_number_id, type, payload, created_at, state)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET
         state = CASE WHEN webhook_events.state = 'delivered' THEN 'delivered' ELSE excluded.state END`,
    )
    .bind(row.id, row.workspace_id, row.channel_number_id, row.type, row.payload, row.created_at, row.state);
}

export function insertDeliveryStatement(db: D1Database, row: WebhookDeliveryRow): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO webhook_deliveries (id, webhook_id, event_id, attempt, attempted_at, status_code, latency_ms, error, outcome)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(row.id, row.webhook_id, row.event_id, row.attempt, row.attempted_at, row.status_code, row.latency_ms, row.error, row.outcome);
}

/**
 * Records the `dead` row of an event against its number's webhook, numbered
 * like the last attempt it follows. Inserts nothing if the number has no webhook.
 */
export function insertDeadDeliveryStatement(
  db: D1Database,
  d: { id: string; eventId: string; channelNumberId: string; at: string; error: string },
): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO webhook_deliveries (id, webhook_id, event_id, attempt, attempted_at, status_code, latency_ms, error, outcome)
       SELECT ?, w.id, ?, COALESCE((SELECT MAX(attempt) FROM webhook_deliveries WHERE event_id = ?), 0), ?, NULL, NULL, ?, 'dead'
         FROM webhooks w WHERE w.channel_number_id = ?`,
    )
    .bind(d.id, d.eventId, d.eventId, d.at, d.error, d.channelNumberId);
}

/**
 * A success ends the webhook's failure streak. Guarded by the secret the
 * attempt was signed with: an outcome of a replaced configuration is ignored.
 */
export function markWebhookHealthyStatement(db: D1Database, webhook: WebhookRow): D1PreparedStatement {
  return db
    .prepare("UPDATE webhooks SET failing_since = NULL WHERE id = ? AND sealed_secret = ? AND failing_since IS NOT NULL")
    .bind(webhook.id, webhook.sealed_secret);
}

/**
 * A failure starts the streak if none is running; a streak that began before
 * `disableBefore` disables the webhook. (SQLite evaluates every SET expression
 * against the old row, so the CASEs see the streak as it was.)
 */
export function markWebhookFailingStatement(db: D1Database, webhook: WebhookRow, at: string, disableBefore: string): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE webhooks SET
         failing_since = COALESCE(failing_since, ?1),
         status = CASE WHEN failing_since IS NOT NULL AND failing_since < ?2 THEN 'disabled' ELSE status END,
         disabled_at = CASE WHEN status = 'enabled' AND failing_since IS NOT NULL AND failing_since < ?2 THEN ?1 ELSE disabled_at END
       WHERE id = ?3 AND sealed_secret = ?4`,
    )
    .bind(at, disableBefore, webhook.id, webhook.sealed_secret);
}
