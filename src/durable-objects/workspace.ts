import { DurableObject } from "cloudflare:workers";
import { monthPeriod, now } from "../lib/clock";
import { deriveJobId } from "../domain/job-id";
import type { SendMessageRequest } from "../domain/send-request";
import { WORKSPACE_LIMIT, windowState, type WindowState } from "../domain/rate-window";
import type { Message, MessageCopy, MessageStatus } from "../domain/message";
import { isFresh, loadWorkspaceConfig, type WorkspaceConfig } from "./workspace-config";
import { channelNumberStub } from "./stubs";
import { log } from "../lib/log";
import { STATUS_RANK, isTerminal } from "../domain/message";
import type { NormalizedError } from "../upstream/adapter";
import type { MessageStatusData, WebhookEvent } from "../domain/events";
import { createEventLogTable, eventsAbout, hasUnpublishedEvents, publishEvents, recordEvent } from "./event-log";
import { createSendWindowTable, recordSend, sendsInWindow } from "./send-window";

/** How long an Idempotency-Key stays bound to its first send (documented: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const FLUSH_DELAY_MS = 1_000;
/** A message still queued after this is handed to its outbox again (idempotent on the jobId). */
export const STRANDED_AFTER_MS = 2 * 60_000;
const RECONCILE_BATCH = 50;
const FLUSH_RETRY_MS = 5_000;
const FLUSH_BATCH = 100;

export interface SendCommand {
  workspaceId: string;
  idempotencyKey: string;
  fingerprint: string;
  request: SendMessageRequest;
}

export interface RateInfo {
  limit: number;
  remaining: number;
  resetSeconds: number;
}

export type SendOutcome =
  | { kind: "created"; jobId: string; rate: RateInfo }
  | { kind: "duplicate"; jobId: string }
  | { kind: "conflict" }
  | { kind: "forbidden" }
  | { kind: "quota_exceeded"; limit: number }
  | { kind: "rate_limited"; scope: "number" | "workspace"; retryAfterMs: number; rate: RateInfo };

/** A change reported by the number's outbox or by the operator; applying it twice changes nothing. */
export interface StatusUpdate {
  jobId: string;
  at: number;
  status?: "processing" | "sent" | "failed";
  upstreamMessageId?: string;
  error?: NormalizedError;
  deliveredAt?: number;
  readAt?: number;
}

export interface StatusResult {
  known: boolean;
  status: MessageStatus | null;
}

export interface Usage {
  period: { start: string; end: string };
  messagesUsed: number;
}

interface MessageRow {
  id: string;
  channel_number_id: string;
  recipient: string;
  body: string;
  status: MessageStatus;
  upstream_message_id: string | null;
  error_code: string | null;
  error_message: string | null;
  error_retriable: number | null;
  upstream_error_code: string | null;
  created_at: number;
  updated_at: number;
  processing_at: number | null;
  sent_at: number | null;
  failed_at: number | null;
  delivered_at: number | null;
  read_at: number | null;
  version: number;
  [key: string]: SqlStorageValue;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

const toRateInfo = (w: WindowState): RateInfo => ({
  limit: w.limit,
  remaining: w.remaining,
  resetSeconds: Math.ceil(w.resetMs / 1000),
});

/**
 * One per workspace: the authority for admitting a send. Idempotency keys, the
 * 1200-per-minute window, the monthly quota and the message records live in its
 * SQLite storage, so that admission is one local transaction with no D1 write.
 */
export class WorkspaceDurableObject extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private config: WorkspaceConfig | null = null;
  private workspaceId: string | null = null;
  // Sends that passed the checks and wait on the number's outbox: they hold a
  // slot of the window and of the quota until they commit or give up.
  private reserved = 0;
  private readonly inFlight = new Map<string, Promise<SendOutcome>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    ctx.blockConcurrencyWhile(async () => {
      this.sql.exec(`
        CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS idempotency_keys (
          key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, job_id TEXT NOT NULL, created_at INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS idempotency_keys_by_age ON idempotency_keys (created_at);
        CREATE TABLE IF NOT EXISTS monthly_usage (period TEXT PRIMARY KEY, used INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS messages (
          id TEXT PRIMARY KEY, channel_number_id TEXT NOT NULL, recipient TEXT NOT NULL, body TEXT NOT NULL,
          status TEXT NOT NULL, upstream_message_id TEXT, error_code TEXT, error_message TEXT,
          error_retriable INTEGER, upstream_error_code TEXT,
          created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, processing_at INTEGER, sent_at INTEGER,
          failed_at INTEGER, delivered_at INTEGER, read_at INTEGER,
          version INTEGER NOT NULL, copy_pending INTEGER NOT NULL DEFAULT 1);
        CREATE INDEX IF NOT EXISTS messages_copy_pending ON messages (copy_pending) WHERE copy_pending = 1;
      `);
      createEventLogTable(this.sql);
      createSendWindowTable(this.sql);
      this.workspaceId = this.sql.exec<{ v: string }>("SELECT v FROM meta WHERE k = 'workspace_id'").toArray()[0]?.v ?? null;
    });
  }

  /** Admits one send: replay and conflict checks, number, quota, both limits, then record it. */
  async send(cmd: SendCommand): Promise<SendOutcome> {
    this.rememberWorkspace(cmd.workspaceId);
    for (;;) {
      // A concurrent request with the same key waits for the first, then reads its outcome.
      const pending = this.inFlight.get(cmd.idempotencyKey);
      if (pending) {
        await pending.catch(() => undefined);
        continue;
      }
      const bound = this.sql
        .exec<{ fingerprint: string; job_id: string }>(
          "SELECT fingerprint, job_id FROM idempotency_keys WHERE key = ? AND created_at > ?",
          cmd.idempotencyKey,
          now() - IDEMPOTENCY_TTL_MS,
        )
        .toArray()[0];
      if (bound) {
        return bound.fingerprint === cmd.fingerprint ? { kind: "duplicate", jobId: bound.job_id } : { kind: "conflict" };
      }
      const attempt = this.admit(cmd);
      this.inFlight.set(cmd.idempotencyKey, attempt);
      try {
        return await attempt;
      } finally {
        this.inFlight.delete(cmd.idempotencyKey);
      }
    }
  }

  private async admit(cmd: SendCommand): Promise<SendOutcome> {
    const config = await this.loadConfig(cmd.workspaceId);
    if (!config || !config.connectedNumbers.has(cmd.request.channelNumberId)) return { kind: "forbidden" };

    // From here to `reserved++` nothing awaits, so the checks and the reservation are atomic.
    const at = now();
    const period = monthPeriod(at).key;
    if (this.usedIn(period) + this.reserved >= config.quota) return { kind: "quota_exceeded", limit: config.quota };
    const recent = sendsInWindow(this.sql, WORKSPACE_LIMIT, at);
    const workspaceWindow = windowState(WORKSPACE_LIMIT, recent, this.reserved, at);
    if (workspaceWindow.remaining === 0) {
      return { kind: "rate_limited", scope: "workspace", retryAfterMs: workspaceWindow.retryAfterMs, rate: toRateInfo(workspaceWindow) };
    }
    this.reserved++;
    try {
      const jobId = await this.freshJobId(cmd);
      const admitted = await channelNumberStub(this.env, cmd.request.channelNumberId).admit({
        jobId,
        workspaceId: cmd.workspaceId,
        channelNumberId: cmd.request.channelNumberId,
        to: cmd.request.to,
        body: cmd.request.text.body,
        acceptedAt: at,
      });
      if (!admitted.ok) {
        return { kind: "rate_limited", scope: "number", retryAfterMs: admitted.window.retryAfterMs, rate: toRateInfo(admitted.window) };
      }
      this.ctx.storage.transactionSync(() => {
        this.sql.exec(
          // An expired binding the purge alarm has not reached yet is simply replaced.
          `INSERT INTO idempotency_keys (key, fingerprint, job_id, created_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, job_id = excluded.job_id,
             created_at = excluded.created_at`,
          cmd.idempotencyKey,
          cmd.fingerprint,
          jobId,
          at,
        );
        recordSend(this.sql, jobId, at);
        this.sql.exec(
          "INSERT INTO monthly_usage (period, used) VALUES (?, 1) ON CONFLICT (period) DO UPDATE SET used = used + 1",
          period,
        );
        this.sql.exec(
          `INSERT INTO messages (id, channel_number_id, recipient, body, status, created_at, updated_at, version)
           VALUES (?, ?, ?, ?, 'queued', ?, ?, 1)`,
          jobId,
          cmd.request.channelNumberId,
          cmd.request.to,
          cmd.request.text.body,
          at,
          at,
        );
      });
      await this.scheduleFlush();
      const afterWorkspace = windowState(WORKSPACE_LIMIT, [...recent, at], this.reserved - 1, at);
      // Report whichever limit is closer to refusing the next send.
      const rate = admitted.window.remaining <= afterWorkspace.remaining ? admitted.window : afterWorkspace;
      return { kind: "created", jobId, rate: toRateInfo(rate) };
    } finally {
      this.reserved--;
    }
  }

  /** The jobId for this key; a new generation only if an expired binding left the old one taken. */
  private async freshJobId(cmd: SendCommand): Promise<string> {
    for (let generation = 0; ; generation++) {
      const jobId = await deriveJobId(this.env.JOB_ID_SECRET, cmd.workspaceId, cmd.idempotencyKey, generation);
      const taken = this.sql.exec("SELECT 1 FROM messages WHERE id = ?", jobId).toArray().length > 0;
      if (!taken) return jobId;
    }
  }

  async getMessage(id: string): Promise<Message | null> {
    const row = this.sql.exec<MessageRow>("SELECT * FROM messages WHERE id = ?", id).toArray()[0];
    return row ? this.toMessage(row) : null;
  }

  /**
   * Moves a message forward. Status only ever advances (queued → processing →
   * sent | failed; sent and failed are final), so duplicates and late or
   * out-of-order reports are harmless. Delivery and read reports are kept as
   * timestamps. Each effective change records one `message.status` event.
   */
  async applyStatus(update: StatusUpdate): Promise<StatusResult> {
    const row = this.sql.exec<MessageRow>("SELECT * FROM messages WHERE id = ?", update.jobId).toArray()[0];
    if (!row) return { known: false, status: null };

    let status = row.status;
    const reported = update.status ?? (update.deliveredAt !== undefined || update.readAt !== undefined ? "sent" : undefined);
    if (reported && !isTerminal(row.status) && STATUS_RANK[reported] > STATUS_RANK[row.status]) status = reported;
    const next = {
      status,
      upstream_message_id: row.upstream_message_id ?? update.upstreamMessageId ?? null,
      processing_at: row.processing_at ?? (status !== "queued" ? update.at : null),
      sent_at: row.sent_at ?? (status === "sent" ? update.at : null),
      failed_at: row.failed_at ?? (status === "failed" ? update.at : null),
      delivered_at: row.delivered_at ?? (status !== "failed" ? update.deliveredAt ?? null : null),
      read_at: row.read_at ?? (status !== "failed" ? update.readAt ?? null : null),
      error: status === "failed" && row.status !== "failed" ? update.error ?? null : null,
    };
    const statusChanged = status !== row.status;
    const changed =
      statusChanged ||
      next.upstream_message_id !== row.upstream_message_id ||
      next.delivered_at !== row.delivered_at ||
      next.read_at !== row.read_at;
    if (!changed) return { known: true, status: row.status };

    const updatedAt = Math.max(update.at, row.updated_at);
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        `UPDATE messages SET status = ?, upstream_message_id = ?, processing_at = ?, sent_at = ?, failed_at = ?,
           delivered_at = ?, read_at = ?, updated_at = ?, version = version + 1, copy_pending = 1,
           error_code = COALESCE(?, error_code), error_message = COALESCE(?, error_message),
           error_retriable = COALESCE(?, error_retriable), upstream_error_code = COALESCE(?, upstream_error_code)
         WHERE id = ?`,
        next.status,
        next.upstream_message_id,
        next.processing_at,
        next.sent_at,
        next.failed_at,
        next.delivered_at,
        next.read_at,
        updatedAt,
        next.error?.code ?? null,
        next.error?.message ?? null,
        next.error ? (next.error.retriable ? 1 : 0) : null,
        next.error?.upstreamCode ?? null,
        update.jobId,
      );
      // Delivery and read reports are announced too, with the status unchanged.
      if (statusChanged || next.delivered_at !== row.delivered_at || next.read_at !== row.read_at) {
        const fresh = this.sql.exec<MessageRow>("SELECT * FROM messages WHERE id = ?", update.jobId).toArray()[0]!;
        recordEvent(this.sql, this.statusEvent(fresh, row.status), update.jobId);
      }
    });
    await this.scheduleFlush();
    return { known: true, status: next.status };
  }

  /** The events recorded about one message, oldest first, as a JSON array (operator view and tests). */
  async eventsFor(jobId: string): Promise<string> {
    return JSON.stringify(eventsAbout(this.sql, jobId));
  }

  async usage(at: number = now()): Promise<Usage> {
    const period = monthPeriod(at);
    return { period: { start: period.start, end: period.end }, messagesUsed: this.usedIn(period.key) };
  }

  /** Admin changes (a disconnected number, a new quota) take effect at once. */
  async invalidateConfig(): Promise<void> {
    this.config = null;
  }

  override async alarm(): Promise<void> {
    this.sql.exec("DELETE FROM idempotency_keys WHERE created_at <= ?", now() - IDEMPOTENCY_TTL_MS);
    try {
      await publishEvents(this.sql, this.env.WEBHOOK_QUEUE);
      await this.flushCopies();
      await this.reHandStranded();
    } catch (err) {
      log("warn", "publishing events or message copies failed; will retry", { error: String(err) });
      await this.ctx.storage.setAlarm(Date.now() + FLUSH_RETRY_MS);
      return;
    }
    await this.scheduleNextAlarm();
  }

  /**
   * The safety net behind "never lost": a message recorded as queued that has not
   * started after a while is handed to its number's outbox again. `admit` is
   * idempotent on the jobId and revives an entry that was set aside as an orphan.
   */
  private async reHandStranded(): Promise<void> {
    const workspaceId = this.workspaceId;
    if (!workspaceId) return;
    const stale = this.sql
      .exec<MessageRow>("SELECT * FROM messages WHERE status = 'queued' AND created_at <= ? ORDER BY created_at LIMIT ?", now() - STRANDED_AFTER_MS, RECONCILE_BATCH)
      .toArray();
    for (const row of stale) {
      await channelNumberStub(this.env, row.channel_number_id).admit({
        jobId: row.id,
        workspaceId,
        channelNumberId: row.channel_number_id,
        to: row.recipient,
        body: row.body,
        acceptedAt: row.created_at,
      });
    }
  }

  private usedIn(periodKey: string): number {
    return this.sql.exec<{ used: number }>("SELECT used FROM monthly_usage WHERE period = ?", periodKey).toArray()[0]?.used ?? 0;
  }

  private rememberWorkspace(workspaceId: string): void {
    if (this.workspaceId === workspaceId) return;
    this.workspaceId = workspaceId;
    this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('workspace_id', ?)", workspaceId);
  }

  private async loadConfig(workspaceId: string): Promise<WorkspaceConfig | null> {
    if (!isFresh(this.config)) this.config = await loadWorkspaceConfig(this.env.DB, workspaceId);
    return this.config;
  }

  /** Ships changed message records to D1 through the copies queue, a batch at a time. */
  private async flushCopies(): Promise<void> {
    const workspaceId = this.workspaceId;
    if (!workspaceId) return;
    for (;;) {
      const rows = this.sql
        .exec<MessageRow>("SELECT * FROM messages WHERE copy_pending = 1 LIMIT ?", FLUSH_BATCH)
        .toArray();
      if (rows.length === 0) return;
      await this.env.MESSAGE_COPY_QUEUE.sendBatch(rows.map((row) => ({ body: this.toCopy(workspaceId, row) })));
      // Only rows unchanged since they were read are clean; a newer version ships next round.
      for (const row of rows) {
        this.sql.exec("UPDATE messages SET copy_pending = 0 WHERE id = ? AND version = ?", row.id, row.version);
      }
    }
  }

  private async scheduleFlush(): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    const due = Date.now() + FLUSH_DELAY_MS;
    if (current === null || current > due) await this.ctx.storage.setAlarm(due);
  }

  private async scheduleNextAlarm(): Promise<void> {
    const oldestKey = this.sql
      .exec<{ created_at: number }>("SELECT created_at FROM idempotency_keys ORDER BY created_at LIMIT 1")
      .toArray()[0];
    const pending =
      hasUnpublishedEvents(this.sql) || this.sql.exec("SELECT 1 FROM messages WHERE copy_pending = 1 LIMIT 1").toArray().length > 0;
    const oldestQueued = this.sql
      .exec<{ created_at: number }>("SELECT created_at FROM messages WHERE status = 'queued' ORDER BY created_at LIMIT 1")
      .toArray()[0];
    if (pending) {
      await this.scheduleFlush();
      return;
    }
    const wakes = [
      oldestKey ? oldestKey.created_at + IDEMPOTENCY_TTL_MS + 1_000 : null,
      oldestQueued ? Math.max(oldestQueued.created_at + STRANDED_AFTER_MS, Date.now() + STRANDED_AFTER_MS / 2) : null,
    ].filter((w): w is number => w !== null);
    if (wakes.length > 0) await this.ctx.storage.setAlarm(Math.max(Date.now(), Math.min(...wakes)));
  }

  private statusEvent(row: MessageRow, previous: MessageStatus): WebhookEvent {
    const message = this.toMessage(row);
    const data: MessageStatusData = {
      messageId: row.id,
      channelNumberId: row.channel_number_id,
      to: row.recipient,
      status: row.status,
      previousStatus: previous,
      upstreamMessageId: row.upstream_message_id,
      error: message.error,
      deliveredAt: message.deliveredAt,
      readAt: message.readAt,
      updatedAt: message.updatedAt,
    };
    return {
      id: `evt_${crypto.randomUUID().replaceAll("-", "")}`,
      type: "message.status",
      workspaceId: this.workspaceId ?? "",
      channelNumberId: row.channel_number_id,
      createdAt: new Date(now()).toISOString(),
      data,
    };
  }

  private toMessage(row: MessageRow): Message {
    return {
      id: row.id,
      channelNumberId: row.channel_number_id,
      to: row.recipient,
      type: "text",
      text: { body: row.body },
      status: row.status,
      upstreamMessageId: row.upstream_message_id,
      error: row.error_code
        ? {
            code: row.error_code,
            message: row.error_message ?? "",
            retriable: row.error_retriable === 1,
            upstreamCode: row.upstream_error_code,
          }
        : null,
      createdAt: iso(row.created_at)!,
      updatedAt: iso(row.updated_at)!,
      processingAt: iso(row.processing_at),
      sentAt: iso(row.sent_at),
      failedAt: iso(row.failed_at),
      deliveredAt: iso(row.delivered_at),
      readAt: iso(row.read_at),
    };
  }

  private toCopy(workspaceId: string, row: MessageRow): MessageCopy {
    return {
      id: row.id,
      workspaceId,
      channelNumberId: row.channel_number_id,
      to: row.recipient,
      type: "text",
      body: row.body,
      status: row.status,
      upstreamMessageId: row.upstream_message_id,
      errorCode: row.error_code,
      errorMessage: row.error_message,
      createdAt: iso(row.created_at)!,
      updatedAt: iso(row.updated_at)!,
      deliveredAt: iso(row.delivered_at),
      readAt: iso(row.read_at),
      version: row.version,
    };
  }
}

