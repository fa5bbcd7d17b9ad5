import { utcDay } from "../../../domain/job-id";
import type { WebhookEvent } from "../../../domain/events";
import { now } from "../../../lib/clock";
import { getMeta, setMeta } from "../../shared/meta";
import { withSlack, type ScheduledStep } from "../../shared/scheduler";
import { historyStub } from "../../history/history";
import type { WorkspaceContext } from "../context";
import type { EventPublisher } from "../publisher";
import type { Tiers } from "../tiers";
import type { AttemptRow } from "../delivery-log";
import { IDEMPOTENCY_TTL_MS } from "./idempotency-keys-v1";
import {
  attemptsAbout,
  attemptsOfWebhook,
  findEvent,
  lastFailedAttempt,
  markPublishedThrough,
  unpublishedEvents,
  type EventRow,
} from "./event-log-v1";
import { forgetLegacyRows, oldestLegacyAt, oldestLegacyRows } from "./messages-v1";

/** Records of the earlier layout move to history this long after their acceptance, as that release did. */
const LEGACY_HOT_MS = 48 * 60 * 60 * 1000;
const MOVE_BATCH = 500;
const PUBLISH_BATCH = 500;
/** The earlier layout's events and delivery log were kept this long. */
const KEEP_LEGACY_LOG_MS = 3 * 24 * 60 * 60 * 1000;

const hasTable = (sql: SqlStorage, name: string): boolean =>
  sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name).toArray().length > 0;

/**
 * What an object upgraded from the release before day tables (schema step 2) still holds of it,
 * until none is left: its `messages` table (records accepted before the upgrade: read, changed,
 * claimed, and moved to history 48 hours after their acceptance, as before), its events (those not
 * yet published are published once; all are readable for replays) and delivery log (listed after
 * the new one) for their 3 days, and its idempotency keys for their 24 hours. Each table is
 * dropped when it has nothing left to give (`DROP TABLE`: no row written).
 */
export class LegacyTier {
  constructor(
    private readonly w: WorkspaceContext,
    private readonly tiers: Tiers,
    private readonly publisher: EventPublisher,
  ) {}

  hasKeys(): boolean {
    return hasTable(this.w.sql, "idempotency_keys");
  }

  steps(): ScheduledStep[] {
    return [
      { name: "legacy-events", due: (at) => (this.unpublished() ? at : null), run: () => this.publishLeftovers() },
      { name: "legacy-move", due: () => this.moveDue(), run: (at) => this.move(at) },
      { name: "legacy-expiry", due: () => withSlack(this.expiryDue()), run: (at) => this.expire(at) },
    ];
  }

  /** An event of the earlier layout, for a replay. */
  findEvent(eventId: string): EventRow | undefined {
    return hasTable(this.w.sql, "events") ? findEvent(this.w.sql, eventId) : undefined;
  }

  /** The earlier layout's delivery log of a webhook, newest first (after the new log's rows: all are older). */
  attemptsOfWebhook(webhookId: string, beforeSeq: number | null, limit: number): AttemptRow[] {
    return hasTable(this.w.sql, "event_attempts") ? attemptsOfWebhook(this.w.sql, webhookId, beforeSeq, limit) : [];
  }

  lastFailedAttempt(webhookId: string): AttemptRow | undefined {
    return hasTable(this.w.sql, "event_attempts") ? lastFailedAttempt(this.w.sql, webhookId) : undefined;
  }

  attemptsAbout(messageId: string): AttemptRow[] {
    return hasTable(this.w.sql, "event_attempts") ? attemptsAbout(this.w.sql, messageId) : [];
  }

  private unpublished(): boolean {
    return hasTable(this.w.sql, "events") && unpublishedEvents(this.w.sql, 1).length > 0;
  }

  /** Events recorded before the upgrade and not yet published: published once, in their order. */
  private async publishLeftovers(): Promise<void> {
    const rows = unpublishedEvents(this.w.sql, PUBLISH_BATCH);
    if (rows.length === 0) return;
    // A step of the alarm: it publishes itself (the publisher's own flush waits for the next alarm).
    this.publisher.add(rows.map((r) => JSON.parse(r.body) as WebhookEvent));
    await this.publisher.flushNow();
    markPublishedThrough(this.w.sql, rows[rows.length - 1]!.seq);
  }

  private moveDue(): number | null {
    if (!this.tiers.hasLegacy()) return null;
    const oldest = oldestLegacyAt(this.w.sql);
    // Empty: due at once, to drop the table.
    return oldest === null ? now() : withSlack(oldest + LEGACY_HOT_MS);
  }

  /** Moves the oldest records past 48 hours to their days' shards (as the earlier release did), or drops the emptied table. */
  private async move(at: number): Promise<void> {
    const workspaceId = this.w.workspaceId();
    if (!workspaceId || !this.tiers.hasLegacy()) return;
    if (oldestLegacyAt(this.w.sql) === null) {
      this.w.sql.exec("DROP TABLE messages");
      this.tiers.legacyDropped();
      return;
    }
    const rows = oldestLegacyRows(this.w.sql, at - LEGACY_HOT_MS, MOVE_BATCH);
    const byDay = new Map<number, typeof rows>();
    for (const r of rows) byDay.set(utcDay(r.created_at), [...(byDay.get(utcDay(r.created_at)) ?? []), r]);
    // Oldest day first, so that everything in history stays older than everything here.
    for (const [day, dayRows] of [...byDay].sort(([a], [b]) => a - b)) {
      await historyStub(this.w.env, workspaceId, day).putLegacy(dayRows);
      this.w.storage.transactionSync(() => {
        const moved = forgetLegacyRows(this.w.sql, dayRows);
        this.tiers.ledger.update(day, (s) => ({
          ...s,
          legacyHistory: { records: (s.legacyHistory?.records ?? 0) + moved },
        }));
        const last = dayRows[dayRows.length - 1]!;
        setMeta(this.w.sql, "history_boundary", JSON.stringify({ createdAt: last.created_at, id: last.id }));
      });
    }
  }

  private expiryDue(): number | null {
    const upgradedAt = Number(getMeta(this.w.sql, "upgraded_at") ?? 0);
    const times: number[] = [];
    if (this.hasKeys()) times.push(upgradedAt + IDEMPOTENCY_TTL_MS);
    if (hasTable(this.w.sql, "events") || hasTable(this.w.sql, "event_attempts"))
      times.push(upgradedAt + KEEP_LEGACY_LOG_MS);
    return times.length === 0 ? null : Math.min(...times);
  }

  /** Drops the earlier layout's keys after their 24 hours, its events and delivery log after their 3 days. */
  private async expire(at: number): Promise<void> {
    const upgradedAt = Number(getMeta(this.w.sql, "upgraded_at") ?? 0);
    if (this.hasKeys() && upgradedAt + IDEMPOTENCY_TTL_MS <= at) this.w.sql.exec("DROP TABLE idempotency_keys");
    // The earlier layout's events and delivery log take no row since the upgrade (events are derived,
    // the delivery log has day tables): all are older than it, and they go 3 days after it. (Looking
    // for the newest row instead scanned both tables, which have no index by time, in every alarm's
    // due time, for as long as they were kept.)
    if (upgradedAt + KEEP_LEGACY_LOG_MS <= at && !this.unpublished()) {
      this.w.sql.exec("DROP TABLE IF EXISTS events");
      this.w.sql.exec("DROP TABLE IF EXISTS event_attempts");
    }
  }
}
