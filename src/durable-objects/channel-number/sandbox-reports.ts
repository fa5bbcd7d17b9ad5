import type { SimulatedStatus } from "../../operator/adapter";
import type { OperatorStatus } from "../../messages/status";
import type { NumberStorage } from "./number-storage";

/**
 * Statuses the sandbox "operator" reports after the call, as the real
 * operator's webhooks would (delivered, read, or a failure after acceptance).
 * Bound: a few rows per sandbox send, each due within minutes and deleted when applied.
 */
export function createSandboxReportsTable(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS sandbox_reports (
      seq INTEGER PRIMARY KEY, job_id TEXT NOT NULL, upstream_message_id TEXT NOT NULL, due_at INTEGER NOT NULL,
      status TEXT NOT NULL, error_code TEXT, error_message TEXT);
    CREATE INDEX IF NOT EXISTS sandbox_reports_by_due ON sandbox_reports (due_at);
  `);
}

export function scheduleReports(
  storage: NumberStorage,
  jobId: string,
  upstreamMessageId: string,
  at: number,
  later: readonly SimulatedStatus[],
): void {
  const sql = storage.ensure();
  if (!storage.hasTable("sandbox_reports")) createSandboxReportsTable(sql);
  for (const s of later) {
    sql.exec(
      "INSERT INTO sandbox_reports (job_id, upstream_message_id, due_at, status, error_code, error_message) VALUES (?, ?, ?, ?, ?, ?)",
      jobId,
      upstreamMessageId,
      at + s.afterMs,
      s.status,
      s.errorCode ?? null,
      s.errorMessage ?? null,
    );
  }
}

export const nextReportDue = (storage: NumberStorage): number | null =>
  !storage.hasTable("sandbox_reports")
    ? null
    : storage.sql.exec<{ at: number | null }>("SELECT MIN(due_at) AS at FROM sandbox_reports").one().at;

/** The reports due at `at`, oldest first (deleted once applied: `forgetReports`). */
export function dueReports(storage: NumberStorage, at: number, limit = 100): (OperatorStatus & { seq: number })[] {
  if (!storage.hasTable("sandbox_reports")) return [];
  const rows = storage.sql
    .exec<{
      seq: number;
      job_id: string;
      upstream_message_id: string;
      due_at: number;
      status: OperatorStatus["status"];
      error_code: string | null;
      error_message: string | null;
    }>("SELECT * FROM sandbox_reports WHERE due_at <= ? ORDER BY due_at, seq LIMIT ?", at, limit)
    .toArray();
  return rows.map((r) => ({
    seq: r.seq,
    upstreamMessageId: r.upstream_message_id,
    jobId: r.job_id,
    status: r.status,
    at: r.due_at,
    errorCode: r.error_code,
    errorMessage: r.error_message,
  }));
}

/** Deletes reports once their changes were applied. */
export function forgetReports(storage: NumberStorage, seqs: number[]): void {
  for (const seq of seqs) storage.sql.exec("DELETE FROM sandbox_reports WHERE seq = ?", seq);
}
