/**
 * The operator's pair rate: about one message every 6 seconds to the same
 * user, with bursts of up to 45 borrowed from future quota (WhatsApp Cloud
 * API, "Throughput": pair rate limit, error 131056). Each conversation of a
 * number is paced with a GCRA bucket of that shape, so a number sending 2/s to
 * one user does not run into 131056 errors, while other users are not held up.
 *
 * Bound: one row per recipient with recent sends (~40 B); rows whose bucket is
 * full again are purged in batches (index on tat).
 */
export const PAIR_INTERVAL_MS = 6_000;
export const PAIR_BURST = 45;
const PURGE_BATCH = 1_000;

export function createPairPaceTable(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS pair_pace (recipient TEXT PRIMARY KEY, tat INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS pair_pace_by_tat ON pair_pace (tat);
  `);
}

const tatOf = (sql: SqlStorage, recipient: string): number | null =>
  sql.exec<{ tat: number }>("SELECT tat FROM pair_pace WHERE recipient = ?", recipient).toArray()[0]?.tat ?? null;

/** The earliest a message to `recipient` may be called, at `at` or later. */
export function pairReadyAt(sql: SqlStorage, recipient: string, at: number): number {
  const tat = tatOf(sql, recipient);
  if (tat === null) return at;
  return Math.max(at, tat - (PAIR_BURST - 1) * PAIR_INTERVAL_MS);
}

/** Records a call to `recipient` at `at` (call it in the same transaction as the call's `sending` state). */
export function notePairCall(sql: SqlStorage, recipient: string, at: number): void {
  const tat = Math.max(tatOf(sql, recipient) ?? at, at) + PAIR_INTERVAL_MS;
  sql.exec("INSERT INTO pair_pace (recipient, tat) VALUES (?, ?) ON CONFLICT (recipient) DO UPDATE SET tat = excluded.tat", recipient, tat);
}

/** When the first bucket is full again (nothing to remember about it), or null. */
export const nextPairExpiry = (sql: SqlStorage): number | null => sql.exec<{ at: number | null }>("SELECT MIN(tat) AS at FROM pair_pace").one().at;

export function purgeIdlePairs(sql: SqlStorage, at: number): void {
  sql.exec("DELETE FROM pair_pace WHERE recipient IN (SELECT recipient FROM pair_pace WHERE tat <= ? ORDER BY tat LIMIT ?)", at, PURGE_BATCH);
}
