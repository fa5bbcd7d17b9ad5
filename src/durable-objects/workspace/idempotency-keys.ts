/** How long an Idempotency-Key stays bound to its first send (documented: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const PURGE_BATCH = 1_000;

/**
 * Idempotency-Key → (payload fingerprint, jobId). Bound: one row per accepted
 * send (~150 B with its index), kept 24 hours: at 1,200 sends/min, 1.73 M rows
 * (~260 MB) at most. Purged in batches of 1,000 by the `idempotency-purge` step.
 */
export function createIdempotencyKeysTable(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS idempotency_keys (
      key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, job_id TEXT NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS idempotency_keys_by_age ON idempotency_keys (created_at);
  `);
}

export interface BoundKey {
  fingerprint: string;
  job_id: string;
}

/** The live binding of a key, if any (an expired one the purge has not reached yet reads as absent). */
export const findBoundKey = (sql: SqlStorage, key: string, at: number): BoundKey | undefined =>
  sql
    .exec<{ fingerprint: string; job_id: string }>(
      "SELECT fingerprint, job_id FROM idempotency_keys WHERE key = ? AND created_at > ?",
      key,
      at - IDEMPOTENCY_TTL_MS,
    )
    .toArray()[0];

export function bindKey(sql: SqlStorage, key: string, fingerprint: string, jobId: string, at: number): void {
  sql.exec(
    // An expired binding the purge has not reached yet is simply replaced.
    `INSERT INTO idempotency_keys (key, fingerprint, job_id, created_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, job_id = excluded.job_id, created_at = excluded.created_at`,
    key,
    fingerprint,
    jobId,
    at,
  );
}

/** When the oldest binding expires, or null when there is none. */
export const nextKeyExpiry = (sql: SqlStorage): number | null => {
  const oldest = sql
    .exec<{ created_at: number }>("SELECT created_at FROM idempotency_keys ORDER BY created_at LIMIT 1")
    .toArray()[0];
  return oldest ? oldest.created_at + IDEMPOTENCY_TTL_MS : null;
};

/** Deletes up to one batch of expired bindings, oldest first. */
export function purgeExpiredKeys(sql: SqlStorage, at: number): void {
  sql.exec(
    "DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM idempotency_keys WHERE created_at <= ? ORDER BY created_at LIMIT ?)",
    at - IDEMPOTENCY_TTL_MS,
    PURGE_BATCH,
  );
}
