import type { MessageStatus } from "../../../domain/message";
import { ensureColumn } from "../../shared/sql-schema";
import type { LifecycleState } from "../status-transition";
import type { MessageRow } from "../record";

/**
 * The message records of the release before day tables: one `messages` table, rowid or
 * `WITHOUT ROWID`, with its list indexes. Schema step 1 creates it (for storage older than
 * versions, and in tests that build that release's layout); from step 2 on it only holds the
 * records accepted before the upgrade, which are read, changed and moved to history as before
 * until none is left, and then the table is dropped (workspace/legacy/legacy-tier.ts).
 * History shards of that release hold the same table (history/history.ts).
 */
export function createMessagesTable(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS messages (
      id TEXT PRIMARY KEY, channel_number_id TEXT NOT NULL, recipient TEXT NOT NULL, body TEXT NOT NULL,
      status TEXT NOT NULL, upstream_message_id TEXT, error_code TEXT, error_message TEXT,
      error_retriable INTEGER, upstream_error_code TEXT,
      created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, processing_at INTEGER, sent_at INTEGER,
      failed_at INTEGER, delivered_at INTEGER, read_at INTEGER,
      version INTEGER NOT NULL, copy_pending INTEGER NOT NULL DEFAULT 1) WITHOUT ROWID;
  `);
  ensureColumn(sql, "messages", "direction", "TEXT NOT NULL DEFAULT 'outbound'");
  ensureColumn(sql, "messages", "type", "TEXT NOT NULL DEFAULT 'text'");
  ensureColumn(sql, "messages", "content", "TEXT");
  ensureColumn(sql, "messages", "outcome_unknown_since", "INTEGER");
  ensureColumn(sql, "messages", "received_at", "INTEGER");
  sql.exec(`
    DROP INDEX IF EXISTS messages_copy_pending;
    DROP INDEX IF EXISTS messages_by_created;
    DROP INDEX IF EXISTS messages_in_flight;
    CREATE INDEX IF NOT EXISTS messages_by_time ON messages (created_at, id);
    CREATE INDEX IF NOT EXISTS messages_by_counterpart ON messages (recipient, created_at, id);
    CREATE INDEX IF NOT EXISTS messages_by_number ON messages (channel_number_id, created_at, id);
    DROP INDEX IF EXISTS messages_active;
    CREATE INDEX IF NOT EXISTS messages_queued ON messages (created_at, id) WHERE status = 'queued';
    CREATE INDEX IF NOT EXISTS messages_failed ON messages (created_at, id) WHERE status = 'failed';
    CREATE INDEX IF NOT EXISTS messages_inbound ON messages (created_at, id) WHERE direction = 'inbound';
    CREATE INDEX IF NOT EXISTS messages_inbound_by_upstream_id ON messages (upstream_message_id) WHERE direction = 'inbound';
  `);
}

export const hasLegacyMessages = (sql: SqlStorage): boolean =>
  sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'messages'").toArray().length > 0;

export const findLegacyMessage = (sql: SqlStorage, id: string): MessageRow | undefined =>
  sql.exec<MessageRow>("SELECT * FROM messages WHERE id = ?", id).toArray()[0];

export const findLegacyInbound = (sql: SqlStorage, upstreamMessageId: string): MessageRow | undefined =>
  sql
    .exec<MessageRow>(
      "SELECT * FROM messages WHERE direction = 'inbound' AND upstream_message_id = ?",
      upstreamMessageId,
    )
    .toArray()[0];

/** Writes a status change to a record of this layout (its `version` grows: the move compares it). */
export function writeLegacyLifecycle(sql: SqlStorage, id: string, s: LifecycleState, updatedAt: number): void {
  sql.exec(
    `UPDATE messages SET status = ?, upstream_message_id = ?, processing_at = ?, sent_at = ?, failed_at = ?,
       delivered_at = ?, read_at = ?, outcome_unknown_since = ?, error_code = ?, error_message = ?, error_retriable = ?,
       upstream_error_code = ?, updated_at = ?, version = version + 1
     WHERE id = ?`,
    s.status,
    s.upstream_message_id,
    s.processing_at,
    s.sent_at,
    s.failed_at,
    s.delivered_at,
    s.read_at,
    s.outcome_unknown_since,
    s.error_code,
    s.error_message,
    s.error_retriable,
    s.upstream_error_code,
    updatedAt,
    id,
  );
}

/** Upserts rows as they were elsewhere (a history shard of this layout taking them over). */
export function putLegacyRows(sql: SqlStorage, rows: MessageRow[]): void {
  for (const row of rows) {
    const cols = LEGACY_COLUMNS.filter((c) => c in row);
    sql.exec(
      `INSERT OR REPLACE INTO messages (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`,
      ...cols.map((c) => row[c] ?? null),
    );
  }
}

const LEGACY_COLUMNS = [
  "id",
  "direction",
  "channel_number_id",
  "recipient",
  "type",
  "body",
  "content",
  "status",
  "upstream_message_id",
  "error_code",
  "error_message",
  "error_retriable",
  "upstream_error_code",
  "created_at",
  "updated_at",
  "processing_at",
  "sent_at",
  "failed_at",
  "delivered_at",
  "read_at",
  "outcome_unknown_since",
  "received_at",
  "version",
  "copy_pending",
] as const;

/**
 * Records of this layout a number still has work for, by id after `afterId` (its queue after a
 * restart, status.ts `workOf`): queued, or processing with no unknown outcome (a retry pending, a
 * paused number's message; one whose call was in flight at the upgrade is marked unknown by the
 * hand-over before any claim, and a claim granted since and never answered is refused as claimed
 * before). Through the by-number index: only while this table holds the number's last 48 hours.
 */
export const legacyWorkOf = (sql: SqlStorage, channelNumberId: string, afterId: string, limit: number): MessageRow[] =>
  sql
    .exec<MessageRow>(
      `SELECT * FROM messages WHERE channel_number_id = ? AND direction = 'outbound' AND status IN ('queued', 'processing')
         AND outcome_unknown_since IS NULL AND id > ? ORDER BY id LIMIT ?`,
      channelNumberId,
      afterId,
      limit,
    )
    .toArray();

/** Outbound acceptance times after `since` (the 60-second window, while this table still has recent records). */
export const legacyOutboundTimesSince = (sql: SqlStorage, since: number): { at: number; channelNumberId: string }[] =>
  sql
    .exec<{ created_at: number; channel_number_id: string }>(
      "SELECT created_at, channel_number_id FROM messages WHERE created_at > ? AND direction = 'outbound' ORDER BY created_at",
      since,
    )
    .toArray()
    .map((r) => ({ at: r.created_at, channelNumberId: r.channel_number_id }));

/** The oldest records created before `before`, oldest first (the move to history). */
export const oldestLegacyRows = (sql: SqlStorage, before: number, limit: number): MessageRow[] =>
  sql
    .exec<MessageRow>("SELECT * FROM messages WHERE created_at < ? ORDER BY created_at, id LIMIT ?", before, limit)
    .toArray();

export const oldestLegacyAt = (sql: SqlStorage): number | null =>
  sql.exec<{ created_at: number }>("SELECT created_at FROM messages ORDER BY created_at, id LIMIT 1").toArray()[0]
    ?.created_at ?? null;

/** After a shard took them: forgets rows unchanged since they were read (a changed one moves next round). */
export function forgetLegacyRows(sql: SqlStorage, rows: MessageRow[]): number {
  let moved = 0;
  for (const r of rows)
    if (sql.exec("DELETE FROM messages WHERE id = ? AND version = ?", r.id, r.version ?? 0).rowsWritten > 0) moved++;
  return moved;
}

/** Counts of the records of one UTC day [from, to) (frozen when the day leaves). */
export const legacyCountsBetween = (sql: SqlStorage, from: number, to: number) =>
  sql
    .exec<{ channel_number_id: string; accepted: number; sent: number; failed: number; received: number }>(
      `SELECT channel_number_id, SUM(direction = 'outbound') AS accepted, SUM(status = 'sent') AS sent,
              SUM(status = 'failed') AS failed, SUM(direction = 'inbound') AS received
       FROM messages WHERE created_at >= ? AND created_at < ? GROUP BY channel_number_id`,
      from,
      to,
    )
    .toArray();

export type { MessageStatus };
