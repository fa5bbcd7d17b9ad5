import { DAY_MS, uuidV7Floor } from "../../lib/job-id";

/**
 * Sends whose call got no usable answer (a timeout, a lost connection): the message may or may
 * not have reached the operator, so it is never called again; the operator's status report settles
 * it, and without one it fails with `upstream_outcome_unknown` when the operator's 7-day webhook
 * window ends. The record says so (`outcome_unknown_since`); this small list is how the expiry
 * finds them without a scan, wherever their record is by then (a day table or a history shard),
 * and how a report without our jobId finds its message (`matchUnknown`: by number, recipient and time).
 *
 * Bound: one row per message waiting on an unknown outcome, ~260 B with its entries in the recipient
 * and `since` indexes (measured in SQLite: ~115 B the row, ~105 B the recipient entry; ~40 B the
 * `since` entry): none in the steady state, at most 7 days of a number's timeouts (2/s: 1.2 M rows,
 * ~320 MB, if every call timed out for a week); a row leaves when its message is settled or failed.
 */
export const UNKNOWN_OUTCOME_WINDOW_MS = 7 * 24 * 60 * 60_000;

/**
 * A report may be matched to a call whose outcome became unknown up to this long after the
 * report's own time: the call started before the report, and became unknown when its timeout ran
 * out (UPSTREAM_TIMEOUT_MS, seconds), with the operator's clock and ours a little apart.
 */
export const MATCH_SLACK_MS = 5 * 60_000;

export const hasUnknownsTable = (sql: SqlStorage): boolean =>
  sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'unknowns'").toArray().length > 0;

/**
 * The table, created when the first outcome becomes unknown. `number` and `recipient` (our
 * counterpart: digits, or a user id) find the message a report without our jobId is about.
 */
function createTable(sql: SqlStorage): void {
  sql.exec(
    "CREATE TABLE IF NOT EXISTS unknowns (id TEXT PRIMARY KEY, since INTEGER NOT NULL, number TEXT NOT NULL, recipient TEXT NOT NULL) WITHOUT ROWID",
  );
  sql.exec("CREATE INDEX IF NOT EXISTS unknowns_by_recipient ON unknowns (number, recipient)");
  createSinceIndex(sql);
}

/**
 * The expiry's order: by when each became unknown. ~40 B per row (the entry: `since` and the id),
 * one per row of the table, gone with it.
 */
export function createSinceIndex(sql: SqlStorage): void {
  sql.exec("CREATE INDEX IF NOT EXISTS unknowns_by_since ON unknowns (since)");
}

export function noteUnknown(
  sql: SqlStorage,
  id: string,
  since: number,
  to: { number: string; recipient: string },
): void {
  createTable(sql);
  sql.exec(
    "INSERT OR IGNORE INTO unknowns (id, since, number, recipient) VALUES (?, ?, ?, ?)",
    id,
    since,
    to.number,
    to.recipient,
  );
}

export function forgetUnknown(sql: SqlStorage, id: string): void {
  if (hasUnknownsTable(sql)) sql.exec("DELETE FROM unknowns WHERE id = ?", id);
}

/**
 * The one message of `number` to one of `recipients` whose outcome is unknown and whose call may
 * have started before `reportedAt`: the message an operator report without our jobId is about.
 * Null when there is none, or more than one (then nothing tells which the report is about: each
 * stays unknown until its own report, or its expiry).
 */
export function matchUnknown(
  sql: SqlStorage,
  number: string,
  recipients: readonly string[],
  reportedAt: number,
): string | null {
  if (!hasUnknownsTable(sql) || recipients.length === 0) return null;
  const rows = sql
    .exec<{ id: string }>(
      `SELECT id FROM unknowns WHERE number = ? AND recipient IN (${recipients.map(() => "?").join(", ")}) AND since <= ? LIMIT 2`,
      number,
      ...recipients,
      reportedAt + MATCH_SLACK_MS,
    )
    .toArray();
  return rows.length === 1 ? rows[0]!.id : null;
}

/** When the unknown outcome that became unknown first expires, or null (the `since` index's first entry). */
export function nextUnknownExpiry(sql: SqlStorage, windowMs: number): number | null {
  if (!hasUnknownsTable(sql)) return null;
  const oldest = sql.exec<{ since: number | null }>("SELECT MIN(since) AS since FROM unknowns").one().since;
  return oldest === null ? null : oldest + windowMs;
}

/**
 * Unknown outcomes that became unknown at `before` or earlier, first the earliest, at most `limit`:
 * in the order their windows end, whatever their ids (a held message is called, and may become
 * unknown, up to a day after its acceptance). A range of the `since` index.
 */
export function expiredUnknowns(sql: SqlStorage, before: number, limit: number): string[] {
  if (!hasUnknownsTable(sql)) return [];
  return sql
    .exec<{ id: string }>(
      "SELECT id FROM unknowns INDEXED BY unknowns_by_since WHERE since <= ? ORDER BY since LIMIT ?",
      before,
      limit,
    )
    .toArray()
    .map((r) => r.id);
}

/**
 * When the last of a UTC day's messages (by id: the day it was accepted) became an unknown
 * outcome, or null when none of that day is waiting (the key's range: no scan).
 */
export function lastUnknownOfDay(sql: SqlStorage, day: number): number | null {
  // Read on every alarm (the archive's due time): the table's absence is learnt from the statement,
  // not from a look at the schema (which reads every schema row).
  let rows: { since: number | null }[];
  try {
    rows = sql
      .exec<{ since: number | null }>(
        "SELECT MAX(since) AS since FROM unknowns WHERE id >= ? AND id < ?",
        uuidV7Floor(day * DAY_MS),
        uuidV7Floor((day + 1) * DAY_MS),
      )
      .toArray();
  } catch (err) {
    if (String(err).includes("no such table")) return null;
    throw err;
  }
  return rows[0]?.since ?? null;
}
