import { restartObject } from "../shared/dev-restart";
import { withEventTap } from "./event-tap";
import { DurableObject } from "cloudflare:workers";
import { config } from "../../config";
import { now } from "../../lib/clock";
import { utcDay } from "../../lib/job-id";
import { parseEventId, type WebhookEvent, type WebhookQueueMessage } from "../../messages/events";
import { OWN_ERRORS } from "../../operator/error-codes";
import { Scheduler, withSlack } from "../shared/scheduler";
import { nextMovedKeyExpiry, purgeMovedKeys } from "./moved-keys";
import { getMeta, setMeta } from "../shared/meta";
import { ensureSchema } from "../shared/schema-version";
import { WORKSPACE_SCHEMA } from "./schema";
import { Admission, IDEMPOTENCY_TTL_MS } from "./admission";
import { isFresh, loadWorkspaceConfig, type WorkspaceConfig } from "./workspace-config";
import type { WorkspaceContext } from "./context";
import type { ClaimResult, DailyUsage, DeliveryReport, Usage, WorkItem } from "./contract";
import type { SendCommand, SendOutcome } from "../../messages/send";
import type { InboundRecord } from "../../messages/inbound";
import type { StatusResult, StatusUpdate, UnmatchedReport } from "../../messages/status";
import { DailyCounts } from "./counts";
import { DayLedger } from "./day-ledger";
import { SlotTables } from "./day-tables";
import { DeliveryLog, KEEP_DELIVERIES_MS, KEEP_DELIVERIES_UNDER_PRESSURE_MS, type AttemptRow } from "./delivery-log";
import { DEFAULT_HISTORY_DAYS, HistoryTiering, type ArchivedDay } from "./history-tiering";
import { MediaCopies, type CopyOutcome, type MediaCopyState, type Reservation } from "./media-copies";
import type { MediaCopy } from "../../messages/inbound-media";
import type { Keyset, MessageFilter } from "../../messages/list";
import { EventPublisher, PUBLISH_DELAY_MS } from "./event-publisher";
import type { MessageRow } from "../../messages/record";
import { StatusLedger, testEvent } from "./status-ledger";
import { noteReadMark } from "./read-marks";
import { Tiers } from "./tiers";
import { expiredUnknowns, nextUnknownExpiry, UNKNOWN_OUTCOME_WINDOW_MS } from "./unknown-outcomes";

export { HOT_BYTES_BUDGET } from "./history-tiering";
export type { UsageCountMessage } from "./counts";

/** Unknown outcomes failed per alarm run. */
const EXPIRY_BATCH = 100;
/** The delivery log's old days are dropped in whatever alarm runs next, at the latest this long after they are due. */
const PURGE_AT_LEAST_EVERY_MS = 30 * 24 * 60 * 60_000;

/**
 * One per workspace: the authority for admitting a send (idempotency keys, the 1200-per-minute
 * window, the monthly quota) and the single record of each message, from which everything else
 * is derived: the number's work list, the customer events, the counts.
 *
 * The class is the RPC surface and the alarm; each job is a module: admission.ts (keys, windows,
 * quota), status.ts (claims, answers, reports, inbound messages and the events they announce),
 * event-publisher.ts (events to the queue), delivery-log.ts, counts.ts, history-tiering.ts (reads and
 * lists across tiers, moves to history, archives), media-copies.ts (inbound media copied to R2).
 */
export class WorkspaceDurableObject extends DurableObject<Env> {
  protected readonly sql: SqlStorage;
  private readonly scheduler: Scheduler;
  private config: WorkspaceConfig | null = null;
  protected readonly admission: Admission;
  protected readonly status: StatusLedger;
  protected readonly publisher: EventPublisher;
  protected readonly deliveries: DeliveryLog;
  protected readonly tiering: HistoryTiering;
  protected readonly counts: DailyCounts;
  protected readonly media: MediaCopies;
  private readonly tierIndex: Tiers;
  private readonly unknownWindowMs: number;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    const cfg = config(env);
    this.unknownWindowMs = cfg.unknownOutcomeWindowMs ?? UNKNOWN_OUTCOME_WINDOW_MS;
    // Before anything reads a table: the constructor runs inside the object's input gate.
    ensureSchema(ctx.storage, WORKSPACE_SCHEMA);
    const tables = new SlotTables(this.sql);
    const ledger = new DayLedger(this.sql);
    const tiers = (this.tierIndex = new Tiers(this.sql, tables, ledger));
    const context: WorkspaceContext = {
      storage: ctx.storage,
      sql: this.sql,
      env,
      workspaceId: () => ctx.id.name ?? getMeta(this.sql, "workspace_id") ?? null,
      loadConfig: (id) => this.loadConfig(id),
      wake: (at) => this.scheduler.wake(at),
    };
    this.publisher = new EventPublisher({
      sql: this.sql,
      storage: ctx.storage,
      queue: withEventTap(env.WEBHOOK_QUEUE, cfg.dev.eventTapUrl),
      delayMs: cfg.eventPublishDelayMs ?? PUBLISH_DELAY_MS,
      read: (id) => this.tiering.getMessage(id),
      workspaceId: context.workspaceId,
      wake: (at) => this.scheduler.wake(at),
    });
    const counts = (this.counts = new DailyCounts(this.sql, tables, ledger, context.workspaceId, env.USAGE_QUEUE));
    this.admission = new Admission(context, tiers, counts);
    const media = (this.media = new MediaCopies(context, tiers));
    this.status = new StatusLedger(
      context,
      tiers,
      counts,
      this.publisher,
      (jobId) => this.admission.isHanding(jobId),
      media,
    );
    this.deliveries = new DeliveryLog(this.sql);
    this.tiering = new HistoryTiering(
      context,
      tiers,
      counts,
      (day) => media.dayArchived(day),
      (ids, at) => this.status.giveUpBeforeArchive(ids, at, OWN_ERRORS.heldTooLong()),
      this.unknownWindowMs,
    );
    const tiering = this.tiering.steps();
    this.scheduler = new Scheduler(ctx.storage, [
      {
        name: "publish-events",
        due: () => this.publisher.due(),
        // The in-memory timer publishes; the alarm is the backstop of an instance that restarted.
        latest: () => this.publisher.latest(),
        run: () => this.publisher.flush(),
      },
      counts.step(),
      {
        name: "unknown-outcomes",
        due: () => nextUnknownExpiry(this.sql, this.unknownWindowMs),
        run: (at) =>
          this.status.expireUnknowns(
            expiredUnknowns(this.sql, at - this.unknownWindowMs, EXPIRY_BATCH),
            at,
            OWN_ERRORS.outcomeUnknown(),
          ),
      },
      tiering.moveToHistory,
      tiering.archiveHistory,
      media.purgeStep(),
      {
        name: "moved-keys-purge",
        due: () => withSlack(nextMovedKeyExpiry(this.sql, IDEMPOTENCY_TTL_MS)),
        run: async (at) => purgeMovedKeys(this.sql, at - IDEMPOTENCY_TTL_MS),
      },
      {
        // Dropping a day's table writes nothing, but an alarm of its own would (a row): it rides on
        // the alarms other steps set, and arms one only PURGE_AT_LEAST_EVERY_MS after it is due.
        name: "delivery-log-purge",
        due: () => this.deliveries.nextExpiry(this.keepDeliveriesMs()),
        latest: () => {
          const expiry = this.deliveries.nextExpiry(this.keepDeliveriesMs());
          return expiry === null ? null : expiry + PURGE_AT_LEAST_EVERY_MS;
        },
        run: async (at) => this.deliveries.purge(at, this.keepDeliveriesMs()),
      },
    ]);
    ctx.blockConcurrencyWhile(() => this.scheduler.ensureArmed());
  }

  /** Local soak runs only: the object ends itself (shared/dev-restart.ts); refused unless DEV_OBJECT_RESTARTS is "true". */
  async restartForSoak(): Promise<void> {
    restartObject(this.ctx, this.env);
  }

  /** Admits one send: replay and conflict checks, number, quota, both limits, then record it. */
  async send(cmd: SendCommand): Promise<SendOutcome> {
    this.publisher.tick();
    return this.admission.send(cmd);
  }

  /** A message of this workspace, wherever it lives now, as its stored row (`toMessageView` renders it). */
  async getMessage(id: string): Promise<MessageRow | null> {
    return this.tiering.getMessage(id);
  }

  /** The operator took a read mark of an inbound message: noted on its record (read-marks.ts), which is returned as it is now. */
  async noteReadMark(id: string, at: number, typing: boolean): Promise<MessageRow | null> {
    return noteReadMark(this.tierIndex, this.sql, id, at, typing);
  }

  /** One page of the workspace's messages, newest first, strictly older than `after` (see HistoryTiering.listMessages). */
  async listMessages(
    filter: MessageFilter,
    after: Keyset | null,
    limit: number,
  ): Promise<{ rows: MessageRow[]; next: Keyset | null }> {
    return this.tiering.listMessages(filter, after, limit);
  }

  /** The number asks to call the operator for a message (see StatusLedger.claim). */
  async claim(jobId: string, attempt: number): Promise<ClaimResult> {
    this.publisher.tick();
    return this.status.claim(jobId, attempt);
  }

  /** The number's answers about its claims, and the messages it gives up on. Committed on return, and with them the obligation to announce them. */
  async answer(updates: StatusUpdate[]): Promise<{ results: StatusResult[] }> {
    this.publisher.tick();
    return this.status.answer(updates);
  }

  /** A number's work list (records with work left), oldest first, after `afterId` (its queue after a restart). */
  async workOf(channelNumberId: string, afterId: string, limit: number): Promise<WorkItem[]> {
    return this.status.workOf(channelNumberId, afterId, limit);
  }

  /** The operator's reports about messages; returns once committed (their events owed). */
  async applyStatuses(updates: StatusUpdate[]): Promise<StatusResult[]> {
    this.publisher.tick();
    return this.status.report(updates);
  }

  /** The messages operator reports without our jobId are about (by the operator's id of the message; a failure also among unknown outcomes), or null each. */
  async matchReports(channelNumberId: string, reports: UnmatchedReport[]): Promise<(string | null)[]> {
    return this.status.matchReports(channelNumberId, reports);
  }

  /** Records inbound messages once each and announces each with a `message.received` event (owed in the insert's transaction, published at once). Returns our ids, in order. */
  async recordInbound(workspaceId: string, records: InboundRecord[]): Promise<string[]> {
    this.publisher.tick();
    return this.status.recordInbound(workspaceId, records);
  }

  /** Where the copy of an inbound message's media stands (the copy job asks first); null: not a record here with media. */
  async mediaCopyState(messageId: string): Promise<MediaCopyState | null> {
    return this.media.state(messageId);
  }

  /** The copy job knows the item's size: counted against the plan's caps, or recorded over them (see MediaCopies.reserve). */
  async reserveMediaCopy(messageId: string, size: number, contentType: string): Promise<Reservation> {
    return this.media.reserve(messageId, size, contentType);
  }

  /** The copy job's end: stored in R2, or given up. */
  async settleMediaCopy(messageId: string, outcome: CopyOutcome): Promise<MediaCopy | null> {
    return this.media.settle(messageId, outcome);
  }

  /** A `webhook.test` event for a number's webhook, published at once. */
  async recordTestEvent(workspaceId: string, channelNumberId: string): Promise<string> {
    return this.status.recordTestEvent(workspaceId, channelNumberId);
  }

  /**
   * Publishes an event again, with the same id (a replay from the delivery log). The id names its
   * message and change (events.ts): the event is rebuilt from the record. False when the number
   * has no such event.
   */
  async replayEvent(channelNumberId: string, eventId: string): Promise<boolean> {
    let event: WebhookEvent | null = null;
    const named = parseEventId(eventId);
    if (named && "test" in named) {
      // A test event is rebuilt from its id, which dates it: only one of the delivery log's days.
      const age = now() - named.at;
      if (age >= 0 && age <= KEEP_DELIVERIES_MS) event = testEvent(this.ctx.id.name ?? "", channelNumberId, eventId);
    } else if (named) {
      const row = await this.tiering.getMessage(named.messageId);
      if (row && row.channel_number_id === channelNumberId) event = this.status.eventFor(row, named.kind);
    }
    if (!event) return false;
    await this.env.WEBHOOK_QUEUE.send({ events: [event] } satisfies WebhookQueueMessage, { contentType: "json" });
    return true;
  }

  /** What the webhook consumer did with events of this workspace (the delivery log). */
  async recordDeliveries(reports: DeliveryReport[]): Promise<void> {
    this.publisher.tick();
    this.deliveries.record(reports, now());
  }

  /** A webhook's delivery attempts, newest first (its number's log). */
  async listDeliveries(
    channelNumberId: string,
    webhookId: string,
    beforeSeq: number | null,
    limit: number,
  ): Promise<AttemptRow[]> {
    return this.deliveries.ofWebhook(channelNumberId, webhookId, beforeSeq, limit);
  }

  /** Attempts to deliver the events about one message, oldest first (kept 3 days). */
  async deliveriesAbout(messageId: string): Promise<AttemptRow[]> {
    const row = await this.tiering.getMessage(messageId);
    return row ? this.deliveries.aboutMessage(row) : [];
  }

  /** Why a webhook is failing: its latest attempt that did not deliver. */
  async lastFailedAttempt(channelNumberId: string, webhookId: string): Promise<AttemptRow | null> {
    return this.deliveries.lastFailure(channelNumberId, webhookId) ?? null;
  }

  async usage(at: number = now()): Promise<Usage> {
    return this.admission.usage(at);
  }

  /** Daily counts of [from, to) (UTC days as epoch ms). */
  async usageHistory(fromMs: number, toMs: number): Promise<DailyUsage[]> {
    return this.counts.usage(utcDay(fromMs), utcDay(toMs));
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

  /** Where records live (for a subclass that inspects them). */
  protected tiers(): Tiers {
    return this.tierIndex;
  }

  override async alarm(): Promise<void> {
    this.publisher.tick();
    await this.scheduler.runDue();
  }

  /** The delivery log's window: shorter while the object is over its size guard. */
  private keepDeliveriesMs(): number {
    return this.tiering.underPressure() ? KEEP_DELIVERIES_UNDER_PRESSURE_MS : KEEP_DELIVERIES_MS;
  }

  private async loadConfig(workspaceId: string): Promise<WorkspaceConfig | null> {
    if (!isFresh(this.config)) {
      this.config = await loadWorkspaceConfig(this.env.DB, workspaceId);
      // The archive step reads it without D1 (its due time is computed on every alarm); the default is no row.
      if (this.config) {
        const days = this.config.historyDays === DEFAULT_HISTORY_DAYS ? undefined : String(this.config.historyDays);
        if (getMeta(this.sql, "history_days") !== days) {
          if (days === undefined) this.sql.exec("DELETE FROM meta WHERE k = 'history_days'");
          else setMeta(this.sql, "history_days", days);
        }
      }
    }
    return this.config;
  }
}
