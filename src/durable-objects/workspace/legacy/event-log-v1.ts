import { getMeta, setMeta } from "../../shared/meta";
import { ensureColumn } from "../../shared/sql-schema";
import type { AttemptRow } from "../delivery-log";

/**
 * The event log of the release before events were derived from their records: an `events` table
 * (one row per event, published from a rowid cursor) and the per-attempt delivery log
 * (`event_attempts`). Schema step 1 creates them (storage older than versions, and tests that
 * build that release's layout). From step 2 on, the events still unpublished are published once
 * (legacy-tier.ts), events are read for replays, and the delivery log for listings, until both
 * are older than their 3 days; then the tables are dropped.
 */
export const PUBLISH_CURSOR = "events_published_through";
export const FIRST_REPORT_WALK = "events_first_report_from";

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

/** Events recorded but not yet published when the upgrade came, oldest first (published once by the legacy tier). */
export const unpublishedEvents = (sql: SqlStorage, limit: number): { seq: number; body: string }[] =>
  sql
    .exec<{ seq: number; body: string }>(
      "SELECT rowid AS seq, body FROM events WHERE rowid > ? ORDER BY rowid LIMIT ?",
      cursor(sql),
      limit,
    )
    .toArray();

export const markPublishedThrough = (sql: SqlStorage, seq: number): void => setMeta(sql, PUBLISH_CURSOR, String(seq));

/** When the newest event or attempt was recorded (the tables go once that is past their 3 days). */
export function newestLegacyLogAt(sql: SqlStorage): number | null {
  const has = (t: string) =>
    sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", t).toArray().length > 0;
  const times: number[] = [];
  if (has("events")) {
    const e = sql.exec<{ at: number | null }>("SELECT MAX(created_at) AS at FROM events").one().at;
    if (e !== null) times.push(e);
  }
  if (has("event_attempts")) {
    const a = sql.exec<{ at: number | null }>("SELECT MAX(attempted_at) AS at FROM event_attempts").one().at;
    if (a !== null) times.push(a);
  }
  return times.length === 0 ? null : Math.max(...times);
}
