/**
 * The operator's pair rate: about one message every 6 seconds to the same
 * user, with bursts of up to 45 borrowed from future quota (WhatsApp Cloud
 * API, "Throughput": pair rate limit, error 131056). Each conversation of a
 * number is paced with a GCRA bucket of that shape, so a number sending 2/s to
 * one user does not run into 131056 errors, while other users are not held up.
 *
 * Bound: one row per recipient with recent sends (~40 B). No index on `tat`
 * (every call moved its entry: a second row written per call): the purge sweeps
 * the table in key order, SWEEP_BATCH keys per run from where the last run
 * stopped, and deletes the buckets full again; it runs at least hourly while the
 * table has rows, so a sweep covers 1,000 × 24 recipients a day, far more than
 * a number's 2/s can contact (rows of buckets full again are kept until the sweep
 * passes them: ~40 B each).
 */
export const PAIR_INTERVAL_MS = 6_000;
export const PAIR_BURST = 45;
export const SWEEP_BATCH = 1_000;
/** How often the sweep runs while the table has rows. */
export const SWEEP_EVERY_MS = 60 * 60_000;

export function createPairPaceTable(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS pair_pace (recipient TEXT PRIMARY KEY, tat INTEGER NOT NULL) WITHOUT ROWID;
    DROP INDEX IF EXISTS pair_pace_by_tat;
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
  sql.exec(
    "INSERT INTO pair_pace (recipient, tat) VALUES (?, ?) ON CONFLICT (recipient) DO UPDATE SET tat = excluded.tat",
    recipient,
    tat,
  );
}

export const hasPairs = (sql: SqlStorage): boolean => sql.exec("SELECT 1 FROM pair_pace LIMIT 1").toArray().length > 0;

/**
 * Deletes the buckets full again (tat ≤ at) among the SWEEP_BATCH keys after `after`; returns
 * where the next sweep starts ("" once it reached the end).
 */
export function sweepIdlePairs(sql: SqlStorage, at: number, after: string): string {
  const page = sql
    .exec<{ recipient: string }>(
      "SELECT recipient FROM pair_pace WHERE recipient > ? ORDER BY recipient LIMIT ?",
      after,
      SWEEP_BATCH,
    )
    .toArray();
  if (page.length === 0) return "";
  const last = page[page.length - 1]!.recipient;
  sql.exec("DELETE FROM pair_pace WHERE recipient > ? AND recipient <= ? AND tat <= ?", after, last, at);
  return page.length < SWEEP_BATCH ? "" : last;
}
