/**
 * Idempotency keys whose records left the object before their 24 hours were over: only when the
 * object is over its storage budget and keeps its last 6 to 12 hours (history-tiering.ts). A key
 * normally lives in its record (the slot tables of the last 24 hours are always here otherwise).
 *
 * Bound: one row (~170 B with its age index) per record moved within 24 hours of its acceptance:
 * none normally, at most 24 hours of the workspace's sends (1.73 M, ~300 MB) under storage pressure;
 * deleted 24 hours after the send, 1,000 rows a run, through the age index.
 */
const PURGE_BATCH = 1_000;

const hasTable = (sql: SqlStorage): boolean =>
  sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'moved_keys'").toArray().length > 0;

export function keepMovedKeys(
  sql: SqlStorage,
  rows: { idem_key: string | null; id: string; fingerprint: string | null; created_at: number }[],
  since: number,
): void {
  const live = rows.filter((r) => r.idem_key !== null && r.fingerprint !== null && r.created_at > since);
  if (live.length === 0) return;
  sql.exec(
    "CREATE TABLE IF NOT EXISTS moved_keys (idem_key TEXT PRIMARY KEY, id TEXT NOT NULL, fingerprint TEXT NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID",
  );
  sql.exec("CREATE INDEX IF NOT EXISTS moved_keys_by_age ON moved_keys (created_at)");
  for (const r of live) {
    sql.exec(
      "INSERT OR REPLACE INTO moved_keys (idem_key, id, fingerprint, created_at) VALUES (?, ?, ?, ?)",
      r.idem_key,
      r.id,
      r.fingerprint,
      r.created_at,
    );
  }
}

export function findMovedKey(
  sql: SqlStorage,
  key: string,
  since: number,
): { id: string; fingerprint: string } | undefined {
  if (!hasTable(sql)) return undefined;
  return sql
    .exec<{ id: string; fingerprint: string }>(
      "SELECT id, fingerprint FROM moved_keys WHERE idem_key = ? AND created_at > ?",
      key,
      since,
    )
    .toArray()[0];
}

/** When the oldest kept key expires (one row of the age index). */
export function nextMovedKeyExpiry(sql: SqlStorage, ttlMs: number): number | null {
  if (!hasTable(sql)) return null;
  const oldest = sql.exec<{ at: number | null }>("SELECT MIN(created_at) AS at FROM moved_keys").one().at;
  return oldest === null ? null : oldest + ttlMs;
}

/** Deletes expired keys (1,000 a run); drops the table once it is empty. */
export function purgeMovedKeys(sql: SqlStorage, before: number): void {
  if (!hasTable(sql)) return;
  sql.exec(
    "DELETE FROM moved_keys WHERE idem_key IN (SELECT idem_key FROM moved_keys WHERE created_at <= ? ORDER BY created_at LIMIT ?)",
    before,
    PURGE_BATCH,
  );
  if (sql.exec("SELECT 1 FROM moved_keys LIMIT 1").toArray().length === 0) sql.exec("DROP TABLE moved_keys");
}
