import { DurableObject } from "cloudflare:workers";
import { now } from "../lib/clock";
import { log } from "../lib/log";
import { NUMBER_LIMIT, windowState, type WindowState } from "../domain/rate-window";
import type { MessageReceivedData } from "../domain/events";
import type { SendResult } from "../upstream/adapter";
import { OWN_ERRORS, permanentError } from "../upstream/error-codes";
import type { StatusUpdate } from "./workspace";
import { workspaceStub } from "./stubs";
import { adapterFor, loadNumber, type CachedNumber } from "./number-config";
import { createEventLogTable, eventsAbout, hasUnpublishedEvents, publishEvents, recordEvent } from "./event-log";
import { ensureColumn } from "./sql-schema";
import { createSendWindowTable, recordSend, sendsInWindow } from "./send-window";

export interface AdmitCommand {
  jobId: string;
  workspaceId: string;
  channelNumberId: string;
  to: string;
  body: string;
  acceptedAt: number;
}

export type AdmitResult = { ok: true; window: WindowState } | { ok: false; window: WindowState };

/** An operator status for one of our messages (from its webhooks). */
export interface OperatorStatus {
  upstreamMessageId: string;
  jobId: string | null;
  status: "sent" | "delivered" | "read" | "failed";
  at: number;
  errorCode: string | null;
  errorMessage: string | null;
}

/** An inbound message from a user to this number. */
export interface InboundMessage {
  upstreamMessageId: string;
  from: string;
  type: string;
  text: string | null;
  content: Record<string, unknown> | null;
  at: number;
}

export interface ContactWindow {
  phone: string;
  lastInboundAt: string | null;
  windowExpiresAt: string | null;
  windowOpen: boolean;
}

/** Minimum spacing of upstream calls: the number's 2-per-second pace. */
export const PACE_MS = NUMBER_LIMIT.windowMs / NUMBER_LIMIT.limit;
/** Attempts per message before it fails with upstream_retries_exhausted. */
export const MAX_ATTEMPTS = 6;
const RETRY_DELAYS_MS = [1_000, 5_000, 15_000, 30_000, 60_000];
/** How long a message with an unknown outcome waits for the operator's status before it fails. */
export const UNKNOWN_OUTCOME_GRACE_MS = 15 * 60_000;
/**
 * The workspace records a message microseconds after its hand-off, so a young
 * entry it does not know yet keeps its place and is asked about again shortly.
 * An older one belongs to a send that failed midway: it steps out of line as an
 * orphan, is revived if the client retries (same jobId), and is dropped after
 * ORPHAN_GRACE_MS otherwise, never sent.
 */
const UNCONFIRMED_WAIT_MS = 5_000;
const ORPHAN_GRACE_MS = 60_000;
const CUSTOMER_SERVICE_WINDOW_MS = 24 * 60 * 60_000;
const KEEP_FINISHED_MS = 7 * 24 * 60 * 60_000;

type OutboxState = "queued" | "claiming" | "sending" | "unknown" | "sent" | "failed" | "orphan" | "dropped";

interface OutboxRow {
  seq: number;
  job_id: string;
  workspace_id: string;
  channel_number_id: string;
  recipient: string;
  body: string;
  accepted_at: number;
  state: OutboxState;
  attempts: number;
  next_attempt_at: number;
  upstream_message_id: string | null;
  unknown_since: number | null;
  updated_at: number;
  [key: string]: SqlStorageValue;
}

/**
 * One per channel number: its 2-per-second send window and its outbox, drained
 * in acceptance order by alarms. Each entry's state is persisted before the
 * upstream call, so a crash or restart never sends a message twice: an entry
 * found mid-call on restart has an unknown outcome and waits for the operator's
 * status instead of being sent again.
 */
export class ChannelNumberDurableObject extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private number: CachedNumber | null = null;
  private draining = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    ctx.blockConcurrencyWhile(async () => {
      this.sql.exec(`
        CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
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
          unknown_since INTEGER,
          updated_at INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS outbox_by_state ON outbox (state, seq);
        CREATE INDEX IF NOT EXISTS outbox_by_upstream_id ON outbox (upstream_message_id);
        -- Changes for the workspace's authoritative record, delivered at least once.
        CREATE TABLE IF NOT EXISTS status_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, workspace_id TEXT NOT NULL, body TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS inbound (upstream_message_id TEXT PRIMARY KEY, message_id TEXT NOT NULL, received_at INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS contacts (phone TEXT PRIMARY KEY, last_inbound_at INTEGER NOT NULL);
      `);
      ensureColumn(this.sql, "outbox", "unknown_since", "INTEGER");
      createEventLogTable(this.sql);
      createSendWindowTable(this.sql);
      // An entry still "sending" belongs to a call that a crash or restart cut
      // short: it may have reached the operator, so it is never sent again.
      this.sql.exec(
        "UPDATE outbox SET state = 'unknown', unknown_since = ?, updated_at = ? WHERE state = 'sending'",
        now(),
        now(),
      );
      // A claim that never reached the upstream call is safe to take again.
      this.sql.exec("UPDATE outbox SET state = 'queued' WHERE state = 'claiming'");
    });
  }

  async admit(cmd: AdmitCommand): Promise<AdmitResult> {
    const at = now();
    const recent = sendsInWindow(this.sql, NUMBER_LIMIT, at);
    const known = this.sql.exec("SELECT 1 FROM outbox WHERE job_id = ?", cmd.jobId).toArray().length > 0;
    if (known) {
      // A retried hand-off of a send that failed midway brings its entry back into line.
      this.sql.exec("UPDATE outbox SET state = 'queued', next_attempt_at = 0, updated_at = ? WHERE job_id = ? AND state IN ('orphan', 'dropped')", at, cmd.jobId);
      await this.wakeAt(at);
      return { ok: true, window: windowState(NUMBER_LIMIT, recent, 0, at) };
    }

    const before = windowState(NUMBER_LIMIT, recent, 0, at);
    if (before.remaining === 0) return { ok: false, window: before };
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES ('channel_number_id', ?)", cmd.channelNumberId);
      recordSend(this.sql, cmd.jobId, at);
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
    await this.wakeAt(at);
    return { ok: true, window: windowState(NUMBER_LIMIT, [...recent, at], 0, at) };
  }

  override async alarm(): Promise<void> {
    let next: number | null = null;
    try {
      next = await this.drainStep();
      await this.flushStatusOutbox();
      await publishEvents(this.sql, this.env.WEBHOOK_QUEUE);
    } catch (err) {
      log("warn", "number outbox step failed; will retry", { error: String(err) });
      next = now() + 2_000;
    }
    if (this.sql.exec("SELECT 1 FROM status_outbox LIMIT 1").toArray().length > 0 || hasUnpublishedEvents(this.sql)) {
      next = Math.min(next ?? Infinity, now() + 2_000);
    }
    this.sql.exec(
      "DELETE FROM outbox WHERE state IN ('sent', 'failed', 'dropped') AND updated_at < ?",
      now() - KEEP_FINISHED_MS,
    );
    if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, Date.now()));
  }

  /**
   * Takes the outbox one step: settles expired unknown outcomes, then hands the
   * oldest due message to the upstream. Returns when it wants to run again.
   */
  private async drainStep(): Promise<number | null> {
    if (this.draining) return now() + PACE_MS;
    this.draining = true;
    try {
      return await this.drainStepExclusive();
    } finally {
      this.draining = false;
    }
  }

  private async drainStepExclusive(): Promise<number | null> {
    const t = now();
    this.sql.exec("UPDATE outbox SET state = 'dropped', updated_at = ? WHERE state = 'orphan' AND accepted_at < ?", t, t - ORPHAN_GRACE_MS);
    for (const row of this.rows("SELECT * FROM outbox WHERE state = 'unknown' AND unknown_since <= ?", t - UNKNOWN_OUTCOME_GRACE_MS)) {
      this.finish(row, "failed", { error: OWN_ERRORS.outcomeUnknown() });
    }

    const head = this.rows("SELECT * FROM outbox WHERE state = 'queued' ORDER BY seq LIMIT 1")[0];
    const nextUnknown = this.rows("SELECT * FROM outbox WHERE state = 'unknown' ORDER BY unknown_since LIMIT 1")[0];
    const nextOrphan = this.rows("SELECT * FROM outbox WHERE state = 'orphan' ORDER BY accepted_at LIMIT 1")[0];
    const wakes = [nextUnknown ? nextUnknown.unknown_since! + UNKNOWN_OUTCOME_GRACE_MS : null, nextOrphan ? nextOrphan.accepted_at + ORPHAN_GRACE_MS : null].filter(
      (w): w is number => w !== null,
    );
    if (!head) return wakes.length > 0 ? Math.min(...wakes) : null;
    // Strict acceptance order: the head waits out its own retry delay before anything behind it.
    if (head.next_attempt_at > t) return head.next_attempt_at;
    const lastCall = Number(this.meta("last_call_at") ?? 0);
    if (lastCall + PACE_MS > t) return lastCall + PACE_MS;

    this.number = await loadNumber(this.env.DB, head.channel_number_id, this.number);
    const number = this.number.row;
    if (!number || number.status !== "connected") {
      this.finish(head, "failed", { error: OWN_ERRORS.numberDisconnected() });
      return t;
    }

    // Claim: the workspace must know the message (its send may have failed after
    // the hand-off) and learns that it is processing.
    this.setState(head, "claiming");
    let claim;
    try {
      claim = await workspaceStub(this.env, head.workspace_id).applyStatus({ jobId: head.job_id, status: "processing", at: t });
    } catch (err) {
      this.requeue(head, t + 2_000);
      throw err;
    }
    if (!claim.known) {
      if (head.accepted_at < t - UNCONFIRMED_WAIT_MS) {
        log("warn", "outbox entry its workspace never recorded steps out of line", { jobId: head.job_id });
        this.setState(head, "orphan");
      } else {
        this.requeue(head, t + 100);
      }
      return t;
    }
    if (claim.status === "sent" || claim.status === "failed") {
      this.setState(head, claim.status);
      return t;
    }

    const attempt = head.attempts + 1;
    // Persisted before the call: the output gate holds the request until this write is durable.
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("UPDATE outbox SET state = 'sending', attempts = ?, updated_at = ? WHERE seq = ?", attempt, t, head.seq);
      this.setMeta("last_call_at", String(t));
    });
    let result: SendResult;
    try {
      result = await (await adapterFor(this.env, number)).send({ jobId: head.job_id, to: head.recipient, body: head.body, attempt });
    } catch (err) {
      log("error", "upstream adapter threw", { jobId: head.job_id, error: String(err) });
      result = { kind: "unknown", message: "The adapter failed during the call." };
    }
    this.settle({ ...head, attempts: attempt }, result);
    return now();
  }

  private settle(row: OutboxRow, result: SendResult): void {
    const t = now();
    switch (result.kind) {
      case "accepted":
        this.finish(row, "sent", { upstreamMessageId: result.upstreamMessageId });
        return;
      case "permanent":
        this.finish(row, "failed", { error: result.error });
        return;
      case "retryable": {
        if (row.attempts >= MAX_ATTEMPTS) {
          this.finish(row, "failed", { error: OWN_ERRORS.retriesExhausted(result.upstreamCode ?? result.message) });
          return;
        }
        const delay = Math.max(result.retryAfterMs ?? 0, RETRY_DELAYS_MS[row.attempts - 1] ?? RETRY_DELAYS_MS.at(-1)!);
        this.requeue(row, t + delay);
        return;
      }
      case "unknown":
        this.sql.exec("UPDATE outbox SET state = 'unknown', unknown_since = ?, updated_at = ? WHERE seq = ?", t, t, row.seq);
        log("warn", "upstream outcome unknown; waiting for the operator's status", { jobId: row.job_id });
        return;
    }
  }

  /** Final state of an entry, with the change queued for the workspace's record. */
  private finish(row: OutboxRow, state: "sent" | "failed", detail: Pick<StatusUpdate, "upstreamMessageId" | "error">): void {
    const t = now();
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        "UPDATE outbox SET state = ?, upstream_message_id = COALESCE(?, upstream_message_id), updated_at = ? WHERE seq = ?",
        state,
        detail.upstreamMessageId ?? null,
        t,
        row.seq,
      );
      this.queueStatus(row.workspace_id, { jobId: row.job_id, at: t, status: state, ...detail });
    });
  }

  /** Applies the operator's status reports; duplicates and regressions change nothing. */
  async applyOperatorStatuses(statuses: OperatorStatus[]): Promise<void> {
    for (const s of statuses) {
      const row =
        (s.jobId ? this.rows("SELECT * FROM outbox WHERE job_id = ?", s.jobId)[0] : undefined) ??
        this.rows("SELECT * FROM outbox WHERE upstream_message_id = ?", s.upstreamMessageId)[0];
      if (!row) {
        log("info", "operator status for a message this number does not know", { upstreamMessageId: s.upstreamMessageId });
        continue;
      }
      this.ctx.storage.transactionSync(() => {
        if (row.state === "unknown" || row.state === "sending") {
          // The operator has it after all: the unknown outcome is settled, never by resending.
          this.sql.exec(
            "UPDATE outbox SET state = ?, upstream_message_id = COALESCE(upstream_message_id, ?), updated_at = ? WHERE seq = ?",
            s.status === "failed" ? "failed" : "sent",
            s.upstreamMessageId,
            now(),
            row.seq,
          );
        }
        const update: StatusUpdate = { jobId: row.job_id, at: s.at, upstreamMessageId: s.upstreamMessageId };
        if (s.status === "sent") update.status = "sent";
        if (s.status === "delivered") update.deliveredAt = s.at;
        if (s.status === "read") update.readAt = s.at;
        if (s.status === "failed") {
          update.status = "failed";
          update.error = permanentError(s.errorCode, s.errorMessage ?? undefined);
        }
        this.queueStatus(row.workspace_id, update);
      });
    }
    try {
      await this.flushStatusOutbox();
    } catch (err) {
      log("warn", "status flush failed; the alarm retries it", { error: String(err) });
    }
    await this.wakeAt(now());
  }

  /** Records inbound messages once each (the operator retries) and announces them. */
  async receiveInbound(workspaceId: string, channelNumberId: string, messages: InboundMessage[]): Promise<string[]> {
    const ids: string[] = [];
    for (const m of messages) {
      const seen = this.sql
        .exec<{ message_id: string }>("SELECT message_id FROM inbound WHERE upstream_message_id = ?", m.upstreamMessageId)
        .toArray()[0];
      if (seen) {
        ids.push(seen.message_id);
        continue;
      }
      const messageId = crypto.randomUUID();
      const data: MessageReceivedData = {
        messageId,
        channelNumberId,
        from: m.from,
        type: m.type,
        text: m.text === null ? null : { body: m.text },
        content: m.content,
        upstreamMessageId: m.upstreamMessageId,
        receivedAt: new Date(m.at).toISOString(),
      };
      this.ctx.storage.transactionSync(() => {
        this.sql.exec("INSERT INTO inbound (upstream_message_id, message_id, received_at) VALUES (?, ?, ?)", m.upstreamMessageId, messageId, m.at);
        this.sql.exec(
          `INSERT INTO contacts (phone, last_inbound_at) VALUES (?, ?)
           ON CONFLICT (phone) DO UPDATE SET last_inbound_at = MAX(last_inbound_at, excluded.last_inbound_at)`,
          m.from,
          m.at,
        );
        recordEvent(
          this.sql,
          { id: `evt_${crypto.randomUUID().replaceAll("-", "")}`, type: "message.received", workspaceId, channelNumberId, createdAt: new Date(now()).toISOString(), data },
          messageId,
        );
      });
      ids.push(messageId);
    }
    await this.wakeAt(now());
    return ids;
  }

  /** The customer-service window with one contact: open for 24 hours after their last message. */
  async contactWindow(phone: string): Promise<ContactWindow> {
    const row = this.sql.exec<{ last_inbound_at: number }>("SELECT last_inbound_at FROM contacts WHERE phone = ?", phone).toArray()[0];
    const expires = row ? row.last_inbound_at + CUSTOMER_SERVICE_WINDOW_MS : null;
    return {
      phone,
      lastInboundAt: row ? new Date(row.last_inbound_at).toISOString() : null,
      windowExpiresAt: expires === null ? null : new Date(expires).toISOString(),
      windowOpen: expires !== null && expires > now(),
    };
  }

  /** Forget the cached number row (called on disconnect). */
  async invalidateNumber(): Promise<void> {
    this.number = null;
    await this.wakeAt(now());
  }

  /** The outbox in acceptance order with each entry's state (operator view and tests). */
  async outbox(): Promise<{ jobId: string; state: OutboxState; attempts: number; upstreamMessageId: string | null }[]> {
    return this.rows("SELECT * FROM outbox ORDER BY seq").map((r) => ({
      jobId: r.job_id,
      state: r.state,
      attempts: r.attempts,
      upstreamMessageId: r.upstream_message_id,
    }));
  }

  async outboxJobIds(): Promise<string[]> {
    return (await this.outbox()).map((e) => e.jobId);
  }

  /** The events recorded about one message, oldest first, as a JSON array (operator view and tests). */
  async eventsFor(subject: string): Promise<string> {
    return JSON.stringify(eventsAbout(this.sql, subject));
  }

  private async flushStatusOutbox(): Promise<void> {
    for (;;) {
      const pending = this.sql
        .exec<{ seq: number; workspace_id: string; body: string }>("SELECT * FROM status_outbox ORDER BY seq LIMIT 50")
        .toArray();
      if (pending.length === 0) return;
      for (const p of pending) {
        await workspaceStub(this.env, p.workspace_id).applyStatus(JSON.parse(p.body) as StatusUpdate);
        this.sql.exec("DELETE FROM status_outbox WHERE seq = ?", p.seq);
      }
    }
  }

  private queueStatus(workspaceId: string, update: StatusUpdate): void {
    this.sql.exec("INSERT INTO status_outbox (workspace_id, body) VALUES (?, ?)", workspaceId, JSON.stringify(update));
  }

  private requeue(row: OutboxRow, at: number): void {
    this.sql.exec("UPDATE outbox SET state = 'queued', next_attempt_at = ?, updated_at = ? WHERE seq = ?", at, now(), row.seq);
  }

  private setState(row: OutboxRow, state: OutboxState): void {
    this.sql.exec("UPDATE outbox SET state = ?, updated_at = ? WHERE seq = ?", state, now(), row.seq);
  }

  private rows(query: string, ...bindings: SqlStorageValue[]): OutboxRow[] {
    return this.sql.exec<OutboxRow>(query, ...bindings).toArray();
  }

  private meta(k: string): string | undefined {
    return this.sql.exec<{ v: string }>("SELECT v FROM meta WHERE k = ?", k).toArray()[0]?.v;
  }

  private setMeta(k: string, v: string): void {
    this.sql.exec("INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)", k, v);
  }

  private async wakeAt(at: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > at) await this.ctx.storage.setAlarm(at);
  }
}
