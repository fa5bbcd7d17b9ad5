import { ensureColumn } from "../shared/sql-schema";
import type { AdmitCommand, OutboxEntry, OutboxState } from "./contract";

/**
 * The number's outbox: one row per accepted message. Messages to one recipient
 * (a conversation) leave in acceptance order, one call at a time; different
 * conversations never wait on each other. The oldest unfinished entry of each
 * conversation is its head (`is_head = 1`); the drain takes due heads.
 *
 * Bound: ~350 B per row with a 200-byte body; at the number's full 2/s,
 * 172,800 rows a day, kept 8 days after they finish (operator statuses match
 * by upstream id for 7 days): ≤ 1.4 M rows, ~0.5 GB. Purged in batches.
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

const rows = (sql: SqlStorage, query: string, ...bindings: SqlStorageValue[]): OutboxRow[] =>
  sql.exec<OutboxRow>(query, ...bindings).toArray();

export const findByJobId = (sql: SqlStorage, jobId: string): OutboxRow | undefined =>
  rows(sql, "SELECT * FROM outbox WHERE job_id = ?", jobId)[0];

export const findBySeq = (sql: SqlStorage, seq: number): OutboxRow | undefined =>
  rows(sql, "SELECT * FROM outbox WHERE seq = ?", seq)[0];

export const samePayload = (row: OutboxRow, cmd: AdmitCommand): boolean =>
  row.workspace_id === cmd.workspaceId &&
  row.recipient === cmd.to &&
  row.body === cmd.body &&
  row.channel_number_id === cmd.channelNumberId;

/** How many of the newest entries (by key) the window's rebuild reads. */
export const WINDOW_REBUILD_ENTRIES = 256;

/**
 * Acceptance times after `since` (rebuilds the number's rate window after a restart). Read from
 * the newest WINDOW_REBUILD_ENTRIES keys (an admission is the newest key when it is written; only
 * a burst of more than that many re-admissions of old messages in the same second could push it
 * out) and from the queued entries (their partial index): two bounded reads, no index of its own.
 */
export function acceptedSince(sql: SqlStorage, since: number): number[] {
  const bySeq = new Map<number, number>();
  const newest = sql.exec<{ seq: number; accepted_at: number }>(
    "SELECT seq, accepted_at FROM outbox ORDER BY seq DESC LIMIT ?",
    WINDOW_REBUILD_ENTRIES,
  );
  const queued = sql.exec<{ seq: number; accepted_at: number }>(
    "SELECT seq, accepted_at FROM outbox WHERE state = 'queued' AND accepted_at > ?",
    since,
  );
  for (const r of [...newest, ...queued]) if (r.accepted_at > since) bySeq.set(r.seq, r.accepted_at);
  return [...bySeq.values()].sort((x, y) => x - y);
}

export function insertEntry(sql: SqlStorage, cmd: AdmitCommand, at: number): void {
  sql.exec(
    `INSERT INTO outbox (job_id, workspace_id, channel_number_id, recipient, body, accepted_at, state, next_attempt_at, updated_at, is_head)
     VALUES (?, ?, ?, ?, ?, ?, 'queued', ?, ?, NOT EXISTS (SELECT 1 FROM outbox WHERE recipient = ? AND state IN ('queued', 'sending')))`,
    cmd.jobId,
    cmd.workspaceId,
    cmd.channelNumberId,
    cmd.to,
    cmd.body,
    cmd.acceptedAt,
    at,
    at,
    cmd.to,
  );
}

const ACTIVE: readonly OutboxState[] = ["queued", "sending"];

/**
 * Makes the conversation's oldest unfinished entry its head (and no other).
 * Heads are only ever active entries (an entry leaving them loses the mark in
 * `transition`), and every change calls this, so at most one active entry is a
 * head, and it is the oldest but for one change: a newer entry finished (its
 * successor is now the oldest), or an older one came back into line (the old
 * head is now the second). The two oldest active entries, read through the
 * index, are therefore all there is to fix: two rows read and at most two
 * written, however long the conversation's backlog.
 */
export function promoteHead(sql: SqlStorage, recipient: string): void {
  const [first, second] = sql
    .exec<{ seq: number; is_head: number }>(
      "SELECT seq, is_head FROM outbox WHERE recipient = ? AND state IN ('queued', 'sending') ORDER BY seq LIMIT 2",
      recipient,
    )
    .toArray();
  if (second?.is_head) sql.exec("UPDATE outbox SET is_head = 0 WHERE seq = ?", second.seq);
  if (first && !first.is_head) sql.exec("UPDATE outbox SET is_head = 1 WHERE seq = ?", first.seq);
}

/** The due head to call next: the earliest due, then the oldest. */
export const nextReady = (sql: SqlStorage, at: number, skip: ReadonlySet<number>): OutboxRow | undefined => {
  // `skip` holds the few entries this object is calling right now (their state is still `queued` while claimed).
  const candidates = rows(
    sql,
    "SELECT * FROM outbox WHERE is_head = 1 AND state = 'queued' AND next_attempt_at <= ? ORDER BY next_attempt_at, seq LIMIT ?",
    at,
    skip.size + 1,
  );
  return candidates.find((r) => !skip.has(r.seq));
};

/** When the next head is due, or null when no conversation has work. */
export const nextReadyAt = (sql: SqlStorage): number | null =>
  sql
    .exec<{ at: number | null }>("SELECT MIN(next_attempt_at) AS at FROM outbox WHERE is_head = 1 AND state = 'queued'")
    .one().at;

/** Moves an entry from `from` to `to`; false when it was no longer in `from` (someone settled it first). */
export function transition(
  sql: SqlStorage,
  key: number | Pick<OutboxRow, "seq" | "job_id">,
  from: readonly OutboxState[],
  to: OutboxState,
  at: number,
  fields: {
    attempts?: number;
    next_attempt_at?: number;
    upstream_message_id?: string | null;
    unknown_since?: number | null;
    first_attempt_at?: number;
    recipient_id?: string | null;
    accepted_at?: number;
    /** JSON of the error a failed entry owes its workspace. */
    error?: string;
  } = {},
): boolean {
  const sets = ["state = ?", "updated_at = ?"];
  const values: SqlStorageValue[] = [to, at];
  // Only active entries are heads (promoteHead relies on it).
  if (!ACTIVE.includes(to)) sets.push("is_head = 0");
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue;
    sets.push(
      k === "upstream_message_id" || k === "recipient_id" || k === "first_attempt_at"
        ? `${k} = COALESCE(${k}, ?)`
        : `${k} = ?`,
    );
    values.push(v);
  }
  const [seq, jobId] = typeof key === "number" ? [key, null] : [key.seq, key.job_id];
  const cursor = sql.exec(
    `UPDATE outbox SET ${sets.join(", ")} WHERE seq = ?${jobId === null ? "" : " AND job_id = ?"} AND state IN (${from.map(() => "?").join(", ")})`,
    ...values,
    seq,
    ...(jobId === null ? [] : [jobId]),
    ...from,
  );
  return cursor.rowsWritten > 0;
}

export const unknownSince = (sql: SqlStorage, before: number, limit: number): OutboxRow[] =>
  rows(
    sql,
    "SELECT * FROM outbox WHERE state = 'unknown' AND unknown_since <= ? ORDER BY unknown_since LIMIT ?",
    before,
    limit,
  );

export const oldestUnknownSince = (sql: SqlStorage): number | null =>
  sql.exec<{ at: number | null }>("SELECT MIN(unknown_since) AS at FROM outbox WHERE state = 'unknown'").one().at;

/** When the oldest queued entry was accepted, or null (one row of the `outbox_queued` index). */
export const oldestQueuedEntryAt = (sql: SqlStorage): number | null =>
  sql
    .exec<{ accepted_at: number }>("SELECT accepted_at FROM outbox WHERE state = 'queued' ORDER BY accepted_at LIMIT 1")
    .toArray()[0]?.accepted_at ?? null;

/** Queued entries accepted at `until` or earlier, oldest first. */
export const queuedEntriesAcceptedBy = (sql: SqlStorage, until: number, limit: number): OutboxRow[] =>
  rows(
    sql,
    "SELECT * FROM outbox WHERE state = 'queued' AND accepted_at <= ? ORDER BY accepted_at LIMIT ?",
    until,
    limit,
  );

/** Orphans accepted at `until` or earlier (inclusive: the step is due at exactly `oldest + grace`). */
export const orphansAcceptedBefore = (sql: SqlStorage, until: number, limit: number): OutboxRow[] =>
  rows(
    sql,
    "SELECT * FROM outbox WHERE state = 'orphan' AND accepted_at <= ? ORDER BY accepted_at LIMIT ?",
    until,
    limit,
  );

export const oldestOrphanAcceptedAt = (sql: SqlStorage): number | null =>
  sql.exec<{ at: number | null }>("SELECT MIN(accepted_at) AS at FROM outbox WHERE state = 'orphan'").one().at;

/**
 * Entries that finished sent or failed at `at` or later, after (`at`, `seq`) when `seq` is given
 * (one page of the status relay's recovery, through the `outbox_finished` index).
 */
export const finishedFrom = (sql: SqlStorage, at: number, seq: number, limit: number): OutboxRow[] =>
  rows(
    sql,
    "SELECT * FROM outbox WHERE state IN ('sent', 'failed', 'dropped') AND updated_at >= ? AND (updated_at > ? OR seq > ?) ORDER BY updated_at, seq LIMIT ?",
    at,
    at,
    seq,
    limit,
  );

/** Unknown entries that became unknown at `at` or later, after (`at`, `seq`) (through `outbox_unknown`). */
export const unknownFrom = (sql: SqlStorage, at: number, seq: number, limit: number): OutboxRow[] =>
  rows(
    sql,
    "SELECT * FROM outbox WHERE state = 'unknown' AND unknown_since >= ? AND (unknown_since > ? OR seq > ?) ORDER BY unknown_since, seq LIMIT ?",
    at,
    at,
    seq,
    limit,
  );

export const oldestFinishedAt = (sql: SqlStorage): number | null =>
  sql
    .exec<{ at: number | null }>(
      "SELECT MIN(updated_at) AS at FROM outbox WHERE state IN ('sent', 'failed', 'dropped')",
    )
    .one().at;

/** Deletes up to `limit` entries that finished before `before`. */
export function purgeFinished(sql: SqlStorage, before: number, limit: number): void {
  sql.exec(
    "DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox WHERE state IN ('sent', 'failed', 'dropped') AND updated_at < ? ORDER BY updated_at LIMIT ?)",
    before,
    limit,
  );
}

/** Deletes an entry that was never claimed (its send's commit failed): it frees the window slot it held. */
export function deleteUnclaimed(sql: SqlStorage, jobId: string): OutboxRow | undefined {
  const row = findByJobId(sql, jobId);
  if (!row || row.state !== "queued" || row.attempts > 0) return undefined;
  sql.exec("DELETE FROM outbox WHERE seq = ?", row.seq);
  return row;
}

export const listEntries = (sql: SqlStorage): OutboxEntry[] =>
  rows(sql, "SELECT * FROM outbox ORDER BY seq").map((r) => ({
    jobId: r.job_id,
    recipient: r.recipient,
    state: r.state,
    attempts: r.attempts,
    upstreamMessageId: r.upstream_message_id,
  }));
