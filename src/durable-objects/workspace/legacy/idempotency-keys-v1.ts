/** How long an Idempotency-Key stays bound to its first send (documented: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Idempotency-Key → (payload fingerprint, jobId), the release before day tables (keys are a column
 * of the record since). Step 1 creates it; from step 2 on it is only read, for the 24 hours its
 * keys stay bound, and then dropped (legacy-tier.ts).
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
