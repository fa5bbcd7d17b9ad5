import type { Message, MessageStatus } from "../../domain/message";
import { ensureColumn } from "../shared/sql-schema";
import type { InboundRecord } from "./contract";
import type { LifecycleState } from "./status-transition";
import type { Keyset } from "./message-queries";

/**
 * Message records, outbound and inbound: the authority for `GET /messages`.
 * Bound: one row per message (~300 B + indexes with a 200-byte body); purged by
 * retention (see docs/architecture.md, storage budget).
 *
 * `WITHOUT ROWID`: the id is the table's key, so an insert writes no separate
 * key index (a billed row). Storage created before keeps its rowid layout (a
 * rebuild would rewrite millions of rows in a constructor): same columns, same
 * queries.
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
  // Added after the first release; `recipient` holds the other party: `to` when outbound, `from` when inbound.
  ensureColumn(sql, "messages", "direction", "TEXT NOT NULL DEFAULT 'outbound'");
  ensureColumn(sql, "messages", "type", "TEXT NOT NULL DEFAULT 'text'");
  ensureColumn(sql, "messages", "content", "TEXT");
  ensureColumn(sql, "messages", "outcome_unknown_since", "INTEGER");
  // The operator's own time of an inbound message (created_at is when we recorded it).
  ensureColumn(sql, "messages", "received_at", "INTEGER");
  // Lists run newest first on (created_at, id); each filter that narrows a list a lot has its own index.
  // Queued messages have one (the stranded-message check reads the oldest of them on every alarm);
  // processing ones do not: after an operator outage they are most of the table (unknown outcomes
  // wait up to 7 days), and an entry for them would be a row written per message on the claim.
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

export interface MessageRow extends Omit<LifecycleState, "status"> {
  id: string;
  direction: "outbound" | "inbound";
  channel_number_id: string;
  recipient: string;
  type: string;
  body: string;
  content: string | null;
  status: MessageStatus | "received";
  created_at: number;
  updated_at: number;
  received_at: number | null;
  /** Grows with every change: a row moved to history is forgotten here only if unchanged meanwhile. */
  version: number;
  [key: string]: SqlStorageValue;
}

export function insertOutbound(
  sql: SqlStorage,
  m: { id: string; channelNumberId: string; to: string; body: string; at: number },
): void {
  sql.exec(
    `INSERT INTO messages (id, direction, channel_number_id, recipient, type, body, status, created_at, updated_at, version, copy_pending)
     VALUES (?, 'outbound', ?, ?, 'text', ?, 'queued', ?, ?, 1, 0)`,
    m.id,
    m.channelNumberId,
    m.to,
    m.body,
    m.at,
    m.at,
  );
}

/** `at` is when we record it (lists are ordered by it); the operator's time is kept apart. */
export function insertInbound(sql: SqlStorage, id: string, m: InboundRecord, at: number): void {
  sql.exec(
    `INSERT INTO messages (id, direction, channel_number_id, recipient, type, body, content, status, upstream_message_id,
                           received_at, created_at, updated_at, version, copy_pending)
     VALUES (?, 'inbound', ?, ?, ?, ?, ?, 'received', ?, ?, ?, ?, 1, 0)`,
    id,
    m.channelNumberId,
    m.from,
    m.type,
    m.text ?? "",
    m.content === null ? null : JSON.stringify(m.content),
    m.upstreamMessageId,
    m.at,
    at,
    at,
  );
}

export const findMessage = (sql: SqlStorage, id: string): MessageRow | undefined =>
  sql.exec<MessageRow>("SELECT * FROM messages WHERE id = ?", id).toArray()[0];

export const findInboundByUpstreamId = (sql: SqlStorage, upstreamMessageId: string): MessageRow | undefined =>
  sql
    .exec<MessageRow>(
      "SELECT * FROM messages WHERE direction = 'inbound' AND upstream_message_id = ?",
      upstreamMessageId,
    )
    .toArray()[0];

export function writeLifecycle(sql: SqlStorage, id: string, s: LifecycleState, updatedAt: number): void {
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

/** Outbound acceptance times after `since`, oldest first (rebuilds the workspace's rate window after a restart). */
export const outboundTimesSince = (sql: SqlStorage, since: number): number[] =>
  sql
    .exec<{ created_at: number }>(
      "SELECT created_at FROM messages WHERE created_at > ? AND direction = 'outbound' ORDER BY created_at",
      since,
    )
    .toArray()
    .map((r) => r.created_at);

/** The oldest messages still queued that were accepted at or before `before`, after the keyset `after` (visits queued messages only). */
export const queuedAcceptedBefore = (
  sql: SqlStorage,
  before: number,
  limit: number,
  after: Keyset | null = null,
): MessageRow[] =>
  sql
    .exec<MessageRow>(
      `SELECT * FROM messages INDEXED BY messages_queued
       WHERE status = 'queued' AND created_at <= ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?`,
      before,
      after?.createdAt ?? -1,
      after?.id ?? "",
      limit,
    )
    .toArray();

/** When the oldest queued message was accepted (the stranded-message check's due time). */
export const oldestQueuedAt = (sql: SqlStorage): number | null =>
  sql
    .exec<{ created_at: number }>(
      "SELECT created_at FROM messages INDEXED BY messages_queued WHERE status = 'queued' ORDER BY created_at, id LIMIT 1",
    )
    .toArray()[0]?.created_at ?? null;

/** Upserts rows as they were elsewhere (moving messages between a workspace and its history shards). */
export function putRows(sql: SqlStorage, rows: MessageRow[]): void {
  for (const row of rows) {
    const cols = MESSAGE_COLUMNS.filter((c) => c in row);
    sql.exec(
      `INSERT OR REPLACE INTO messages (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`,
      ...cols.map((c) => row[c] ?? null),
    );
  }
}

const MESSAGE_COLUMNS = [
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

export const lifecycleOf = (row: MessageRow & { status: MessageStatus }): LifecycleState => ({
  status: row.status,
  upstream_message_id: row.upstream_message_id,
  processing_at: row.processing_at,
  sent_at: row.sent_at,
  failed_at: row.failed_at,
  delivered_at: row.delivered_at,
  read_at: row.read_at,
  outcome_unknown_since: row.outcome_unknown_since,
  error_code: row.error_code,
  error_message: row.error_message,
  error_retriable: row.error_retriable,
  upstream_error_code: row.upstream_error_code,
});

export const isOutbound = (row: MessageRow): row is MessageRow & { direction: "outbound"; status: MessageStatus } =>
  row.direction === "outbound" && row.status !== "received";

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function toMessageView(row: MessageRow): Message {
  if (!isOutbound(row)) {
    return {
      id: row.id,
      direction: "inbound",
      channelNumberId: row.channel_number_id,
      from: row.recipient,
      type: row.type,
      text: row.type === "text" ? { body: row.body } : null,
      content: row.content === null ? null : (JSON.parse(row.content) as Record<string, unknown>),
      status: "received",
      upstreamMessageId: row.upstream_message_id,
      receivedAt: iso(row.received_at ?? row.created_at)!,
      createdAt: iso(row.created_at)!,
    };
  }
  return {
    id: row.id,
    direction: "outbound",
    channelNumberId: row.channel_number_id,
    to: row.recipient,
    type: "text",
    text: { body: row.body },
    status: row.status,
    upstreamMessageId: row.upstream_message_id,
    error: row.error_code
      ? {
          code: row.error_code,
          message: row.error_message ?? "",
          retriable: row.error_retriable === 1,
          upstreamCode: row.upstream_error_code,
        }
      : null,
    outcomeUnknownSince: iso(row.outcome_unknown_since),
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
    processingAt: iso(row.processing_at),
    sentAt: iso(row.sent_at),
    failedAt: iso(row.failed_at),
    deliveredAt: iso(row.delivered_at),
    readAt: iso(row.read_at),
  };
}
