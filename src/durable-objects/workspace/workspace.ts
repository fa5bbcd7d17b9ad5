import { DurableObject } from "cloudflare:workers";
import { config } from "../../config";
import { now } from "../../lib/clock";
import { utcDay } from "../../domain/job-id";
import type { WebhookEvent, WebhookQueueMessage } from "../../domain/events";
import { Scheduler } from "../shared/scheduler";
import { getMeta, setMeta } from "../shared/meta";
import { ensureSchema } from "../shared/schema-version";
import { WORKSPACE_SCHEMA } from "./schema";
import { Admission } from "./admission";
import { isFresh, loadWorkspaceConfig, type WorkspaceConfig } from "./config";
import type { WorkspaceContext } from "./context";
import type {
  DailyUsage,
  DeliveryReport,
  InboundRecord,
  SendCommand,
  SendOutcome,
  StatusResult,
  StatusUpdate,
  Usage,
} from "./contract";
import { CountsShipper, dailyUsage } from "./daily-counts";
import {
  CONFIRM_WITHIN_MS,
  attemptsAbout,
  attemptsOfWebhook,
  eventLogSteps,
  findEvent,
  lastFailedAttempt,
  markReplayed,
  recordDeliveries,
  type AttemptRow,
} from "./event-log";
import { HOT_BYTES_BUDGET, HistoryTiering, type ArchivedDay } from "./history-tiering";
import type { MessageRow } from "./messages";
import type { Keyset, MessageFilter } from "./message-queries";
import { StatusLedger } from "./status";

export { STRANDED_AFTER_MS } from "./admission";
export { HOT_BYTES_BUDGET, HOT_WINDOW_MS, MIN_HOT_WINDOW_MS } from "./history-tiering";
export type { UsageCountMessage } from "./daily-counts";

/**
 * One per workspace: the authority for admitting a send (idempotency keys, the
 * 1200-per-minute window, the monthly quota) and for the workspace's message
 * records and customer events. Admission is one local transaction with no D1
 * write; timed work runs as isolated scheduled steps.
 *
 * The class is the RPC surface and the alarm; each job is a module that owns
 * its tables and its steps: admission.ts (keys, windows, quota, the stranded
 * check), status.ts (status changes, inbound messages, the events they
 * announce), event-log.ts (publishing, delivery reports, purges),
 * daily-counts.ts (counts and their shipping to D1), history-tiering.ts
 * (reads and lists across tiers, moves to history, archives).
 */
export class WorkspaceDurableObject extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private readonly scheduler: Scheduler;
  private config: WorkspaceConfig | null = null;
  private workspaceId: string | null;
  private readonly admission: Admission;
  private readonly status: StatusLedger;
  private readonly counts: CountsShipper;
  private readonly tiering: HistoryTiering;
  private readonly confirmWithinMs: number;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.confirmWithinMs = config(env).eventConfirmWithinMs ?? CONFIRM_WITHIN_MS;
    // Before anything reads a table: the constructor runs inside the object's input gate.
    ensureSchema(ctx.storage, WORKSPACE_SCHEMA);
    this.workspaceId = getMeta(this.sql, "workspace_id") ?? null;
    const context: WorkspaceContext = {
      storage: ctx.storage,
      sql: this.sql,
      env,
      confirmWithinMs: this.confirmWithinMs,
      workspaceId: () => this.workspaceId,
      rememberWorkspace: (id) => this.rememberWorkspace(id),
      loadConfig: (id) => this.loadConfig(id),
      underPressure: () => this.underPressure(),
      wake: (at) => this.scheduler.wake(at),
      rearmIfMoved: () => this.scheduler.rearmIfMoved(),
    };
    this.counts = new CountsShipper(context);
    this.admission = new Admission(context, () => this.counts.nextFlush());
    this.status = new StatusLedger(context);
    this.tiering = new HistoryTiering(context);
    const events = eventLogSteps(context);
    const admission = this.admission.steps();
    const tiering = this.tiering.steps();
    this.scheduler = new Scheduler(ctx.storage, [
      events.publish,
      events.republish,
      this.counts.steps().countsToD1,
      admission.reHandStranded,
      admission.purgeKeys,
      events.purge,
      tiering.moveToHistory,
      tiering.archiveHistory,
    ]);
    ctx.blockConcurrencyWhile(() => this.scheduler.ensureArmed());
  }

  /** Admits one send: replay and conflict checks, number, quota, both limits, then record it. */
  async send(cmd: SendCommand): Promise<SendOutcome> {
    return this.admission.send(cmd);
  }

  /**
   * A message of this workspace, wherever it lives now (this object or its
   * day's history shard), as its stored row (`toMessageView` renders it: rows
   * are what RPC carries without loss).
   */
  async getMessage(id: string): Promise<MessageRow | null> {
    return this.tiering.getMessage(id);
  }

  /** One page of the workspace's messages, newest first, strictly older than `after` (see HistoryTiering.listMessages). */
  async listMessages(
    filter: MessageFilter,
    after: Keyset | null,
    limit: number,
  ): Promise<{ rows: MessageRow[]; next: Keyset | null }> {
    return this.tiering.listMessages(filter, after, limit);
  }

  /** One change (the number's claim before it calls the operator). */
  async applyStatus(update: StatusUpdate): Promise<StatusResult> {
    const [result] = await this.status.applyStatuses([update]);
    return result!;
  }

  /** Moves messages forward; each effective change records one `message.status` event (status.ts). */
  async applyStatuses(updates: StatusUpdate[]): Promise<StatusResult[]> {
    return this.status.applyStatuses(updates);
  }

  /** Records inbound messages once each and announces each with a `message.received` event. Returns our ids, in order. */
  async recordInbound(workspaceId: string, records: InboundRecord[]): Promise<string[]> {
    return this.status.recordInbound(workspaceId, records);
  }

  /** A `webhook.test` event for a number's webhook, recorded and published like any other. */
  async recordTestEvent(workspaceId: string, channelNumberId: string): Promise<string> {
    return this.status.recordTestEvent(workspaceId, channelNumberId);
  }

  /** Publishes a stored event again, with the same id (a replay from the delivery log). False when the number has no such event. */
  async replayEvent(channelNumberId: string, eventId: string): Promise<boolean> {
    const event = findEvent(this.sql, eventId);
    if (!event || event.channel_number_id !== channelNumberId || event.set_aside !== null) return false;
    markReplayed(this.sql, eventId, now(), this.confirmWithinMs);
    await this.env.WEBHOOK_QUEUE.send(
      { events: [JSON.parse(event.body) as WebhookEvent] } satisfies WebhookQueueMessage,
      { contentType: "json" },
    );
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

  async usage(at: number = now()): Promise<Usage> {
    return this.admission.usage(at);
  }

  /** Daily counts of [from, to) (UTC days as epoch ms). */
  async usageHistory(fromMs: number, toMs: number): Promise<DailyUsage[]> {
    return dailyUsage(this.sql, utcDay(fromMs), utcDay(toMs));
  }

  /** Capacity used right now: committed sends in the 60-second window and this month (operator view and tests). */
  async admissionState(at: number = now()): Promise<{ windowUsed: number; monthUsed: number }> {
    return this.admission.state(at);
  }

  /** Admin changes (a disconnected number, a new quota) take effect at once. */
  async invalidateConfig(): Promise<void> {
    this.config = null;
  }

  /** Days archived to R2, newest first (GET /message-archives). */
  async listArchives(beforeDay: number | null, limit: number): Promise<ArchivedDay[]> {
    return this.tiering.listArchives(beforeDay, limit);
  }

  /** One archived day of this workspace, or null (GET /message-archives/{day}). */
  async archive(day: number): Promise<ArchivedDay | null> {
    return this.tiering.archive(day);
  }

  override async alarm(): Promise<void> {
    await this.scheduler.runDue();
  }

  /**
   * Over its storage budget, the object keeps less: a shorter hot window, delivery logs trimmed sooner.
   * The operator may set a lower budget for one workspace in its `meta` (`hot_bytes_budget`).
   */
  private underPressure(): boolean {
    return this.sql.databaseSize > Number(getMeta(this.sql, "hot_bytes_budget") ?? HOT_BYTES_BUDGET);
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
      if (this.config && getMeta(this.sql, "history_days") !== String(this.config.historyDays))
        setMeta(this.sql, "history_days", String(this.config.historyDays));
    }
    return this.config;
  }
}
