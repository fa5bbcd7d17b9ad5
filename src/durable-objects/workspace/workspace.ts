import { DurableObject } from "cloudflare:workers";
import { config } from "../../config";
import { monthPeriod, now } from "../../lib/clock";
import { log } from "../../lib/log";
import { DAY_MS, deriveJobId, newUuidV7, utcDay } from "../../domain/job-id";
import { WORKSPACE_LIMIT, windowState, type WindowState } from "../../domain/rate-window";
import { newEventId, type MessageStatusData, type WebhookEvent } from "../../domain/events";
import { Scheduler, withSlack } from "../shared/scheduler";
import { createMetaTable, getMeta, setMeta } from "../shared/meta";
import { publishInOrder } from "../../lib/queue-publisher";
import { channelNumberStub } from "../stubs";
import { isFresh, loadWorkspaceConfig, type WorkspaceConfig } from "./config";
import type { DailyUsage, DeliveryReport, InboundRecord, RateInfo, SendCommand, SendOutcome, StatusResult, StatusUpdate, Usage } from "./contract";
import { acceptedBetween, countOne, createDailyCountsTable, dailyUsage, dirtyCounts, hasDirtyCounts, markCountsClean, type CountsRow } from "./daily-counts";
import {
  CONFIRM_WITHIN_MS,
  attemptsAbout,
  attemptsOfWebhook,
  createEventLogTable,
  eventsAbout,
  findEvent,
  hasUnpublishedEvents,
  lastFailedAttempt,
  markReplayed,
  nextCheckDue,
  nextEventExpiry,
  publishEvents,
  purgeOldEvents,
  recordDeliveries,
  recordEvent,
  republishOverdue,
  type AttemptRow,
} from "./event-log";
import { bindKey, createIdempotencyKeysTable, findBoundKey, nextKeyExpiry, purgeExpiredKeys } from "./idempotency-keys";
import {
  createMessagesTable,
  findInboundByUpstreamId,
  findMessage,
  insertInbound,
  insertOutbound,
  isOutbound,
  lifecycleOf,
  oldestQueuedAt,
  outboundTimesSince,
  queuedAcceptedBefore,
  toMessageView,
  writeLifecycle,
  type MessageRow,
} from "./messages";
import { applyTransition } from "./status-transition";
import { listPage, SCAN_BUDGET, type Keyset, type MessageFilter } from "./message-queries";
import {
  archivedDay,
  archivedDays,
  createHistoryTables,
  recordArchivedDay,
  type ArchivedDay,
  forgetHistoryDay,
  forgetMoved,
  historyBoundary,
  historyDayOf,
  historyDays,
  oldestHistoryDay,
  oldestHotAt,
  oldestHotRows,
} from "./history-tiering";
import { historyStub } from "../history/history";

/** Events wait this long before publishing, so that a burst goes out in one batch. */
const PUBLISH_DELAY_MS = 250;
/** A message still queued after this is handed to its outbox again (idempotent on the jobId). */
export const STRANDED_AFTER_MS = 2 * 60_000;
const STRANDED_BATCH = 50;
/** Daily counts reach D1 (operator analytics) at most this often per workspace. */
const COUNTS_FLUSH_INTERVAL_MS = 60_000;
const COUNTS_BATCH = 200;
/** Messages stay in this object this long, then move to their day's history shard. */
export const HOT_WINDOW_MS = 48 * 60 * 60 * 1000;
/** Above this, the object sheds early: the hot window shrinks to MIN_HOT_WINDOW_MS (the storage budget, docs/architecture.md). */
export const HOT_BYTES_BUDGET = 3.5 * 1024 ** 3;
export const MIN_HOT_WINDOW_MS = 6 * 60 * 60 * 1000;
const TIER_BATCH = 500;
/** Archive parts written per alarm run (each ~20,000 messages). */
const ARCHIVE_PARTS_PER_RUN = 4;
const DEFAULT_HISTORY_DAYS = 30;

const toRateInfo = (w: WindowState, scope: RateInfo["scope"]): RateInfo => ({
  scope,
  limit: w.limit,
  remaining: w.remaining,
  resetSeconds: Math.ceil(w.resetMs / 1000),
});

/**
 * One per workspace: the authority for admitting a send (idempotency keys, the
 * 1200-per-minute window, the monthly quota) and for the workspace's message
 * records and customer events. Admission is one local transaction with no D1
 * write; timed work runs as isolated scheduled steps.
 */
export class WorkspaceDurableObject extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private readonly scheduler: Scheduler;
  private config: WorkspaceConfig | null = null;
  private workspaceId: string | null;
  /** Requests in progress per Idempotency-Key: a concurrent retry waits for the first. */
  private readonly inFlight = new Map<string, Promise<SendOutcome>>();
  /** Admissions that passed the checks and wait on their number: they may still be refused there. */
  private readonly pending = new Set<Promise<SendOutcome>>();
  /** Committed acceptance times of the last minute, ascending (rebuilt from the records after a restart). */
  private recent: number[];
  private month: { key: string; used: number } | null = null;
  private lastCountsFlush = now();
  private lastStrandedCheck = 0;
  private readonly confirmWithinMs: number;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.confirmWithinMs = config(env).eventConfirmWithinMs ?? CONFIRM_WITHIN_MS;
    createMetaTable(this.sql);
    createIdempotencyKeysTable(this.sql);
    createMessagesTable(this.sql);
    createEventLogTable(this.sql);
    createDailyCountsTable(this.sql);
    createHistoryTables(this.sql);
    this.migrateMonthlyUsage();
    this.sql.exec("DROP TABLE IF EXISTS send_times");
    this.workspaceId = getMeta(this.sql, "workspace_id") ?? null;
    this.recent = outboundTimesSince(this.sql, now() - WORKSPACE_LIMIT.windowMs);
    this.scheduler = new Scheduler(ctx.storage, [
      { name: "publish-events", due: (at) => (hasUnpublishedEvents(this.sql) ? at : null), run: () => publishEvents(this.sql, env.WEBHOOK_QUEUE) },
      { name: "republish-unreported", due: () => nextCheckDue(this.sql), run: (at) => republishOverdue(this.sql, env.WEBHOOK_QUEUE, at, this.confirmWithinMs) },
      { name: "counts-to-d1", due: () => (hasDirtyCounts(this.sql) ? this.lastCountsFlush + COUNTS_FLUSH_INTERVAL_MS : null), run: () => this.flushCounts() },
      { name: "re-hand-stranded", due: () => this.strandedDue(), run: (at) => this.reHandStranded(at) },
      { name: "idempotency-purge", due: () => withSlack(nextKeyExpiry(this.sql)), run: async (at) => purgeExpiredKeys(this.sql, at) },
      {
        name: "event-purge",
        due: () => withSlack(nextEventExpiry(this.sql, this.underPressure())),
        run: async (at) => purgeOldEvents(this.sql, at, this.underPressure()),
      },
      { name: "move-to-history", due: () => withSlack(this.tierDue()), run: (at) => this.moveToHistory(at) },
      { name: "archive-history", due: () => this.archiveDue(), run: (at) => this.archiveOldestDay(at) },
    ]);
    ctx.blockConcurrencyWhile(() => this.scheduler.ensureArmed());
  }

  /** Admits one send: replay and conflict checks, number, quota, both limits, then record it. */
  async send(cmd: SendCommand): Promise<SendOutcome> {
    this.rememberWorkspace(cmd.workspaceId);
    for (;;) {
      const earlier = this.inFlight.get(cmd.idempotencyKey);
      if (earlier) {
        await earlier.catch(() => undefined);
        continue;
      }
      const bound = findBoundKey(this.sql, cmd.idempotencyKey, now());
      if (bound) {
        return bound.fingerprint === cmd.fingerprint ? { kind: "duplicate", jobId: bound.job_id } : { kind: "conflict", jobId: bound.job_id };
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
    let at: number;
    for (;;) {
      // Only capacity actually used refuses a send; capacity held by admissions still
      // waiting on their number may be given back, so we wait for those instead.
      at = now();
      const used = this.usedThisMonth(at);
      if (used >= config.quota) return { kind: "quota_exceeded", limit: config.quota };
      const committed = this.windowAt(at);
      if (committed.remaining === 0) {
        return { kind: "rate_limited", scope: "workspace", retryAfterMs: committed.retryAfterMs, rate: toRateInfo(committed, "workspace") };
      }
      if (this.pending.size > 0 && (used + this.pending.size >= config.quota || committed.remaining <= this.pending.size)) {
        await Promise.race(this.pending).catch(() => undefined);
        continue;
      }
      break;
    }
    const handOff = this.handOff(cmd, at);
    this.pending.add(handOff);
    try {
      return await handOff;
    } finally {
      this.pending.delete(handOff);
    }
  }

  private async handOff(cmd: SendCommand, at: number): Promise<SendOutcome> {
    const jobId = await deriveJobId(this.env.JOB_ID_SECRET, cmd.workspaceId, cmd.idempotencyKey, cmd.fingerprint, at);
    const number = channelNumberStub(this.env, cmd.request.channelNumberId);
    const admitted = await number.admit({
      jobId,
      workspaceId: cmd.workspaceId,
      channelNumberId: cmd.request.channelNumberId,
      to: cmd.request.to,
      body: cmd.request.text.body,
      acceptedAt: at,
    });
    if (!admitted.ok) {
      if (admitted.reason === "conflict") throw new Error(`jobId ${jobId} is in its outbox with another payload`);
      return { kind: "rate_limited", scope: "number", retryAfterMs: admitted.window.retryAfterMs, rate: toRateInfo(admitted.window, "number") };
    }
    try {
      this.ctx.storage.transactionSync(() => {
        bindKey(this.sql, cmd.idempotencyKey, cmd.fingerprint, jobId, at);
        insertOutbound(this.sql, { id: jobId, channelNumberId: cmd.request.channelNumberId, to: cmd.request.to, body: cmd.request.text.body, at });
        countOne(this.sql, at, cmd.request.channelNumberId, "accepted");
      });
    } catch (err) {
      // Nothing was recorded and the key stays unbound: give the number its slot back. If
      // this fails too, the entry is an orphan the number never sends (see delivery-policy.ts).
      await number.release(jobId).catch((e: unknown) => log("warn", "releasing an uncommitted hand-off failed", { jobId, error: String(e) }));
      throw err;
    }
    this.recent = [...this.recent, at].sort((a, b) => a - b);
    this.bumpMonth(at);
    // What this send adds to timed work: a count to ship, and a message to watch for stranding.
    await this.scheduler.wake(Math.min(at + STRANDED_AFTER_MS, this.lastCountsFlush + COUNTS_FLUSH_INTERVAL_MS));
    const workspace = this.windowAt(at);
    // Report whichever limit is closer to refusing the next send.
    const rate = admitted.window.remaining <= workspace.remaining ? toRateInfo(admitted.window, "number") : toRateInfo(workspace, "workspace");
    return { kind: "created", jobId, rate };
  }

  /**
   * A message of this workspace, wherever it lives now (this object or its
   * day's history shard), as its stored row (`toMessageView` renders it: rows
   * are what RPC carries without loss).
   */
  async getMessage(id: string): Promise<MessageRow | null> {
    const row = findMessage(this.sql, id);
    if (row) return row;
    const day = historyDayOf(this.sql, id);
    return day === null || !this.workspaceId ? null : historyStub(this.env, this.workspaceId, day).get(id);
  }

  /**
   * One page of the workspace's messages, newest first, strictly older than
   * `after`: the rows still in this object, then the history shards day by day.
   * At most SCAN_BUDGET rows are read per page, so a page may be short; `next`
   * says where to go on (null: nothing older matches).
   */
  async listMessages(filter: MessageFilter, after: Keyset | null, limit: number): Promise<{ rows: MessageRow[]; next: Keyset | null }> {
    const rows: MessageRow[] = [];
    let budget = SCAN_BUDGET;
    const boundary = historyBoundary(this.sql);
    let position = after;
    if (!boundary || !after || after.createdAt > boundary.createdAt || (after.createdAt === boundary.createdAt && after.id > boundary.id)) {
      const page = listPage(this.sql, filter, after, limit, budget);
      rows.push(...page.rows);
      budget -= page.scanned;
      if (page.next) return { rows, next: page.next };
      // The hot rows are exhausted: history is older than all of them.
      position = null;
    }
    if (boundary && this.workspaceId) {
      const newestDay = utcDay(position?.createdAt ?? boundary.createdAt);
      const upper = filter.createdUntil === undefined ? newestDay : Math.min(newestDay, utcDay(filter.createdUntil - 1));
      const lower = filter.createdFrom === undefined ? 0 : utcDay(filter.createdFrom);
      for (const day of historyDays(this.sql, lower, upper)) {
        if (rows.length === limit || budget <= 0) {
          const last = rows[rows.length - 1];
          return { rows, next: last ? { createdAt: last.created_at, id: last.id } : position };
        }
        const page = await historyStub(this.env, this.workspaceId, day).list(filter, position, limit - rows.length, budget);
        rows.push(...page.rows);
        budget -= page.scanned;
        if (page.next) return { rows, next: page.next };
        position = null;
      }
    }
    return { rows, next: null };
  }

  /** One change (the number's claim before it calls the operator). */
  async applyStatus(update: StatusUpdate): Promise<StatusResult> {
    const [result] = await this.applyStatuses([update]);
    return result!;
  }

  /**
   * Moves messages forward (see status-transition.ts): duplicates and late or
   * out-of-order reports are harmless. Each effective change records one
   * `message.status` event in the same transaction.
   */
  async applyStatuses(updates: StatusUpdate[]): Promise<StatusResult[]> {
    let announced = false;
    const results = this.ctx.storage.transactionSync(() =>
      updates.map((u): StatusResult => {
        const row = findMessage(this.sql, u.jobId);
        if (!row && historyDayOf(this.sql, u.jobId) !== null) return { known: true, status: null }; // applied below, in its shard
        if (!row || !isOutbound(row)) return { known: false, status: null };
        const t = applyTransition(lifecycleOf(row), u);
        if (!t.changed) return { known: true, status: row.status };
        const at = now();
        writeLifecycle(this.sql, row.id, t.next, Math.max(u.at, row.updated_at));
        if (t.next.status !== row.status && (t.next.status === "sent" || t.next.status === "failed")) {
          countOne(this.sql, u.at, row.channel_number_id, t.next.status);
        }
        if (t.announce) {
          const fresh = findMessage(this.sql, row.id)!;
          recordEvent(this.sql, this.statusEvent(fresh, row.status), row.id, at, PUBLISH_DELAY_MS, this.confirmWithinMs);
          announced = true;
        }
        return { known: true, status: t.next.status };
      }),
    );
    for (let i = 0; i < updates.length; i++) {
      if (results[i]!.known && results[i]!.status === null) {
        results[i] = await this.applyInHistory(updates[i]!);
        announced = true;
      }
    }
    if (announced) await this.scheduler.wake(now() + PUBLISH_DELAY_MS);
    return results;
  }

  /** A late report about a message already in its day's history shard; the event is recorded here. */
  private async applyInHistory(u: StatusUpdate): Promise<StatusResult> {
    const day = historyDayOf(this.sql, u.jobId);
    if (day === null || !this.workspaceId) return { known: false, status: null };
    const change = await historyStub(this.env, this.workspaceId, day).applyStatus(u);
    if (!change || !isOutbound(change.after)) return { known: false, status: null };
    const { before, after } = change;
    if (change.announce) {
      this.ctx.storage.transactionSync(() => {
        if (after.status !== before.status && (after.status === "sent" || after.status === "failed")) countOne(this.sql, u.at, after.channel_number_id, after.status);
        recordEvent(this.sql, this.statusEvent(after, before.status), after.id, now(), PUBLISH_DELAY_MS, this.confirmWithinMs);
      });
    }
    return { known: true, status: after.status };
  }

  /**
   * Records inbound messages once each (the operator retries its webhooks) and
   * announces each with a `message.received` event. Returns our ids, in order.
   */
  async recordInbound(workspaceId: string, records: InboundRecord[]): Promise<string[]> {
    this.rememberWorkspace(workspaceId);
    const ids = this.ctx.storage.transactionSync(() =>
      records.map((m) => {
        const seen = findInboundByUpstreamId(this.sql, m.upstreamMessageId);
        if (seen) return seen.id;
        const at = now();
        const id = newUuidV7(at);
        insertInbound(this.sql, id, m, at);
        countOne(this.sql, at, m.channelNumberId, "received");
        recordEvent(
          this.sql,
          {
            id: newEventId(),
            type: "message.received",
            workspaceId,
            channelNumberId: m.channelNumberId,
            createdAt: new Date(now()).toISOString(),
            data: {
              messageId: id,
              channelNumberId: m.channelNumberId,
              from: m.from,
              type: m.type,
              text: m.text === null ? null : { body: m.text },
              content: m.content,
              upstreamMessageId: m.upstreamMessageId,
              receivedAt: new Date(m.at).toISOString(),
            },
          },
          id,
          now(),
          PUBLISH_DELAY_MS,
          this.confirmWithinMs,
        );
        return id;
      }),
    );
    await this.scheduler.wake(now() + PUBLISH_DELAY_MS);
    return ids;
  }

  /** A `webhook.test` event for a number's webhook, recorded and published like any other. */
  async recordTestEvent(workspaceId: string, channelNumberId: string): Promise<string> {
    this.rememberWorkspace(workspaceId);
    const event: WebhookEvent = {
      id: newEventId(),
      type: "webhook.test",
      workspaceId,
      channelNumberId,
      createdAt: new Date(now()).toISOString(),
      data: { message: "This is a test event. Your endpoint received and can verify our webhooks." },
    };
    recordEvent(this.sql, event, event.id, now(), 0, this.confirmWithinMs);
    await this.scheduler.wake(now());
    return event.id;
  }

  /** Publishes a stored event again, with the same id (a replay from the delivery log). False when the number has no such event. */
  async replayEvent(channelNumberId: string, eventId: string): Promise<boolean> {
    const event = findEvent(this.sql, eventId);
    if (!event || event.channel_number_id !== channelNumberId || event.set_aside !== null) return false;
    markReplayed(this.sql, eventId, now(), this.confirmWithinMs);
    await this.env.WEBHOOK_QUEUE.send({ event: JSON.parse(event.body) as WebhookEvent }, { contentType: "json" });
    return true;
  }

  /** What the webhook consumer did with events of this workspace. */
  async recordDeliveries(reports: DeliveryReport[]): Promise<void> {
    this.ctx.storage.transactionSync(() => recordDeliveries(this.sql, reports, now(), this.confirmWithinMs));
    await this.scheduler.rearmIfMoved();
  }

  /** A webhook's delivery attempts, newest first. */
  async listDeliveries(webhookId: string, beforeSeq: number | null, limit: number): Promise<AttemptRow[]> {
    return attemptsOfWebhook(this.sql, webhookId, beforeSeq, limit);
  }

  /** Attempts to deliver the events about one message, oldest first (its webhook deliveries, kept 3 days). */
  async deliveriesAbout(messageId: string): Promise<AttemptRow[]> {
    return attemptsAbout(this.sql, messageId);
  }

  /** Why a webhook is failing: its latest attempt that did not deliver. */
  async lastFailedAttempt(webhookId: string): Promise<AttemptRow | null> {
    return lastFailedAttempt(this.sql, webhookId) ?? null;
  }

  /** The events recorded about one message, oldest first, as their JSON bodies (operator view and tests). */
  async eventsFor(subject: string): Promise<string[]> {
    return eventsAbout(this.sql, subject).map((r) => r.body);
  }

  async usage(at: number = now()): Promise<Usage> {
    const period = monthPeriod(at);
    return { period: { start: period.start, end: period.end }, messagesUsed: this.usedThisMonth(at) };
  }

  /** Daily counts of [from, to) (UTC days as epoch ms). */
  async usageHistory(fromMs: number, toMs: number): Promise<DailyUsage[]> {
    return dailyUsage(this.sql, utcDay(fromMs), utcDay(toMs));
  }

  /** Capacity used right now: committed sends in the 60-second window and this month (operator view and tests). */
  async admissionState(at: number = now()): Promise<{ windowUsed: number; monthUsed: number }> {
    return { windowUsed: WORKSPACE_LIMIT.limit - this.windowAt(at).remaining, monthUsed: this.usedThisMonth(at) };
  }

  /** Admin changes (a disconnected number, a new quota) take effect at once. */
  async invalidateConfig(): Promise<void> {
    this.config = null;
  }

  override async alarm(): Promise<void> {
    await this.scheduler.runDue();
  }

  /** The window of committed sends at `at`. */
  private windowAt(at: number): WindowState {
    this.recent = this.recent.filter((t) => t > at - WORKSPACE_LIMIT.windowMs);
    return windowState(WORKSPACE_LIMIT, this.recent, 0, at);
  }

  private usedThisMonth(at: number): number {
    const period = monthPeriod(at);
    if (this.month?.key !== period.key) {
      this.month = { key: period.key, used: acceptedBetween(this.sql, utcDay(Date.parse(period.start)), utcDay(Date.parse(period.end))) };
    }
    return this.month.used;
  }

  private bumpMonth(at: number): void {
    if (this.month?.key === monthPeriod(at).key) this.month.used++;
    else this.month = null;
  }

  private strandedDue(): number | null {
    const oldest = oldestQueuedAt(this.sql);
    if (oldest === null) return null;
    // A long backlog keeps old messages queued: look again at most every half period.
    return Math.max(oldest + STRANDED_AFTER_MS, this.lastStrandedCheck + STRANDED_AFTER_MS / 2);
  }

  /**
   * The safety net behind "never lost": messages recorded as queued that have
   * not started after a while are handed to their number's outbox again, in
   * one call per number; the number ignores the ones it has.
   */
  private async reHandStranded(at: number): Promise<void> {
    this.lastStrandedCheck = at;
    const workspaceId = this.workspaceId;
    if (!workspaceId) return;
    const stale = queuedAcceptedBefore(this.sql, at - STRANDED_AFTER_MS, STRANDED_BATCH);
    const byNumber = Map.groupBy(stale, (row) => row.channel_number_id);
    for (const [numberId, rows] of byNumber) {
      await channelNumberStub(this.env, numberId).readmit(
        rows.map((row) => ({ jobId: row.id, workspaceId, channelNumberId: numberId, to: row.recipient, body: row.body, acceptedAt: row.created_at })),
      );
    }
  }

  /** Ships changed daily counts to D1 (through the usage queue); a count that moved meanwhile ships next round. */
  private async flushCounts(): Promise<void> {
    const workspaceId = this.workspaceId;
    this.lastCountsFlush = now();
    if (!workspaceId) return;
    const rows = dirtyCounts(this.sql, COUNTS_BATCH);
    const byKey = new Map(rows.map((r) => [`${r.day}:${r.channel_number_id}`, r]));
    await publishInOrder(
      this.env.USAGE_QUEUE,
      rows.map((r) => ({ key: `${r.day}:${r.channel_number_id}`, body: usageMessage(workspaceId, r) })),
      {
        sent: (keys) => {
          for (const k of keys) markCountsClean(this.sql, byKey.get(k)!);
        },
        setAside: (k, reason) => log("error", "daily count set aside", { key: k, reason }),
      },
    );
  }

  /**
   * Over its storage budget, the object keeps less: a shorter hot window, delivery logs trimmed sooner.
   * The operator may set a lower budget for one workspace in its `meta` (`hot_bytes_budget`).
   */
  private underPressure(): boolean {
    return this.sql.databaseSize > Number(getMeta(this.sql, "hot_bytes_budget") ?? HOT_BYTES_BUDGET);
  }

  private tierDue(): number | null {
    const oldest = oldestHotAt(this.sql);
    if (oldest === null) return null;
    return oldest + (this.underPressure() ? MIN_HOT_WINDOW_MS : HOT_WINDOW_MS);
  }

  /** Moves one batch of the oldest messages past the hot window to their days' history shards. */
  private async moveToHistory(at: number): Promise<void> {
    const workspaceId = this.workspaceId;
    if (!workspaceId) return;
    const rows = oldestHotRows(this.sql, at - (this.underPressure() ? MIN_HOT_WINDOW_MS : HOT_WINDOW_MS), TIER_BATCH);
    const byDay = new Map<number, MessageRow[]>();
    for (const r of rows) byDay.set(utcDay(r.created_at), [...(byDay.get(utcDay(r.created_at)) ?? []), r]);
    // Oldest day first, so that everything in history stays older than everything here.
    for (const [day, dayRows] of [...byDay].sort(([a], [b]) => a - b)) {
      await historyStub(this.env, workspaceId, day).put(workspaceId, day, dayRows);
      this.ctx.storage.transactionSync(() => forgetMoved(this.sql, dayRows, day));
    }
  }

  private archiveDue(): number | null {
    const oldest = oldestHistoryDay(this.sql);
    if (oldest === null) return null;
    const keepDays = Number(getMeta(this.sql, "history_days") ?? DEFAULT_HISTORY_DAYS);
    // A day leaves once all of it is older than the window.
    return (oldest + 1 + keepDays) * DAY_MS;
  }

  /**
   * Archives the oldest day past the plan's window to R2, a few parts per run,
   * then deletes its shard: the rows are deleted only once the archive is confirmed.
   */
  private async archiveOldestDay(at: number): Promise<void> {
    const workspaceId = this.workspaceId;
    const day = oldestHistoryDay(this.sql);
    if (!workspaceId || day === null) return;
    await this.loadConfig(workspaceId);
    if ((day + 1 + Number(getMeta(this.sql, "history_days") ?? DEFAULT_HISTORY_DAYS)) * DAY_MS > at) return;
    const shard = historyStub(this.env, workspaceId, day);
    const { done, manifest } = await shard.archive(ARCHIVE_PARTS_PER_RUN);
    if (!done) {
      await this.scheduler.wake(now());
      return;
    }
    if (manifest) this.ctx.storage.transactionSync(() => recordArchivedDay(this.sql, day, manifest.messages, manifest.parts, now()));
    await shard.drop();
    this.ctx.storage.transactionSync(() => forgetHistoryDay(this.sql, day));
  }

  /** Days archived to R2, newest first (GET /message-archives). */
  async listArchives(beforeDay: number | null, limit: number): Promise<ArchivedDay[]> {
    return archivedDays(this.sql, beforeDay, limit);
  }

  /** One archived day of this workspace, or null (GET /message-archives/{day}). */
  async archive(day: number): Promise<ArchivedDay | null> {
    return archivedDay(this.sql, day);
  }

  private rememberWorkspace(workspaceId: string): void {
    if (this.workspaceId === workspaceId) return;
    this.workspaceId = workspaceId;
    setMeta(this.sql, "workspace_id", workspaceId);
  }

  private async loadConfig(workspaceId: string): Promise<WorkspaceConfig | null> {
    if (!isFresh(this.config)) {
      this.config = await loadWorkspaceConfig(this.env.DB, workspaceId);
      // The retention step reads it without D1 (its due time is computed on every alarm).
      if (this.config && getMeta(this.sql, "history_days") !== String(this.config.historyDays)) setMeta(this.sql, "history_days", String(this.config.historyDays));
    }
    return this.config;
  }

  /** Storage from before daily counts kept one counter per month: it becomes that month's first day. */
  private migrateMonthlyUsage(): void {
    const exists = this.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'monthly_usage'").toArray().length > 0;
    if (!exists) return;
    this.ctx.storage.transactionSync(() => {
      for (const m of this.sql.exec<{ period: string; used: number }>("SELECT period, used FROM monthly_usage").toArray()) {
        const day = utcDay(Date.parse(`${m.period}-01T00:00:00Z`));
        this.sql.exec(
          "INSERT INTO daily_counts (day, channel_number_id, accepted, dirty) VALUES (?, '', ?, 0) ON CONFLICT DO UPDATE SET accepted = accepted + excluded.accepted",
          day,
          m.used,
        );
      }
      this.sql.exec("DROP TABLE monthly_usage");
    });
  }

  private statusEvent(row: MessageRow, previous: MessageRow["status"]): WebhookEvent {
    const message = toMessageView(row);
    if (message.direction !== "outbound" || previous === "received") throw new Error("status events are about outbound messages");
    const data: MessageStatusData = {
      messageId: message.id,
      channelNumberId: message.channelNumberId,
      to: message.to,
      status: message.status,
      previousStatus: previous,
      upstreamMessageId: message.upstreamMessageId,
      error: message.error,
      deliveredAt: message.deliveredAt,
      readAt: message.readAt,
      updatedAt: message.updatedAt,
    };
    return {
      id: newEventId(),
      type: "message.status",
      workspaceId: this.workspaceId ?? "",
      channelNumberId: message.channelNumberId,
      createdAt: new Date(now()).toISOString(),
      data,
    };
  }
}

/** The body of a USAGE_QUEUE message: absolute totals, so that redelivery and reordering are harmless. */
export interface UsageCountMessage {
  workspaceId: string;
  day: string;
  channelNumberId: string;
  accepted: number;
  sent: number;
  failed: number;
  received: number;
}

const usageMessage = (workspaceId: string, r: CountsRow): UsageCountMessage => ({
  workspaceId,
  day: new Date(r.day * DAY_MS).toISOString().slice(0, 10),
  channelNumberId: r.channel_number_id,
  accepted: r.accepted,
  sent: r.sent,
  failed: r.failed,
  received: r.received,
});
