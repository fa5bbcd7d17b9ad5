import type { Cursor } from "../../lib/pagination";
import type { WebhookApiVersion } from "../../messages/events";

export interface WebhookRow {
  id: string;
  workspace_id: string;
  channel_number_id: string;
  url: string;
  sealed_secret: string;
  status: "enabled" | "disabled";
  /** The API version it was configured through: the event shapes it receives. */
  api_version: WebhookApiVersion;
  failing_since: string | null;
  disabled_at: string | null;
  created_at: string;
  updated_at: string;
}

export async function listWebhooks(
  db: D1Database,
  workspaceId: string,
  limit: number,
  after?: Cursor,
): Promise<WebhookRow[]> {
  const stmt = after
    ? db
        .prepare(
          "SELECT * FROM webhooks WHERE workspace_id = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?",
        )
        .bind(workspaceId, after.sortKey, after.id, limit)
    : db
        .prepare("SELECT * FROM webhooks WHERE workspace_id = ? ORDER BY created_at, id LIMIT ?")
        .bind(workspaceId, limit);
  return (await stmt.all<WebhookRow>()).results;
}

/** A webhook of the workspace; a foreign id reads as missing. */
export async function getWebhook(db: D1Database, workspaceId: string, id: string): Promise<WebhookRow | null> {
  return db
    .prepare("SELECT * FROM webhooks WHERE id = ? AND workspace_id = ?")
    .bind(id, workspaceId)
    .first<WebhookRow>();
}

/** The webhook of a number of the workspace, if it has one. */
export async function getWebhookOfNumber(
  db: D1Database,
  workspaceId: string,
  channelNumberId: string,
): Promise<WebhookRow | null> {
  return db
    .prepare("SELECT * FROM webhooks WHERE channel_number_id = ? AND workspace_id = ?")
    .bind(channelNumberId, workspaceId)
    .first<WebhookRow>();
}

/** The id of the number's webhook, if it has one (of any workspace). */
export async function webhookIdOfNumber(
  db: D1Database,
  channelNumberId: string,
): Promise<{ id: string; workspace_id: string } | null> {
  return db.prepare("SELECT id, workspace_id FROM webhooks WHERE channel_number_id = ?").bind(channelNumberId).first();
}

/**
 * Creates the number's webhook, or replaces its URL, secret and API version. A
 * replaced webhook keeps its id (and so its delivery log), is enabled again and
 * starts with a clean failure record. The secret is sealed for the row id `w.id`, so
 * the update applies only if the existing row has that id (the caller read it
 * with webhookIdOfNumber): null when another request created the row first.
 */
export async function upsertWebhook(
  db: D1Database,
  w: {
    id: string;
    workspaceId: string;
    channelNumberId: string;
    url: string;
    sealedSecret: string;
    apiVersion: WebhookApiVersion;
    at: string;
  },
): Promise<WebhookRow | null> {
  return db
    .prepare(
      `INSERT INTO webhooks (id, workspace_id, channel_number_id, url, sealed_secret, status, failing_since, disabled_at, created_at, updated_at, api_version)
       VALUES (?, ?, ?, ?, ?, 'enabled', NULL, NULL, ?, ?, ?)
       ON CONFLICT (channel_number_id) DO UPDATE SET
         url = excluded.url, sealed_secret = excluded.sealed_secret, status = 'enabled',
         failing_since = NULL, disabled_at = NULL, updated_at = excluded.updated_at, api_version = excluded.api_version
       WHERE webhooks.workspace_id = excluded.workspace_id AND webhooks.id = excluded.id
       RETURNING *`,
    )
    .bind(w.id, w.workspaceId, w.channelNumberId, w.url, w.sealedSecret, w.at, w.at, w.apiVersion)
    .first<WebhookRow>();
}

/**
 * Enables a disabled webhook again, keeping its URL and secret, with a clean
 * failure record (the URL is checked again at every delivery). Null if the
 * workspace has no such webhook.
 */
export async function reenableWebhook(
  db: D1Database,
  workspaceId: string,
  id: string,
  at: string,
): Promise<WebhookRow | null> {
  return db
    .prepare(
      `UPDATE webhooks SET status = 'enabled', failing_since = NULL, disabled_at = NULL, updated_at = ?
        WHERE id = ? AND workspace_id = ? RETURNING *`,
    )
    .bind(at, id, workspaceId)
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

/**
 * A success ends the webhook's failure streak. Guarded by the secret the
 * attempt was signed with: an outcome of a replaced configuration is ignored.
 */
export function markWebhookHealthyStatement(db: D1Database, webhook: WebhookRow): D1PreparedStatement {
  return db
    .prepare(
      "UPDATE webhooks SET failing_since = NULL WHERE id = ? AND sealed_secret = ? AND failing_since IS NOT NULL",
    )
    .bind(webhook.id, webhook.sealed_secret);
}

/**
 * A failure starts the streak if none is running; a streak that began before
 * `disableBefore` disables the webhook. (SQLite evaluates every SET expression
 * against the old row, so the CASEs see the streak as it was.)
 */
export function markWebhookFailingStatement(
  db: D1Database,
  webhook: WebhookRow,
  at: string,
  disableBefore: string,
): D1PreparedStatement {
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
