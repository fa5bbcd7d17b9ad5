import type { WindowLimit } from "../domain/rate-window";

/** The acceptance log behind a sliding-window limit, kept in an object's SQLite storage. */
export function createSendWindowTable(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS send_times (job_id TEXT PRIMARY KEY, at INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS send_times_by_at ON send_times (at);
  `);
}

/** Forgets sends that left the window ending at `at` and returns the rest, oldest first. */
export function sendsInWindow(sql: SqlStorage, limit: WindowLimit, at: number): number[] {
  sql.exec("DELETE FROM send_times WHERE at <= ?", at - limit.windowMs);
  return sql
    .exec<{ at: number }>("SELECT at FROM send_times ORDER BY at")
    .toArray()
    .map((r) => r.at);
}

export function recordSend(sql: SqlStorage, jobId: string, at: number): void {
  sql.exec("INSERT INTO send_times (job_id, at) VALUES (?, ?)", jobId, at);
}
