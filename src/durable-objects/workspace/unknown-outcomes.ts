/**
 * Sends whose call got no usable answer (a timeout, a lost connection): the message may or may
 * not have reached the operator, so it is never called again; the operator's status report settles
 * it, and without one it fails with `upstream_outcome_unknown` when the operator's 7-day webhook
 * window ends. The record says so (`outcome_unknown_since`); this small list is how the expiry
 * finds them without a scan, wherever their record is by then (a day table or a history shard),
 * and how a report without our jobId finds its message (`matchUnknown`: by number, recipient and time).
 *
 * Bound: one row per message waiting on an unknown outcome, ~220 B with its entry in the recipient
 * index (measured in SQLite: ~115 B the row, ~105 B the index entry): none in the steady state, at
 * most 7 days of a number's timeouts (2/s: 1.2 M rows, ~270 MB, if every call timed out for a week).
 */
export const UNKNOWN_OUTCOME_WINDOW_MS = 7 * 24 * 60 * 60_000;

/**
 * A report may be matched to a call whose outcome became unknown up to this long after the
 * report's own time: the call started before the report, and became unknown when its timeout ran
 * out (UPSTREAM_TIMEOUT_MS, seconds), with the operator's clock and ours a little apart.
 */
export const MATCH_SLACK_MS = 5 * 60_000;

const hasTable = (sql: SqlStorage): boolean =>
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
  if (hasTable(sql)) sql.exec("DELETE FROM unknowns WHERE id = ?", id);
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
  if (!hasTable(sql) || recipients.length === 0) return null;
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

/** When the oldest of the first few (ids are in acceptance order, `since` follows it within the hour of retries) expires, or null. */
export function nextUnknownExpiry(sql: SqlStorage, windowMs: number): number | null {
  if (!hasTable(sql)) return null;
  const oldest = sql
    .exec<{ since: number | null }>(
      "SELECT MIN(since) AS since FROM (SELECT since FROM unknowns ORDER BY id LIMIT 100)",
    )
    .one().since;
  return oldest === null ? null : oldest + windowMs;
}

/** Unknown outcomes past the window, among the oldest `limit` by id. */
export function expiredUnknowns(sql: SqlStorage, before: number, limit: number): string[] {
  if (!hasTable(sql)) return [];
  return sql
    .exec<{ id: string; since: number }>("SELECT id, since FROM unknowns ORDER BY id LIMIT ?", limit)
    .toArray()
    .filter((r) => r.since <= before)
    .map((r) => r.id);
}
