import { ensureColumn } from "../../shared/sql-schema";
import { getMeta, setMeta } from "../../shared/meta";
import type { StatusUpdate } from "../../workspace/contract";

/**
 * The outbox of the release before day tables: one row per accepted message, its state moved by
 * the drain and kept 8 days after it finished; a `status_outbox` for changes the workspace had not
 * acknowledged; the pace's `meta` row (`recent_calls`: call times, the relay's checkpoint, the
 * entries in flight). Schema step 1 creates them (storage older than versions, tests that build
 * that layout). From step 2 on, the number's queue is a view of its workspace's records; what this
 * outbox still owes is handed over once by legacy-handover.ts, which then drops the tables.
 */
/**
 * Creates the outbox (or brings an earlier release's up to date). Returns the keys of entries an
 * earlier release left `sending`, found through its `outbox_sending` index before that index goes:
 * entries in flight are listed in the pace's `meta` row since (`readPace().sending`), which every
 * call writes anyway, instead of an index row written and removed per call.
 */
export function createOutboxTable(sql: SqlStorage): number[] {
  // `seq` is a plain rowid key in tables created since (objects created earlier keep AUTOINCREMENT,
  // which writes a `sqlite_sequence` row per insert). A key is then reused only when the newest
  // entry is deleted (an unclaimed entry released, or everything purged) before the next insert:
  // order is kept (a reused key is still above every other), and whoever holds an entry across an
  // await (the drain) moves it by key *and* jobId (`transition` with the row), so a reused key is
  // never taken for the entry it replaced.
  sql.exec(`
    CREATE TABLE IF NOT EXISTS outbox (
      seq INTEGER PRIMARY KEY,
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
  `);
  ensureColumn(sql, "outbox", "unknown_since", "INTEGER");
  const headsAdded = ensureColumn(sql, "outbox", "is_head", "INTEGER NOT NULL DEFAULT 0");
  ensureColumn(sql, "outbox", "first_attempt_at", "INTEGER");
  ensureColumn(sql, "outbox", "recipient_id", "TEXT");
  // A failed entry's error (JSON), unindexed: the status relay rebuilds the change from the row.
  ensureColumn(sql, "outbox", "error", "TEXT");
  // A claim that never reached the upstream call (an earlier release persisted it) is safe to take again.
  sql.exec("UPDATE outbox SET state = 'queued' WHERE state = 'claiming'");
  if (headsAdded) {
    // Storage from before per-recipient order: each conversation's oldest unfinished entry becomes its head.
    sql.exec(
      `UPDATE outbox SET is_head = 1 WHERE seq IN (SELECT MIN(seq) FROM outbox WHERE state IN ('queued', 'sending') GROUP BY recipient)`,
    );
  }
  sql.exec(`
    DROP INDEX IF EXISTS outbox_by_state;
    CREATE INDEX IF NOT EXISTS outbox_ready ON outbox (next_attempt_at, seq) WHERE is_head = 1 AND state = 'queued';
    CREATE INDEX IF NOT EXISTS outbox_active_by_recipient ON outbox (recipient, seq) WHERE state IN ('queued', 'sending');
    CREATE INDEX IF NOT EXISTS outbox_unknown ON outbox (unknown_since) WHERE state = 'unknown';
    CREATE INDEX IF NOT EXISTS outbox_orphans ON outbox (accepted_at) WHERE state = 'orphan';
    -- The held-bound step's oldest queued entry (one entry per message while it waits to be called).
    CREATE INDEX IF NOT EXISTS outbox_queued ON outbox (accepted_at) WHERE state = 'queued';
    CREATE INDEX IF NOT EXISTS outbox_finished ON outbox (updated_at) WHERE state IN ('sent', 'failed', 'dropped');
    -- Not kept (each wrote an index row per message): operator statuses are routed by our jobId
    -- (biz_opaque_callback_data, set on every call since the first release), and the window is
    -- rebuilt from the newest keys and the queued entries (acceptedSince).
    DROP INDEX IF EXISTS outbox_by_upstream_id;
    DROP INDEX IF EXISTS outbox_by_accepted;
  `);
  const hadSendingIndex =
    sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'outbox_sending'").toArray().length > 0;
  if (!hadSendingIndex) return [];
  // Read through the index, then dropped in the same synchronous step (one implicit transaction):
  // the caller marks these entries before anything can interrupt it.
  const inFlight = sql
    .exec<{ seq: number }>("SELECT seq FROM outbox WHERE state = 'sending'")
    .toArray()
    .map((r) => r.seq);
  sql.exec("DROP INDEX IF EXISTS outbox_sending");
  return inFlight;
}

export interface OutboxRow {
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
  is_head: number;
  upstream_message_id: string | null;
  unknown_since: number | null;
  first_attempt_at: number | null;
  recipient_id: string | null;
  error: string | null;
  updated_at: number;
  [key: string]: SqlStorageValue;
}

/**
 * The pace's `meta` row: the latest call times, the status relay's checkpoint and the keys of the
 * entries put in `sending` by the latest calls.
 */
export function readPace(sql: SqlStorage): { calls: number[]; relayAfter: number | null; sending: number[] } {
  const v = JSON.parse(getMeta(sql, "recent_calls") ?? "[]") as
    number[] | { calls: number[]; relayAfter: number; sending?: number[] };
  // Earlier releases stored the call times alone (and relayed every change through a row).
  return Array.isArray(v) ? { calls: v, relayAfter: null, sending: [] } : { ...v, sending: v.sending ?? [] };
}

export function writePace(sql: SqlStorage, calls: number[], relayAfter: number, sending: number[]): void {
  setMeta(sql, "recent_calls", JSON.stringify({ calls, relayAfter, sending }));
}

/** Changes owed to workspaces that a direct hand-off could not deliver (the earlier relay's table). */
export function createStatusRelayTable(sql: SqlStorage): void {
  sql.exec(
    "CREATE TABLE IF NOT EXISTS status_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, workspace_id TEXT NOT NULL, body TEXT NOT NULL)",
  );
}

/** The change an outbox entry's state owed its workspace. */
export function owedBy(row: OutboxRow): StatusUpdate | null {
  if (row.state === "unknown")
    return { jobId: row.job_id, at: row.unknown_since ?? row.updated_at, outcomeUnknown: true };
  if (row.state !== "sent" && row.state !== "failed") return null;
  const update: StatusUpdate = { jobId: row.job_id, at: row.updated_at, status: row.state };
  if (row.upstream_message_id) update.upstreamMessageId = row.upstream_message_id;
  if (row.state === "failed" && row.error) update.error = JSON.parse(row.error) as StatusUpdate["error"];
  return update;
}

export type OutboxState = "queued" | "sending" | "unknown" | "sent" | "failed" | "orphan" | "dropped";

const rows = (sql: SqlStorage, query: string, ...bindings: SqlStorageValue[]): OutboxRow[] =>
  sql.exec<OutboxRow>(query, ...bindings).toArray();

/** Entries still to call (queued, never called or in back-off), through the `outbox_queued` index. */
export const queuedLegacyEntries = (sql: SqlStorage, limit: number): OutboxRow[] =>
  rows(sql, "SELECT * FROM outbox WHERE state = 'queued' ORDER BY accepted_at LIMIT ?", limit);

/** Entries a call was in flight for when the release changed: they may have reached the operator. */
export const sendingLegacyEntries = (sql: SqlStorage, seqs: number[]): OutboxRow[] =>
  seqs.length === 0
    ? []
    : rows(sql, `SELECT * FROM outbox WHERE seq IN (${seqs.map(() => "?").join(", ")}) AND state = 'sending'`, ...seqs);

/** Entries whose outcome is unknown, through the `outbox_unknown` index. */
export const unknownLegacyEntries = (sql: SqlStorage, limit: number): OutboxRow[] =>
  rows(sql, "SELECT * FROM outbox WHERE state = 'unknown' ORDER BY unknown_since LIMIT ?", limit);

/** Entries that finished at or after `since` (their change may not have reached the workspace), through `outbox_finished`. */
export const finishedLegacyEntriesSince = (
  sql: SqlStorage,
  since: number,
  afterSeq: number,
  limit: number,
): OutboxRow[] =>
  rows(
    sql,
    "SELECT * FROM outbox WHERE state IN ('sent', 'failed') AND updated_at >= ? AND seq > ? ORDER BY seq LIMIT ?",
    since,
    afterSeq,
    limit,
  );

/** Rows of the earlier relay table, oldest first. */
export const owedLegacyChanges = (
  sql: SqlStorage,
  limit: number,
): { seq: number; workspace_id: string; body: string }[] =>
  sql
    .exec<{ seq: number; workspace_id: string; body: string }>(
      "SELECT seq, workspace_id, body FROM status_outbox ORDER BY seq LIMIT ?",
      limit,
    )
    .toArray();
