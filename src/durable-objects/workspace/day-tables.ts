import { DAY_MS, utcDay, uuidV7Time } from "../../domain/job-id";

/**
 * Message records live in one table per UTC day of their id's time (`m_<day>`): a day leaves the
 * object by a `DROP TABLE`, which writes no row, where deleting its records wrote one row each.
 *
 * Each table is `WITHOUT ROWID`, keyed by the message id (a UUIDv7 of the acceptance time, or of
 * the operator's time for an inbound message), so the key order is the list order and a lookup by
 * id is one key read. Its indexes are the ones a send or a list needs, each a billed row when a
 * record enters it:
 * - `_to`: (recipient, id), lists by counterpart (`to` / `from`);
 * - `_key`: the Idempotency-Key of an outbound record (unique; a key is bound at most once a day);
 * - `_work`: (channel_number_id, id) of records the number still has work for (`pending = 1`):
 *   queued, retrying or being called. A number rebuilds its queue from it after a restart;
 * - `_failed`: failed records (lists filtered by `status=failed`).
 *
 * Bound: one row per message of the day (~600 B with a 200-character body, + ~150 B of index
 * entries); a table is dropped once its day moved to history (docs/architecture.md, storage budget).
 */
export const dayTable = (day: number): string => `m_${day}`;

export const dayOfTable = (name: string): number | null => {
  const m = /^m_(\d+)$/.exec(name);
  return m ? Number(m[1]) : null;
};

/** The day (table) a message id belongs to, or null for an id that names none (not a UUIDv7). */
export const dayOfId = (id: string): number | null => {
  const t = uuidV7Time(id);
  return t === null ? null : utcDay(t);
};

export const dayStart = (day: number): number => day * DAY_MS;

export function createDayTable(sql: SqlStorage, day: number): void {
  const t = dayTable(day);
  // One statement each: the cost meter counts every statement (a multi-statement exec reports its last one only).
  sql.exec(
    `CREATE TABLE IF NOT EXISTS ${t} (
      id TEXT PRIMARY KEY, direction TEXT NOT NULL, channel_number_id TEXT NOT NULL, recipient TEXT NOT NULL,
      type TEXT NOT NULL, body TEXT NOT NULL, content TEXT, status TEXT NOT NULL,
      idem_key TEXT, fingerprint TEXT, pending INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,
      answered INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER,
      upstream_message_id TEXT, error_code TEXT, error_message TEXT, error_retriable INTEGER, upstream_error_code TEXT,
      created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, processing_at INTEGER, sent_at INTEGER, failed_at INTEGER,
      delivered_at INTEGER, read_at INTEGER, outcome_unknown_since INTEGER, received_at INTEGER
    ) WITHOUT ROWID`,
  );
  sql.exec(`CREATE INDEX IF NOT EXISTS ${t}_to ON ${t} (recipient, id)`);
  sql.exec(`CREATE UNIQUE INDEX IF NOT EXISTS ${t}_key ON ${t} (idem_key) WHERE idem_key IS NOT NULL`);
  sql.exec(`CREATE INDEX IF NOT EXISTS ${t}_work ON ${t} (channel_number_id, id) WHERE pending = 1`);
  sql.exec(`CREATE INDEX IF NOT EXISTS ${t}_failed ON ${t} (id) WHERE status = 'failed'`);
}

/** The days that have a table, ascending (read once at start-up; kept up to date by `DayTables`). */
export const existingDays = (sql: SqlStorage): number[] =>
  sql
    .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'm\\_%' ESCAPE '\\'")
    .toArray()
    .map((r) => dayOfTable(r.name))
    .filter((d): d is number => d !== null)
    .sort((a, b) => a - b);

/** The set of day tables of one object, in memory: a lookup never asks sqlite_master. */
export class DayTables {
  private readonly days: Set<number>;

  constructor(private readonly sql: SqlStorage) {
    this.days = new Set(existingDays(sql));
  }

  has(day: number): boolean {
    return this.days.has(day);
  }

  /** Ascending. */
  list(): number[] {
    return [...this.days].sort((a, b) => a - b);
  }

  oldest(): number | null {
    const list = this.list();
    return list[0] ?? null;
  }

  /** Creates the day's table if needed (inside the caller's transaction). */
  ensure(day: number): string {
    if (!this.days.has(day)) {
      createDayTable(this.sql, day);
      this.days.add(day);
    }
    return dayTable(day);
  }

  drop(day: number): void {
    this.sql.exec(`DROP TABLE IF EXISTS ${dayTable(day)}`);
    this.days.delete(day);
  }

  /** Reads the tables again: a transaction that created one may have been rolled back. */
  resync(): void {
    this.days.clear();
    for (const d of existingDays(this.sql)) this.days.add(d);
  }
}
