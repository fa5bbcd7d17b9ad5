import { uuidV7Floor } from "../../lib/job-id";
import { slotOf, slotOfId, slotTable, type SlotTables } from "./day-tables";
import type { MessageRow } from "../../messages/record";

/** What a send stores (the record of an accepted send). */
export interface NewOutbound {
  id: string;
  channelNumberId: string;
  to: string;
  type: string;
  body: string;
  content: string | null;
  /** A template send's facts (JSON; messages/record.ts `details`); null for text. */
  details: string | null;
  idemKey: string;
  fingerprint: string;
  at: number;
}

/**
 * An accepted send: the record, its key and its place in the number's work list, in one insert
 * (the row and three index entries: counterpart, key, work).
 */
export function insertOutbound(tables: SlotTables, sql: SqlStorage, m: NewOutbound): void {
  const slot = slotOf(m.at);
  const t = tables.ensure(slot);
  sql.exec(
    `INSERT INTO ${t} (id, direction, channel_number_id, recipient, type, body, content, details, status, idem_key, fingerprint,
                       pending, created_at, updated_at)
     VALUES (?, 'outbound', ?, ?, ?, ?, ?, ?, 'queued', ?, ?, 1, ?, ?)`,
    m.id,
    m.channelNumberId,
    m.to,
    m.type,
    m.body,
    m.content,
    m.details,
    m.idemKey,
    m.fingerprint,
    m.at,
    m.at,
  );
  tables.added(slot);
}

export interface NewInbound {
  id: string;
  channelNumberId: string;
  from: string;
  type: string;
  body: string;
  content: string | null;
  /** What the operator tells about an inbound message beyond its content (JSON; messages/record.ts `details`). */
  details: string | null;
  upstreamMessageId: string;
  receivedAt: number;
  at: number;
}

/** An inbound message, in the table of its id's day (the operator's time). Returns false when it was there already. */
export function insertInbound(tables: SlotTables, sql: SqlStorage, m: NewInbound): boolean {
  const slot = slotOfId(m.id);
  if (slot === null) throw new Error(`inbound id ${m.id} is not a UUIDv7`);
  const t = tables.ensure(slot);
  const inserted =
    sql.exec(
      `INSERT OR IGNORE INTO ${t} (id, direction, channel_number_id, recipient, type, body, content, details, status, upstream_message_id,
                                   received_at, created_at, updated_at)
       VALUES (?, 'inbound', ?, ?, ?, ?, ?, ?, 'received', ?, ?, ?, ?)`,
      m.id,
      m.channelNumberId,
      m.from,
      m.type,
      m.body,
      m.content,
      m.details,
      m.upstreamMessageId,
      m.receivedAt,
      m.at,
      m.at,
    ).rowsWritten > 0;
  if (inserted) tables.added(slot);
  return inserted;
}

/** The live binding of an Idempotency-Key among the records of the last 24 hours (the slot tables since then). */
export function findKey(
  tables: SlotTables,
  sql: SqlStorage,
  key: string,
  since: number,
  at: number,
): { id: string; fingerprint: string } | undefined {
  for (let slot = slotOf(at); slot >= slotOf(since); slot--) {
    if (!tables.has(slot)) continue;
    const row = sql
      .exec<{ id: string; fingerprint: string; created_at: number }>(
        `SELECT id, fingerprint, created_at FROM ${slotTable(slot)} WHERE idem_key = ?`,
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
  tables: SlotTables,
  sql: SqlStorage,
  id: string,
  set: Record<string, SqlStorageValue>,
  where: { sql: string; bindings: SqlStorageValue[] } = { sql: "", bindings: [] },
): boolean {
  const slot = slotOfId(id);
  if (slot === null || !tables.has(slot)) return false;
  const cols = Object.keys(set);
  if (cols.length === 0) return true;
  const written =
    sql.exec(
      `UPDATE ${slotTable(slot)} SET ${cols.map((c) => `${c} = ?`).join(", ")} WHERE id = ?${where.sql ? ` AND ${where.sql}` : ""}`,
      ...cols.map((c) => set[c]!),
      id,
      ...where.bindings,
    ).rowsWritten > 0;
  // A copy of the record on its way to its shard is stale now (it is sent again).
  if (written) tables.written(slot, id);
  return written;
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

/** A page of a number's work list (records with `pending = 1`), oldest first, after `afterId`, across the slot tables. */
export function workOf(
  tables: SlotTables,
  sql: SqlStorage,
  channelNumberId: string,
  afterId: string,
  limit: number,
): MessageRow[] {
  const out: MessageRow[] = [];
  const fromSlot = slotOfId(afterId) ?? -1;
  for (const slot of tables.list()) {
    if (slot < fromSlot) continue;
    const rows = sql
      .exec<MessageRow>(
        `SELECT * FROM ${slotTable(slot)}${tables.hasIndexes(slot) ? ` INDEXED BY ${slotTable(slot)}_work` : ""} WHERE channel_number_id = ? AND pending = 1 AND id > ? ORDER BY id LIMIT ?`,
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

/** Outbound acceptance times since `since`, ascending, with their numbers (rebuilds the rate windows after a restart): a key range. */
export function outboundTimesSince(
  tables: SlotTables,
  sql: SqlStorage,
  since: number,
  at: number,
): { at: number; channelNumberId: string }[] {
  const times: { at: number; channelNumberId: string }[] = [];
  for (let slot = slotOf(since); slot <= slotOf(at); slot++) {
    if (!tables.has(slot)) continue;
    for (const r of sql
      .exec<{ created_at: number; channel_number_id: string }>(
        `SELECT created_at, channel_number_id FROM ${slotTable(slot)} WHERE id >= ? AND direction = 'outbound' ORDER BY id`,
        uuidV7Floor(since),
      )
      .toArray()) {
      if (r.created_at > since) times.push({ at: r.created_at, channelNumberId: r.channel_number_id });
    }
  }
  return times.sort((a, b) => a.at - b.at);
}

/** The counts of one slot's records with ids in [fromId, toId) (all of them by default): one pass over that key range. */
export function countsOfSlot(
  sql: SqlStorage,
  slot: number,
  fromId = "",
  toId: string | null = null,
): { channel_number_id: string; accepted: number; sent: number; failed: number; received: number }[] {
  return sql
    .exec<{ channel_number_id: string; accepted: number; sent: number; failed: number; received: number }>(
      `SELECT channel_number_id, SUM(direction = 'outbound') AS accepted, SUM(status = 'sent') AS sent,
              SUM(status = 'failed') AS failed, SUM(direction = 'inbound') AS received
       FROM ${slotTable(slot)} WHERE id >= ?${toId === null ? "" : " AND id < ?"} GROUP BY channel_number_id`,
      ...(toId === null ? [fromId] : [fromId, toId]),
    )
    .toArray();
}
