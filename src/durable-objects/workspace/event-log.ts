import type { WebhookEvent } from "../../domain/events";
import { now } from "../../lib/clock";
import { log } from "../../lib/log";
import { getMeta, setMeta } from "../shared/meta";
import { ensureColumn } from "../shared/sql-schema";
import { publishEventPacks } from "../../lib/event-publisher";
import type { ScheduledStep } from "../shared/scheduler";
import { withSlack } from "../shared/scheduler";
import type { DeliveryReport } from "./contract";
import type { WorkspaceContext } from "./context";

/**
 * The workspace's outbox of customer events, and what became of each.
 *
 * An event is written in the same transaction as the change it describes, then
 * published to the webhook queue by the object's alarm, in insertion order
 * (`rowid`, which only grows: see `recordEvent`); a cursor in `meta` records how
 * far publishing got, so publishing costs one write per batch, not per event. The webhook consumer reports every
 * attempt back here. An event whose report does not arrive when expected (the
 * queue lost it) is published again with the same id: delivery is at least
 * once, and customers deduplicate on `webhook-id`.
 *
 * Rows written are billed per row and per index entry: an event writes its row
 * and its id's key, a delivered report its row. Events awaiting their first
 * report are found by a walk in sequence order (`reportWalk`), only events whose
 * report was asked for again have an indexed `check_at`; settled events are
 * purged by a walk too (`purgeOldEvents`). docs/architecture.md, "Events".
 *
 * Bound: ~800 B per event (body JSON, indexes) and ~130 B per attempt row
 * (with its indexes); 2–4 events per message. A settled event (delivered, or
 * with no webhook to deliver to) is kept 24 hours for replays, any other 3
 * days; attempts (the delivery log) 3 days. Under storage pressure (see
 * workspace.ts, HOT_BYTES_BUDGET) settled events and attempts go after 1 hour
 * and any event after 6 hours, even one a failing webhook is still retrying
 * (the storage budget in docs/architecture.md has the arithmetic). Purged in
 * bounded batches.
 */
export const KEEP_EVENTS_MS = 3 * 24 * 60 * 60 * 1000;
export const KEEP_SETTLED_EVENTS_MS = 24 * 60 * 60 * 1000;
export const KEEP_SETTLED_UNDER_PRESSURE_MS = 60 * 60 * 1000;
export const KEEP_ATTEMPTS_UNDER_PRESSURE_MS = 60 * 60 * 1000;
/** Under pressure even an event still being retried goes after this: customers catch up with GET /messages. */
export const KEEP_EVENTS_UNDER_PRESSURE_MS = 6 * 60 * 60 * 1000;
/** An event not reported within this after it was due is published again (EVENT_CONFIRM_WITHIN_MS overrides it for local soak runs). */
export const CONFIRM_WITHIN_MS = 10 * 60 * 1000;
const PUBLISH_BATCH = 500;
const RECONCILE_BATCH = 100;
const PURGE_BATCH = 500;
/**
 * Webhooks whose delivery logs one purge looks at (keyed layout). A number has at most one webhook,
 * so this is numbers with a webhook (and webhooks replaced within the log's window).
 */
const MAX_LOGGED_WEBHOOKS = 1_000;
/** The `meta` key of the publishing cursor (the rowid of the last published event). */
export const PUBLISH_CURSOR = "events_published_through";
/**
 * The `meta` key of the report walk's start: no event below this sequence is awaiting its
 * first report (see `nextCheckDue`). Absent means 1 (a new object: the walk starts at its first event).
 */
export const FIRST_REPORT_WALK = "events_first_report_from";
/** Events the report walk and the settled purge look at, from their start (rows read per due check). */
export const REPORT_WALK = 100;
export const SETTLED_WALK = 200;

export function createEventLogTable(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS events (
      id TEXT PRIMARY KEY, type TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL,
      created_at INTEGER NOT NULL, published_at INTEGER);
  `);
  if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_attempts'").toArray().length === 0) {
    // A new object: the delivery log is kept in its by-webhook order (WITHOUT ROWID), so an attempt
    // writes its row and its subject entry only. Existing objects keep the rowid layout and its
    // by-webhook index (the same columns: every query works on both); rebuilding one is not done.
    sql.exec(`
      CREATE TABLE event_attempts (
        seq INTEGER NOT NULL, event_id TEXT NOT NULL, event_type TEXT NOT NULL, subject TEXT NOT NULL,
        webhook_id TEXT NOT NULL, attempt INTEGER NOT NULL,
        attempted_at INTEGER NOT NULL, outcome TEXT NOT NULL, status_code INTEGER, latency_ms INTEGER, error TEXT,
        next_retry_at INTEGER,
        PRIMARY KEY (webhook_id, seq)) WITHOUT ROWID;
    `);
  }
  if (!attemptsKeyedByWebhook(sql))
    sql.exec("CREATE INDEX IF NOT EXISTS event_attempts_by_webhook ON event_attempts (webhook_id, seq)");
  // The event's type and subject are copied into the delivery log: it outlives settled events.
  sql.exec("CREATE INDEX IF NOT EXISTS event_attempts_by_subject ON event_attempts (subject, seq)");
  ensureColumn(sql, "events", "channel_number_id", "TEXT");
  ensureColumn(sql, "events", "delivery", "TEXT");
  ensureColumn(sql, "events", "attempts", "INTEGER NOT NULL DEFAULT 0");
  ensureColumn(sql, "events", "check_at", "INTEGER");
  ensureColumn(sql, "events", "delivered_at", "INTEGER");
  ensureColumn(sql, "events", "set_aside", "TEXT");
  // When the first report is expected (publishing delay + CONFIRM_WITHIN_MS): not indexed, the
  // report walk reads it. check_at (indexed) is set only once a report asked for a retry, or on a
  // republish or a replay.
  ensureColumn(sql, "events", "first_report_by", "INTEGER");
  if (getMeta(sql, PUBLISH_CURSOR) === undefined) {
    // Storage from before the cursor: everything before the first unpublished event is published.
    const first = sql
      .exec<{ r: number | null }>("SELECT MIN(rowid) AS r FROM events WHERE published_at IS NULL")
      .one().r;
    const last = sql.exec<{ r: number | null }>("SELECT MAX(rowid) AS r FROM events").one().r ?? 0;
    setMeta(sql, PUBLISH_CURSOR, String(first === null ? last : first - 1));
  }
  if (getMeta(sql, FIRST_REPORT_WALK) === undefined) {
    // Events recorded before the walk carry an indexed check_at from their insert: none awaits the walk.
    const last = sql.exec<{ r: number | null }>("SELECT MAX(rowid) AS r FROM events").one().r;
    if (last !== null) setMeta(sql, FIRST_REPORT_WALK, String(Math.max(last, cursor(sql)) + 1));
  }
  sql.exec(`
    DROP INDEX IF EXISTS events_unpublished;
    -- No lookup of events by subject: the delivery log (event_attempts) answers per message.
    DROP INDEX IF EXISTS events_by_subject;
    -- Settled events are purged by a walk in sequence order (purgeOldEvents), not by this index.
    DROP INDEX IF EXISTS events_settled;
    CREATE INDEX IF NOT EXISTS events_to_check ON events (check_at) WHERE check_at IS NOT NULL;
  `);
}

const cursor = (sql: SqlStorage): number => Number(getMeta(sql, PUBLISH_CURSOR) ?? 0);

const keyedLayout = new WeakMap<SqlStorage, boolean>();
/** Whether the delivery log has the WITHOUT ROWID layout keyed (webhook_id, seq) (objects created since), or the rowid one. */
export function attemptsKeyedByWebhook(sql: SqlStorage): boolean {
  let keyed = keyedLayout.get(sql);
  if (keyed === undefined) {
    const ddl =
      sql
        .exec<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'event_attempts'")
        .toArray()[0]?.sql ?? "";
    keyed = /WITHOUT\s+ROWID/i.test(ddl);
    keyedLayout.set(sql, keyed);
  }
  return keyed;
}
const walkStart = (sql: SqlStorage): number => Number(getMeta(sql, FIRST_REPORT_WALK) ?? 1);

/**
 * Call inside the transaction that makes the change. `subject` is the message the event is about.
 * Returns false when an event with this id is already recorded (a derived id recorded again: a retry).
 *
 * The event's sequence number (its rowid) is one past both the newest event and the publishing
 * cursor. SQLite alone would hand out MAX(rowid) + 1, which falls at or below the cursor once
 * purges removed the newest events: such an event would wait for `republishOverdue` and reach the
 * customer after events recorded later. AUTOINCREMENT would prevent it too, but at one more row
 * written per event (its `sqlite_sequence` update); this costs two rows read.
 */
export function recordEvent(
  sql: SqlStorage,
  event: WebhookEvent,
  subject: string,
  at: number,
  publishDelayMs: number,
  confirmWithinMs = CONFIRM_WITHIN_MS,
): boolean {
  return (
    sql.exec(
      `INSERT OR IGNORE INTO events (rowid, id, type, subject, body, created_at, channel_number_id, delivery, first_report_by)
       VALUES (MAX(IFNULL((SELECT MAX(rowid) FROM events), 0), IFNULL((SELECT CAST(v AS INTEGER) FROM meta WHERE k = ?), 0)) + 1,
               ?, ?, ?, ?, ?, ?, 'pending', ?)`,
      PUBLISH_CURSOR,
      event.id,
      event.type,
      subject,
      JSON.stringify(event),
      at,
      event.channelNumberId,
      at + publishDelayMs + confirmWithinMs,
    ).rowsWritten > 0
  );
}

export const hasUnpublishedEvents = (sql: SqlStorage): boolean =>
  sql.exec("SELECT 1 FROM events WHERE rowid > ? AND set_aside IS NULL LIMIT 1", cursor(sql)).toArray().length > 0;

/** Publishes the unpublished events, oldest first, a bounded number per call. Throws if the queue is failing. */
export async function publishEvents(sql: SqlStorage, queue: Queue): Promise<void> {
  const rows = sql
    .exec<{ seq: number; body: string }>(
      "SELECT rowid AS seq, body FROM events WHERE rowid > ? AND set_aside IS NULL ORDER BY rowid LIMIT ?",
      cursor(sql),
      PUBLISH_BATCH,
    )
    .toArray();
  if (rows.length === 0) return;
  const items = rows.map((r) => ({ key: r.seq, event: JSON.parse(r.body) as WebhookEvent }));
  await publishEventPacks(queue, items, {
    sent: (seqs) => setMeta(sql, PUBLISH_CURSOR, String(Math.max(cursor(sql), ...seqs))),
    setAside: (seq, reason) => {
      sql.exec("UPDATE events SET set_aside = ?, delivery = 'set_aside', check_at = NULL WHERE rowid = ?", reason, seq);
      log("error", "event set aside: it can never be published", { eventSeq: seq, reason });
    },
  });
}

interface WalkRow {
  seq: number;
  awaiting: number;
  report_by: number;
  created_at: number;
  [key: string]: SqlStorageValue;
}

/**
 * The report walk: the published events from the walk's start, oldest first, at most REPORT_WALK.
 * An event awaits its first report while it is `pending` with no check_at (set only by a retry,
 * a republish, a replay); its report is expected by `first_report_by`. Every event below the
 * walk's start has had a report or a check_at, so this and the `events_to_check` index together
 * see every published event whose report may be overdue.
 */
const reportWalk = (sql: SqlStorage): WalkRow[] =>
  sql
    .exec<WalkRow>(
      `SELECT rowid AS seq, (delivery = 'pending' AND check_at IS NULL) AS awaiting, IFNULL(first_report_by, created_at) AS report_by, created_at
       FROM events WHERE rowid >= ? AND rowid <= ? ORDER BY rowid LIMIT ?`,
      walkStart(sql),
      cursor(sql),
      REPORT_WALK,
    )
    .toArray();

/**
 * When the walk must run: the earliest first report expected in it. A full walk with none awaiting
 * runs at once, to move its start past it (once per REPORT_WALK events). Events beyond a full walk
 * are unseen until then; they were recorded after the walk's events, so their reports are expected
 * no earlier than those in it (within the publishing delay).
 */
function walkDue(rows: WalkRow[], at: number): number | null {
  const times = rows.filter((r) => r.awaiting).map((r) => r.report_by);
  if (times.length > 0) return Math.min(...times);
  return rows.length === REPORT_WALK ? Math.min(at, rows[rows.length - 1]!.created_at) : null;
}

/** When the next published event is overdue for a report, or null. */
export function nextCheckDue(sql: SqlStorage, at = now()): number | null {
  const indexed = sql
    .exec<{ at: number | null }>(
      "SELECT MIN(check_at) AS at FROM events WHERE check_at IS NOT NULL AND rowid <= ?",
      cursor(sql),
    )
    .one().at;
  const walked = walkDue(reportWalk(sql), at);
  return indexed === null ? walked : walked === null ? indexed : Math.min(indexed, walked);
}

/** Moves the walk's start to its first event still awaiting a first report (past the whole walk if none). */
function advanceWalk(sql: SqlStorage): void {
  const rows = reportWalk(sql);
  if (rows.length === 0) return;
  const firstAwaiting = rows.find((r) => r.awaiting);
  const next = firstAwaiting ? firstAwaiting.seq : rows[rows.length - 1]!.seq + 1;
  if (next > walkStart(sql)) setMeta(sql, FIRST_REPORT_WALK, String(next));
}

/** Publishes again the events whose delivery report is overdue (the queue lost them). */
export async function republishOverdue(
  sql: SqlStorage,
  queue: Queue,
  at: number,
  confirmWithinMs = CONFIRM_WITHIN_MS,
): Promise<void> {
  const indexed = sql
    .exec<{ seq: number; body: string }>(
      "SELECT rowid AS seq, body FROM events WHERE check_at IS NOT NULL AND check_at <= ? AND rowid <= ? ORDER BY check_at LIMIT ?",
      at,
      cursor(sql),
      RECONCILE_BATCH,
    )
    .toArray();
  const walked = reportWalk(sql).filter((r) => r.awaiting && r.report_by <= at);
  const rows = [
    ...indexed,
    ...walked.map((r) => ({
      seq: r.seq,
      body: sql.exec<{ body: string }>("SELECT body FROM events WHERE rowid = ?", r.seq).one().body,
    })),
  ].sort((a, b) => a.seq - b.seq);
  if (rows.length === 0) {
    advanceWalk(sql);
    return;
  }
  log("warn", "events without a delivery report are published again", { events: rows.length });
  await publishEventPacks(
    queue,
    rows.map((r) => ({ key: r.seq, event: JSON.parse(r.body) as WebhookEvent })),
    {
      sent: (seqs) => {
        for (const seq of seqs) sql.exec("UPDATE events SET check_at = ? WHERE rowid = ?", at + confirmWithinMs, seq);
      },
      setAside: (seq, reason) =>
        sql.exec(
          "UPDATE events SET set_aside = ?, delivery = 'set_aside', check_at = NULL WHERE rowid = ?",
          reason,
          seq,
        ),
    },
  );
  // The republished events now have a check_at: the walk moves past them.
  advanceWalk(sql);
}

/** Records what the webhook consumer did with events; a delivered event stays delivered. */
export function recordDeliveries(
  sql: SqlStorage,
  reports: DeliveryReport[],
  at: number,
  confirmWithinMs = CONFIRM_WITHIN_MS,
): void {
  const keyed = attemptsKeyedByWebhook(sql);
  for (const r of reports) {
    const event = sql
      .exec<{
        delivery: string | null;
        attempts: number;
        type: string;
        subject: string;
        check_at: number | null;
        delivered_at: number | null;
      }>("SELECT delivery, attempts, type, subject, check_at, delivered_at FROM events WHERE id = ?", r.eventId)
      .toArray()[0];
    if (!event) continue;
    // A dead letter is numbered like the last attempt it follows (the dead-letter queue counts afresh).
    const attempt = r.outcome === "dead" ? Math.max(event.attempts, r.attempt) : r.attempt;
    if (r.webhookId !== null && r.outcome !== "no_webhook" && r.outcome !== "deferred") {
      // The rowid layout numbers attempts itself; the keyed one gets the webhook's next number, at
      // least the attempt's time in ms (so that one message's attempts to a replaced webhook and its
      // successor still list in time order).
      sql.exec(
        `INSERT INTO event_attempts (seq, event_id, event_type, subject, webhook_id, attempt, attempted_at, outcome, status_code, latency_ms, error, next_retry_at)
         VALUES (${keyed ? "MAX(IFNULL((SELECT MAX(seq) FROM event_attempts WHERE webhook_id = ?), 0) + 1, ?)" : "NULL"}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ...(keyed ? [r.webhookId, r.attemptedAt] : []),
        r.eventId,
        event.type,
        event.subject,
        r.webhookId,
        attempt,
        r.attemptedAt,
        r.outcome,
        r.statusCode,
        r.latencyMs,
        r.error,
        r.nextRetryAt,
      );
    }
    if (event.delivery === "delivered") continue;
    switch (r.outcome) {
      case "delivered":
        // check_at is named only when set: naming it writes its index entry (a billed row) even when NULL stays NULL.
        if (event.check_at === null) {
          sql.exec(
            "UPDATE events SET delivery = 'delivered', delivered_at = ?, attempts = MAX(attempts, ?) WHERE id = ?",
            r.attemptedAt,
            r.attempt,
            r.eventId,
          );
        } else {
          sql.exec(
            "UPDATE events SET delivery = 'delivered', delivered_at = ?, attempts = MAX(attempts, ?), check_at = NULL WHERE id = ?",
            r.attemptedAt,
            r.attempt,
            r.eventId,
          );
        }
        break;
      case "failed":
      case "refused":
        sql.exec(
          "UPDATE events SET delivery = 'retrying', attempts = MAX(attempts, ?), check_at = ? WHERE id = ?",
          r.attempt,
          (r.nextRetryAt ?? at) + confirmWithinMs,
          r.eventId,
        );
        break;
      case "deferred":
        // Not attempted (its endpoint failed just before): no attempt to log, only when to expect the next report.
        sql.exec(
          "UPDATE events SET delivery = 'retrying', check_at = ? WHERE id = ?",
          (r.nextRetryAt ?? at) + confirmWithinMs,
          r.eventId,
        );
        break;
      case "no_webhook":
        // Settled like a delivered event (delivered_at is when it settled): replayable for a day.
        if (event.check_at === null)
          sql.exec(
            "UPDATE events SET delivery = 'no_webhook', delivered_at = ? WHERE id = ?",
            r.attemptedAt,
            r.eventId,
          );
        else
          sql.exec(
            "UPDATE events SET delivery = 'no_webhook', delivered_at = ?, check_at = NULL WHERE id = ?",
            r.attemptedAt,
            r.eventId,
          );
        break;
      case "dead":
        if (event.check_at === null) sql.exec("UPDATE events SET delivery = 'dead' WHERE id = ?", r.eventId);
        else sql.exec("UPDATE events SET delivery = 'dead', check_at = NULL WHERE id = ?", r.eventId);
        break;
    }
  }
}

export interface EventRow {
  seq: number;
  id: string;
  type: string;
  subject: string;
  body: string;
  created_at: number;
  channel_number_id: string | null;
  delivery: string | null;
  attempts: number;
  delivered_at: number | null;
  [key: string]: SqlStorageValue;
}

export const findEvent = (sql: SqlStorage, id: string): EventRow | undefined =>
  sql.exec<EventRow>("SELECT rowid AS seq, * FROM events WHERE id = ?", id).toArray()[0];

/** Marks an event for another delivery run (a replay); the caller publishes it. */
export function markReplayed(sql: SqlStorage, id: string, at: number, confirmWithinMs = CONFIRM_WITHIN_MS): void {
  sql.exec(
    "UPDATE events SET delivery = 'pending', check_at = ? WHERE id = ? AND delivery IS NOT 'delivered'",
    at + confirmWithinMs,
    id,
  );
}

export interface AttemptRow {
  seq: number;
  event_id: string;
  event_type: string | null;
  subject: string;
  webhook_id: string;
  attempt: number;
  attempted_at: number;
  outcome: string;
  status_code: number | null;
  latency_ms: number | null;
  error: string | null;
  next_retry_at: number | null;
  [key: string]: SqlStorageValue;
}

/** Attempts to deliver to one webhook, newest first, after the keyset `beforeSeq`. */
export const attemptsOfWebhook = (
  sql: SqlStorage,
  webhookId: string,
  beforeSeq: number | null,
  limit: number,
): AttemptRow[] =>
  sql
    .exec<AttemptRow>(
      "SELECT * FROM event_attempts WHERE webhook_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
      webhookId,
      beforeSeq ?? Number.MAX_SAFE_INTEGER,
      limit,
    )
    .toArray();

/** The newest attempt among the latest `window` of a webhook that did not deliver (why it is failing or was disabled). */
export const lastFailedAttempt = (sql: SqlStorage, webhookId: string, window = 500): AttemptRow | undefined =>
  sql
    .exec<AttemptRow>(
      `SELECT * FROM (SELECT * FROM event_attempts WHERE webhook_id = ? ORDER BY seq DESC LIMIT ?)
       WHERE outcome <> 'delivered' LIMIT 1`,
      webhookId,
      window,
    )
    .toArray()[0];

/** Attempts to deliver the events about one subject (a message), oldest first. */
export const attemptsAbout = (sql: SqlStorage, subject: string, limit = 100): AttemptRow[] =>
  sql.exec<AttemptRow>("SELECT * FROM event_attempts WHERE subject = ? ORDER BY seq LIMIT ?", subject, limit).toArray();

/** When the next event or attempt leaves its window, or null. */
export function nextEventExpiry(sql: SqlStorage, pressure = false): number | null {
  // Only published events are purged: the oldest of those decides.
  const oldestEvent = sql
    .exec<{ created_at: number }>("SELECT created_at FROM events WHERE rowid <= ? ORDER BY rowid LIMIT 1", cursor(sql))
    .toArray()[0];
  // Settled events are looked for among the oldest SETTLED_WALK only (no index on delivered_at: see purgeOldEvents).
  const oldestSettled = sql
    .exec<{ at: number | null }>(
      "SELECT MIN(delivered_at) AS at FROM (SELECT delivered_at FROM events ORDER BY rowid LIMIT ?)",
      SETTLED_WALK,
    )
    .one().at;
  const oldestAttempt = oldestAttempts(sql, 1)[0];
  const times = [
    oldestEvent ? oldestEvent.created_at + (pressure ? KEEP_EVENTS_UNDER_PRESSURE_MS : KEEP_EVENTS_MS) : null,
    oldestSettled !== null
      ? oldestSettled + (pressure ? KEEP_SETTLED_UNDER_PRESSURE_MS : KEEP_SETTLED_EVENTS_MS)
      : null,
    oldestAttempt ? oldestAttempt.attempted_at + (pressure ? KEEP_ATTEMPTS_UNDER_PRESSURE_MS : KEEP_EVENTS_MS) : null,
  ].filter((t): t is number => t !== null);
  return times.length === 0 ? null : Math.min(...times);
}

/** Deletes one batch of expired events and attempts; each query visits at most one batch of rows. */
export function purgeOldEvents(sql: SqlStorage, at: number, pressure = false): void {
  // The oldest rows by insertion order are the oldest by time; looking at the first batch only keeps this bounded.
  sql.exec(
    `DELETE FROM events WHERE rowid IN (
       SELECT rowid FROM (SELECT rowid, created_at FROM events ORDER BY rowid LIMIT ?) WHERE created_at < ? AND rowid <= ?)`,
    PURGE_BATCH,
    at - (pressure ? KEEP_EVENTS_UNDER_PRESSURE_MS : KEEP_EVENTS_MS),
    cursor(sql),
  );
  // Settled events: among the oldest SETTLED_WALK by sequence (an index on delivered_at would cost a
  // row with every delivered report). A settled event behind SETTLED_WALK older events still kept
  // (retried, or settled later) waits for them: at most until the age window above takes it.
  sql.exec(
    `DELETE FROM events WHERE rowid IN (
       SELECT rowid FROM (SELECT rowid, delivered_at FROM events ORDER BY rowid LIMIT ?) WHERE delivered_at IS NOT NULL AND delivered_at < ?)`,
    SETTLED_WALK,
    at - (pressure ? KEEP_SETTLED_UNDER_PRESSURE_MS : KEEP_SETTLED_EVENTS_MS),
  );
  const before = at - (pressure ? KEEP_ATTEMPTS_UNDER_PRESSURE_MS : KEEP_EVENTS_MS);
  if (!attemptsKeyedByWebhook(sql)) {
    sql.exec(
      `DELETE FROM event_attempts WHERE seq IN (
         SELECT seq FROM (SELECT seq, attempted_at FROM event_attempts ORDER BY seq LIMIT ?) WHERE attempted_at < ?)`,
      PURGE_BATCH,
      before,
    );
    return;
  }
  // Keyed by webhook: each webhook's log is purged in its own order, PURGE_BATCH in all.
  let budget = PURGE_BATCH;
  for (const webhookId of attemptWebhooks(sql)) {
    if (budget <= 0) break;
    // A webhook's log is in time order: one whose oldest row is kept has nothing to purge.
    const oldest = sql
      .exec<{ attempted_at: number }>(
        "SELECT attempted_at FROM event_attempts WHERE webhook_id = ? ORDER BY seq LIMIT 1",
        webhookId,
      )
      .one();
    if (oldest.attempted_at >= before) continue;
    budget -= sql.exec(
      `DELETE FROM event_attempts WHERE webhook_id = ? AND seq IN (
         SELECT seq FROM (SELECT seq, attempted_at FROM event_attempts WHERE webhook_id = ? ORDER BY seq LIMIT ?) WHERE attempted_at < ?)`,
      webhookId,
      webhookId,
      budget,
      before,
    ).rowsWritten;
  }
}

/** Webhooks with a delivery log (keyed layout), each found by one step of its key: at most MAX_LOGGED_WEBHOOKS. */
function attemptWebhooks(sql: SqlStorage): string[] {
  const ids: string[] = [];
  let last = "";
  while (ids.length < MAX_LOGGED_WEBHOOKS) {
    const next = sql
      .exec<{ w: string }>(
        "SELECT webhook_id AS w FROM event_attempts WHERE webhook_id > ? ORDER BY webhook_id LIMIT 1",
        last,
      )
      .toArray()[0];
    if (!next) break;
    ids.push(next.w);
    last = next.w;
  }
  return ids;
}

/** The oldest delivery-log row(s): by sequence in the rowid layout, each webhook's first in the keyed one. */
function oldestAttempts(sql: SqlStorage, limit: number): { attempted_at: number }[] {
  if (!attemptsKeyedByWebhook(sql))
    return sql
      .exec<{ attempted_at: number }>("SELECT attempted_at FROM event_attempts ORDER BY seq LIMIT ?", limit)
      .toArray();
  return attemptWebhooks(sql)
    .map((w) =>
      sql
        .exec<{ attempted_at: number }>(
          "SELECT attempted_at FROM event_attempts WHERE webhook_id = ? ORDER BY seq LIMIT 1",
          w,
        )
        .one(),
    )
    .sort((a, b) => a.attempted_at - b.attempted_at)
    .slice(0, limit);
}

/** The event log's scheduled steps: publish new events, publish again those without a report, purge old ones. */
export function eventLogSteps(w: WorkspaceContext): {
  publish: ScheduledStep;
  republish: ScheduledStep;
  purge: ScheduledStep;
} {
  return {
    publish: {
      name: "publish-events",
      due: (at) => (hasUnpublishedEvents(w.sql) ? at : null),
      run: () => publishEvents(w.sql, w.env.WEBHOOK_QUEUE),
    },
    republish: {
      name: "republish-unreported",
      due: (at) => nextCheckDue(w.sql, at),
      run: (at) => republishOverdue(w.sql, w.env.WEBHOOK_QUEUE, at, w.confirmWithinMs),
    },
    purge: {
      name: "event-purge",
      due: () => withSlack(nextEventExpiry(w.sql, w.underPressure())),
      run: async (at) => purgeOldEvents(w.sql, at, w.underPressure()),
    },
  };
}
