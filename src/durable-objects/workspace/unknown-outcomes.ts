/**
 * Sends whose call got no usable answer (a timeout, a lost connection): the message may or may
 * not have reached the operator, so it is never called again; the operator's status report settles
 * it, and without one it fails with `upstream_outcome_unknown` when the operator's 7-day webhook
 * window ends. The record says so (`outcome_unknown_since`); this small list is how the expiry
 * finds them without a scan, wherever their record is by then (a day table or a history shard).
 *
 * Bound: one row (~60 B) per message waiting on an unknown outcome: none in the steady state, at
 * most 7 days of a number's timeouts (2/s: 1.2 M rows, ~70 MB, if every call timed out for a week).
 */
export const UNKNOWN_OUTCOME_WINDOW_MS = 7 * 24 * 60 * 60_000;

const hasTable = (sql: SqlStorage): boolean =>
  sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'unknowns'").toArray().length > 0;

export function noteUnknown(sql: SqlStorage, id: string, since: number): void {
  sql.exec("CREATE TABLE IF NOT EXISTS unknowns (id TEXT PRIMARY KEY, since INTEGER NOT NULL) WITHOUT ROWID");
  sql.exec("INSERT OR IGNORE INTO unknowns (id, since) VALUES (?, ?)", id, since);
}

export function forgetUnknown(sql: SqlStorage, id: string): void {
  if (hasTable(sql)) sql.exec("DELETE FROM unknowns WHERE id = ?", id);
}

/** When the oldest of the first few (ids are in acceptance order, `since` follows it within the hour of retries) expires, or null. */
export function nextUnknownExpiry(sql: SqlStorage, windowMs: number): number | null {
  if (!hasTable(sql)) return null;
  const oldest = sql
    .exec<{ since: number | null }>(
      "SELECT MIN(since) AS since FROM (SELECT since FROM unknowns ORDER BY id LIMIT 100)",
    )
    .one().since;
  return oldest === null ? null : oldest + windowMs;
}

/** Unknown outcomes past the window, among the oldest `limit` by id. */
export function expiredUnknowns(sql: SqlStorage, before: number, limit: number): string[] {
  if (!hasTable(sql)) return [];
  return sql
    .exec<{ id: string; since: number }>("SELECT id, since FROM unknowns ORDER BY id LIMIT ?", limit)
    .toArray()
    .filter((r) => r.since <= before)
    .map((r) => r.id);
}
