import { utcDay, uuidV7Time } from "../../domain/job-id";
import { getMeta, setMeta } from "../shared/meta";
import type { Keyset } from "./message-queries";
import type { MessageRow } from "./messages";

/**
 * Which UTC days of this workspace's messages live in history shards, and
 * where the hot window ends: every row in a shard is older, in (created_at, id)
 * order, than every row left in the workspace object, so a newest-first list
 * reads the hot rows and then the shards, day by day.
 *
 * Bound: one row per day in history (≤ the plan's window, 400 at most), and one
 * row per message that predates UUIDv7 ids (their day is not in the id).
 */
export function createHistoryTables(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS history_days (day INTEGER PRIMARY KEY, messages INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS history_legacy_ids (id TEXT PRIMARY KEY, day INTEGER NOT NULL) WITHOUT ROWID;
    -- Days archived to R2 (their manifest), listed by GET /message-archives. One row per day, kept as long as the archive (400 days).
    CREATE TABLE IF NOT EXISTS archived_days (day INTEGER PRIMARY KEY, messages INTEGER NOT NULL, parts INTEGER NOT NULL, archived_at INTEGER NOT NULL) WITHOUT ROWID;
  `);
}

/** How long archives are kept (and listed); an R2 lifecycle rule deletes the objects (README, deploying). */
export const KEEP_ARCHIVES_DAYS = 400;

export interface ArchivedDay {
  day: number;
  messages: number;
  parts: number;
  archived_at: number;
  [key: string]: SqlStorageValue;
}

export function recordArchivedDay(sql: SqlStorage, day: number, messages: number, parts: number, at: number): void {
  sql.exec("INSERT OR REPLACE INTO archived_days (day, messages, parts, archived_at) VALUES (?, ?, ?, ?)", day, messages, parts, at);
  sql.exec("DELETE FROM archived_days WHERE day < ?", day - KEEP_ARCHIVES_DAYS);
}

/** Archived days, newest first, before `beforeDay`. */
export const archivedDays = (sql: SqlStorage, beforeDay: number | null, limit: number): ArchivedDay[] =>
  sql.exec<ArchivedDay>("SELECT * FROM archived_days WHERE day < ? ORDER BY day DESC LIMIT ?", beforeDay ?? Number.MAX_SAFE_INTEGER, limit).toArray();

export const archivedDay = (sql: SqlStorage, day: number): ArchivedDay | null =>
  sql.exec<ArchivedDay>("SELECT * FROM archived_days WHERE day = ?", day).toArray()[0] ?? null;

const BOUNDARY = "history_boundary";

/** The newest row moved to history, or null when nothing was moved yet. */
export const historyBoundary = (sql: SqlStorage): Keyset | null => JSON.parse(getMeta(sql, BOUNDARY) ?? "null") as Keyset | null;

/** The oldest hot rows created before `before`, oldest first. */
export const oldestHotRows = (sql: SqlStorage, before: number, limit: number): MessageRow[] =>
  sql.exec<MessageRow>("SELECT * FROM messages WHERE created_at < ? ORDER BY created_at, id LIMIT ?", before, limit).toArray();

export const oldestHotAt = (sql: SqlStorage): number | null =>
  sql.exec<{ created_at: number }>("SELECT created_at FROM messages ORDER BY created_at, id LIMIT 1").toArray()[0]?.created_at ?? null;

/** After a shard took them: forget rows unchanged since they were read (a changed one moves again next round). */
export function forgetMoved(sql: SqlStorage, rows: MessageRow[], day: number): number {
  let moved = 0;
  for (const r of rows) {
    if (sql.exec("DELETE FROM messages WHERE id = ? AND version = ?", r.id, r.version).rowsWritten === 0) continue;
    moved++;
    if (uuidV7Time(r.id) === null) sql.exec("INSERT OR REPLACE INTO history_legacy_ids (id, day) VALUES (?, ?)", r.id, day);
  }
  sql.exec(
    "INSERT INTO history_days (day, messages) VALUES (?, ?) ON CONFLICT (day) DO UPDATE SET messages = messages + excluded.messages",
    day,
    moved,
  );
  const last = rows[rows.length - 1];
  const boundary = historyBoundary(sql);
  if (last && (!boundary || last.created_at > boundary.createdAt || (last.created_at === boundary.createdAt && last.id > boundary.id))) {
    setMeta(sql, BOUNDARY, JSON.stringify({ createdAt: last.created_at, id: last.id }));
  }
  return moved;
}

/** The history day a message id belongs to, if that day is in history. */
export function historyDayOf(sql: SqlStorage, id: string): number | null {
  const t = uuidV7Time(id);
  const day = t === null ? sql.exec<{ day: number }>("SELECT day FROM history_legacy_ids WHERE id = ?", id).toArray()[0]?.day : utcDay(t);
  if (day === undefined) return null;
  return sql.exec("SELECT 1 FROM history_days WHERE day = ?", day).toArray().length > 0 ? day : null;
}

/** Days in history, newest first, within [fromDay, toDay]. */
export const historyDays = (sql: SqlStorage, fromDay: number, toDay: number): number[] =>
  sql
    .exec<{ day: number }>("SELECT day FROM history_days WHERE day >= ? AND day <= ? ORDER BY day DESC", fromDay, toDay)
    .toArray()
    .map((r) => r.day);

export const oldestHistoryDay = (sql: SqlStorage): number | null =>
  sql.exec<{ day: number | null }>("SELECT MIN(day) AS day FROM history_days").one().day;

/** The day left history (archived and deleted). */
export function forgetHistoryDay(sql: SqlStorage, day: number): void {
  sql.exec("DELETE FROM history_days WHERE day = ?", day);
  sql.exec("DELETE FROM history_legacy_ids WHERE id IN (SELECT id FROM history_legacy_ids WHERE day = ? LIMIT 10000)", day);
}
