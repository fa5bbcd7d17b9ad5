import { uuidV7Time } from "../../../domain/job-id";

/**
 * The history bookkeeping of the release before day tables: days in history shards, days archived,
 * and the day of ids that predate UUIDv7. Step 1 creates the tables; step 2 carries the first two
 * into the day ledger and drops them; the third is read until its days are archived.
 */
export function createHistoryTables(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS history_days (day INTEGER PRIMARY KEY, messages INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS history_legacy_ids (id TEXT PRIMARY KEY, day INTEGER NOT NULL) WITHOUT ROWID;
    -- Days archived to R2 (their manifest), listed by GET /message-archives. One row per day, kept as long as the archive (400 days).
    CREATE TABLE IF NOT EXISTS archived_days (day INTEGER PRIMARY KEY, messages INTEGER NOT NULL, parts INTEGER NOT NULL, archived_at INTEGER NOT NULL) WITHOUT ROWID;
  `);
}

export const legacyHistoryDays = (sql: SqlStorage): { day: number; messages: number }[] =>
  sql.exec<{ day: number; messages: number }>("SELECT day, messages FROM history_days").toArray();

export const legacyArchivedDays = (
  sql: SqlStorage,
): { day: number; messages: number; parts: number; archived_at: number }[] =>
  sql
    .exec<{ day: number; messages: number; parts: number; archived_at: number }>(
      "SELECT day, messages, parts, archived_at FROM archived_days",
    )
    .toArray();

/** The day of an id that predates UUIDv7 ids, if it was moved to history. */
export function legacyIdDay(sql: SqlStorage, id: string): number | null {
  if (uuidV7Time(id) !== null) return null;
  if (
    sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'history_legacy_ids'").toArray().length === 0
  )
    return null;
  return sql.exec<{ day: number }>("SELECT day FROM history_legacy_ids WHERE id = ?", id).toArray()[0]?.day ?? null;
}
