import { DurableObject } from "cloudflare:workers";
import { now } from "../lib/clock";
import { NUMBER_LIMIT, windowState, type WindowState } from "../domain/rate-window";

export interface AdmitCommand {
  jobId: string;
  workspaceId: string;
  channelNumberId: string;
  to: string;
  body: string;
  acceptedAt: number;
}

export type AdmitResult = { ok: true; window: WindowState } | { ok: false; window: WindowState };

/**
 * One per channel number: its 2-per-second send window and its outbox, drained
 * in acceptance order. Admitting is idempotent on the jobId, so a retried
 * hand-off never creates a second outbox entry nor spends a second slot.
 */
export class ChannelNumberDurableObject extends DurableObject<Env> {
  protected readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    ctx.blockConcurrencyWhile(async () => {
      this.sql.exec(`
        CREATE TABLE IF NOT EXISTS send_times (job_id TEXT PRIMARY KEY, at INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS send_times_by_at ON send_times (at);
        CREATE TABLE IF NOT EXISTS outbox (
          seq INTEGER PRIMARY KEY AUTOINCREMENT,
          job_id TEXT NOT NULL UNIQUE,
          workspace_id TEXT NOT NULL,
          channel_number_id TEXT NOT NULL,
          recipient TEXT NOT NULL,
          body TEXT NOT NULL,
          accepted_at INTEGER NOT NULL,
          state TEXT NOT NULL DEFAULT 'queued',
          attempts INTEGER NOT NULL DEFAULT 0,
          next_attempt_at INTEGER NOT NULL DEFAULT 0,
          upstream_message_id TEXT,
          updated_at INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS outbox_by_state ON outbox (state, seq);
      `);
    });
  }

  async admit(cmd: AdmitCommand): Promise<AdmitResult> {
    const at = now();
    this.sql.exec("DELETE FROM send_times WHERE at <= ?", at - NUMBER_LIMIT.windowMs);
    const recent = this.sql
      .exec<{ at: number }>("SELECT at FROM send_times ORDER BY at")
      .toArray()
      .map((r) => r.at);
    const known = this.sql.exec("SELECT 1 FROM outbox WHERE job_id = ?", cmd.jobId).toArray().length > 0;
    if (known) return { ok: true, window: windowState(NUMBER_LIMIT, recent, 0, at) };

    const before = windowState(NUMBER_LIMIT, recent, 0, at);
    if (before.remaining === 0) return { ok: false, window: before };
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("INSERT INTO send_times (job_id, at) VALUES (?, ?)", cmd.jobId, at);
      this.sql.exec(
        `INSERT INTO outbox (job_id, workspace_id, channel_number_id, recipient, body, accepted_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
        cmd.jobId,
        cmd.workspaceId,
        cmd.channelNumberId,
        cmd.to,
        cmd.body,
        at,
        at,
      );
    });
    return { ok: true, window: windowState(NUMBER_LIMIT, [...recent, at], 0, at) };
  }

  /** The outbox in acceptance order (for tests and the operator's view). */
  async outboxJobIds(): Promise<string[]> {
    return this.sql
      .exec<{ job_id: string }>("SELECT job_id FROM outbox ORDER BY seq")
      .toArray()
      .map((r) => r.job_id);
  }
}
