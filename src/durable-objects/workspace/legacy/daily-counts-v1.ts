import { utcDay } from "../../../domain/job-id";
import type { DayCounts } from "../day-ledger";

/**
 * The per-day, per-number counters of the release before day tables (counts are derived from the
 * records since). Step 1 creates the table; step 2 moves its rows into the day ledger and drops it.
 */
export function createDailyCountsTable(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS daily_counts (
      day INTEGER NOT NULL, channel_number_id TEXT NOT NULL,
      accepted INTEGER NOT NULL DEFAULT 0, sent INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,
      received INTEGER NOT NULL DEFAULT 0, dirty INTEGER NOT NULL DEFAULT 1,
      PRIMARY KEY (day, channel_number_id)) WITHOUT ROWID;
    -- Each count's upsert SETs dirty, so an index on it cost a row per count: dirty rows are
    -- found by a range of the key instead (changingSince).
    DROP INDEX IF EXISTS daily_counts_dirty;
  `);
}

/** Storage from before daily counts kept one counter per month: it becomes that month's first day. */
export function migrateMonthlyUsage(sql: SqlStorage): void {
  const exists =
    sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'monthly_usage'").toArray().length > 0;
  if (!exists) return;
  // Inside the schema step's transaction: all of it or none.
  for (const m of sql.exec<{ period: string; used: number }>("SELECT period, used FROM monthly_usage").toArray()) {
    const day = utcDay(Date.parse(`${m.period}-01T00:00:00Z`));
    sql.exec(
      "INSERT INTO daily_counts (day, channel_number_id, accepted, dirty) VALUES (?, '', ?, 0) ON CONFLICT DO UPDATE SET accepted = accepted + excluded.accepted",
      day,
      m.used,
    );
  }
  sql.exec("DROP TABLE monthly_usage");
}

/** Every row, per day (step 2 carries them into the day ledger). */
export function legacyDailyCounts(sql: SqlStorage): Map<number, DayCounts> {
  const out = new Map<number, DayCounts>();
  const rows = sql
    .exec<{ day: number; channel_number_id: string; accepted: number; sent: number; failed: number; received: number }>(
      "SELECT day, channel_number_id, accepted, sent, failed, received FROM daily_counts",
    )
    .toArray();
  for (const r of rows)
    out.set(r.day, { ...(out.get(r.day) ?? {}), [r.channel_number_id]: [r.accepted, r.sent, r.failed, r.received] });
  return out;
}
