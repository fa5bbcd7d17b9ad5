import { utcDay, uuidV7Floor } from "../../domain/job-id";
import { dayOfId, dayTable, type DayTables } from "./day-tables";
import type { MessageRow } from "./record";

/** What a send stores (the record of an accepted send). */
export interface NewOutbound {
  id: string;
  channelNumberId: string;
  to: string;
  type: string;
  body: string;
  content: string | null;
  idemKey: string;
  fingerprint: string;
  at: number;
}

/**
 * An accepted send: the record, its key and its place in the number's work list, in one insert
 * (the row and three index entries: counterpart, key, work).
 */
export function insertOutbound(tables: DayTables, sql: SqlStorage, m: NewOutbound): void {
  const t = tables.ensure(utcDay(m.at));
  sql.exec(
    `INSERT INTO ${t} (id, direction, channel_number_id, recipient, type, body, content, status, idem_key, fingerprint, pending,
                       created_at, updated_at)
     VALUES (?, 'outbound', ?, ?, ?, ?, ?, 'queued', ?, ?, 1, ?, ?)`,
    m.id,
    m.channelNumberId,
    m.to,
    m.type,
    m.body,
    m.content,
    m.idemKey,
    m.fingerprint,
    m.at,
    m.at,
  );
}

export interface NewInbound {
  id: string;
  channelNumberId: string;
  from: string;
  type: string;
  body: string;
  content: string | null;
  upstreamMessageId: string;
  receivedAt: number;
  at: number;
}

/** An inbound message, in the table of its id's day (the operator's time). Returns false when it was there already. */
export function insertInbound(tables: DayTables, sql: SqlStorage, m: NewInbound): boolean {
  const day = dayOfId(m.id);
  if (day === null) throw new Error(`inbound id ${m.id} is not a UUIDv7`);
  const t = tables.ensure(day);
  return (
    sql.exec(
      `INSERT OR IGNORE INTO ${t} (id, direction, channel_number_id, recipient, type, body, content, status, upstream_message_id,
                                   received_at, created_at, updated_at)
       VALUES (?, 'inbound', ?, ?, ?, ?, ?, 'received', ?, ?, ?, ?)`,
      m.id,
      m.channelNumberId,
      m.from,
      m.type,
      m.body,
      m.content,
      m.upstreamMessageId,
      m.receivedAt,
      m.at,
      m.at,
    ).rowsWritten > 0
  );
}

/** The record in its day table, if that table is here. */
export function findRecord(tables: DayTables, sql: SqlStorage, id: string): MessageRow | undefined {
  const day = dayOfId(id);
  if (day === null || !tables.has(day)) return undefined;
  return sql.exec<MessageRow>(`SELECT * FROM ${dayTable(day)} WHERE id = ?`, id).toArray()[0];
}

/** The live binding of an Idempotency-Key among the records of the last 24 hours (today's table and yesterday's). */
export function findKey(
  tables: DayTables,
  sql: SqlStorage,
  key: string,
  since: number,
  at: number,
): { id: string; fingerprint: string } | undefined {
  for (let day = utcDay(at); day >= utcDay(since); day--) {
    if (!tables.has(day)) continue;
    const row = sql
      .exec<{ id: string; fingerprint: string; created_at: number }>(
        `SELECT id, fingerprint, created_at FROM ${dayTable(day)} WHERE idem_key = ?`,
        key,
      )
      .toArray()[0];
    if (row && row.created_at > since) return row;
  }
  return undefined;
}

/**
 * Writes the given columns of a record (only those: an UPDATE bills one row more for each index
 * whose columns it sets). Returns whether a row was written; `where` adds a compare-and-set.
 */
export function updateRecord(
  tables: DayTables,
  sql: SqlStorage,
  id: string,
  set: Record<string, SqlStorageValue>,
  where: { sql: string; bindings: SqlStorageValue[] } = { sql: "", bindings: [] },
): boolean {
  const day = dayOfId(id);
  if (day === null || !tables.has(day)) return false;
  const cols = Object.keys(set);
  if (cols.length === 0) return true;
  return (
    sql.exec(
      `UPDATE ${dayTable(day)} SET ${cols.map((c) => `${c} = ?`).join(", ")} WHERE id = ?${where.sql ? ` AND ${where.sql}` : ""}`,
      ...cols.map((c) => set[c]!),
      id,
      ...where.bindings,
    ).rowsWritten > 0
  );
}

/** The columns of `next` that differ from `row` (what an update must set, and nothing more). */
export function changedColumns(
  row: MessageRow,
  next: Record<string, SqlStorageValue>,
): Record<string, SqlStorageValue> {
  const out: Record<string, SqlStorageValue> = {};
  for (const [k, v] of Object.entries(next)) if (row[k] !== v) out[k] = v;
  return out;
}

/** A page of a number's work list (records with `pending = 1`), oldest first, after `afterId`, across the day tables. */
export function workOf(
  tables: DayTables,
  sql: SqlStorage,
  channelNumberId: string,
  afterId: string,
  limit: number,
): MessageRow[] {
  const out: MessageRow[] = [];
  const fromDay = dayOfId(afterId) ?? -1;
  for (const day of tables.list()) {
    if (day < fromDay) continue;
    const rows = sql
      .exec<MessageRow>(
        `SELECT * FROM ${dayTable(day)} INDEXED BY ${dayTable(day)}_work WHERE channel_number_id = ? AND pending = 1 AND id > ? ORDER BY id LIMIT ?`,
        channelNumberId,
        afterId,
        limit - out.length,
      )
      .toArray();
    out.push(...rows);
    if (out.length >= limit) break;
  }
  return out;
}

/** Outbound acceptance times since `since`, ascending (rebuilds the 60-second window after a restart): a key range of today's table. */
export function outboundTimesSince(tables: DayTables, sql: SqlStorage, since: number, at: number): number[] {
  const times: number[] = [];
  for (let day = utcDay(since); day <= utcDay(at); day++) {
    if (!tables.has(day)) continue;
    for (const r of sql
      .exec<{ created_at: number }>(
        `SELECT created_at FROM ${dayTable(day)} WHERE id >= ? AND direction = 'outbound' ORDER BY id`,
        uuidV7Floor(since),
      )
      .toArray()) {
      if (r.created_at > since) times.push(r.created_at);
    }
  }
  return times.sort((a, b) => a - b);
}

/** Outbound records of one day (quota and counts after a restart: one pass over the day's key order). */
export function countsOfDay(
  sql: SqlStorage,
  day: number,
): { channel_number_id: string; accepted: number; sent: number; failed: number; received: number }[] {
  return sql
    .exec<{ channel_number_id: string; accepted: number; sent: number; failed: number; received: number }>(
      `SELECT channel_number_id, SUM(direction = 'outbound') AS accepted, SUM(status = 'sent') AS sent,
              SUM(status = 'failed') AS failed, SUM(direction = 'inbound') AS received
       FROM ${dayTable(day)} GROUP BY channel_number_id`,
    )
    .toArray();
}
