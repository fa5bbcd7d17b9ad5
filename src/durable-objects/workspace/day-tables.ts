import { DAY_MS, uuidV7Time } from "../../lib/job-id";

/**
 * Message records live in one table per 6-hour slot of their id's time (`m_<slot>`, slot =
 * time / 6 h): a slot leaves the object by a `DROP TABLE`, which writes no row, where deleting its
 * records wrote one row each. Four slots make a UTC day; days are what counts, history shards and
 * archives are kept by. Six hours is the finest the size guard needs (history-tiering.ts: an object
 * over its storage budget keeps its last 6 to 12 hours only).
 *
 * Each table is `WITHOUT ROWID`, keyed by the message id (a UUIDv7 of the acceptance time, or of
 * the operator's time for an inbound message), so the key order is the list order and a lookup by
 * id is one key read. Its indexes are the ones a send or a list needs, each a billed row when a
 * record enters it, made once the table holds INDEX_MIN_RECORDS records (in the transaction of the
 * insert that reaches it): a smaller table is read whole more cheaply than its index entries are
 * written (a lone message would write 7 rows more), and every query is right either way:
 * - `_to`: (recipient, id), lists by counterpart (`to` / `from`);
 * - `_key`: the Idempotency-Key of an outbound record (unique: a key is bound at most once in 24 h);
 * - `_work`: (channel_number_id, id) of records the number still has work for (`pending = 1`):
 *   queued, retrying or being called. A number rebuilds its queue from it after a restart;
 * - `_failed`: failed records (lists filtered by `status=failed`).
 *
 * Bound: one row per message of the slot (~750 B with a 200-character body, + ~180 B of index
 * entries: 938–954 measured by `npm run bench`); a table is dropped once its slot moved to history or its day was archived
 * (docs/architecture.md, storage budget).
 */
export const SLOT_MS = 6 * 60 * 60 * 1000;
export const SLOTS_PER_DAY = DAY_MS / SLOT_MS;

export const slotOf = (ms: number): number => Math.floor(ms / SLOT_MS);
export const dayOfSlot = (slot: number): number => Math.floor(slot / SLOTS_PER_DAY);
export const slotsOfDay = (day: number): number[] =>
  Array.from({ length: SLOTS_PER_DAY }, (_, i) => day * SLOTS_PER_DAY + i);
export const slotStart = (slot: number): number => slot * SLOT_MS;

export const slotTable = (slot: number): string => `m_${slot}`;

/** The `meta` row that keeps a slot's counts (counts.ts, `SlotTally`): it leaves with the slot's table. */
export const slotTallyKey = (slot: number): string => `tally:${String(slot).padStart(7, "0")}`;

const slotOfTable = (name: string): number | null => {
  const m = /^m_(\d+)$/.exec(name);
  return m ? Number(m[1]) : null;
};

/** The slot (table) a message id belongs to, or null for an id that names none (not a UUIDv7). */
export const slotOfId = (id: string): number | null => {
  const t = uuidV7Time(id);
  return t === null ? null : slotOf(t);
};

/** The UTC day a message id belongs to, or null. */
export const dayOfId = (id: string): number | null => {
  const slot = slotOfId(id);
  return slot === null ? null : dayOfSlot(slot);
};

/** A slot table gets its secondary indexes once it holds this many records. */
export const INDEX_MIN_RECORDS = 64;

/** Creates a slot's table, and its indexes unless `indexes` is false (SlotTables makes them at INDEX_MIN_RECORDS). */
export function createSlotTable(sql: SqlStorage, slot: number, indexes = true): void {
  const t = slotTable(slot);
  // One statement each: the cost meter counts every statement (a multi-statement exec reports its last one only).
  sql.exec(
    `CREATE TABLE IF NOT EXISTS ${t} (
      id TEXT PRIMARY KEY, direction TEXT NOT NULL, channel_number_id TEXT NOT NULL, recipient TEXT NOT NULL,
      type TEXT NOT NULL, body TEXT NOT NULL, content TEXT, status TEXT NOT NULL,
      idem_key TEXT, fingerprint TEXT, pending INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,
      answered INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER,
      upstream_message_id TEXT, error_code TEXT, error_message TEXT, error_retriable INTEGER, upstream_error_code TEXT,
      created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, processing_at INTEGER, sent_at INTEGER, failed_at INTEGER,
      delivered_at INTEGER, read_at INTEGER, outcome_unknown_since INTEGER, received_at INTEGER, details TEXT,
      changes TEXT
    ) WITHOUT ROWID`,
  );
  if (indexes) createSlotIndexes(sql, slot);
}

/** A slot table's secondary indexes (over the records it holds: one billed row per entry). */
export function createSlotIndexes(sql: SqlStorage, slot: number): void {
  const t = slotTable(slot);
  sql.exec(`CREATE INDEX IF NOT EXISTS ${t}_to ON ${t} (recipient, id)`);
  sql.exec(`CREATE UNIQUE INDEX IF NOT EXISTS ${t}_key ON ${t} (idem_key) WHERE idem_key IS NOT NULL`);
  sql.exec(`CREATE INDEX IF NOT EXISTS ${t}_work ON ${t} (channel_number_id, id) WHERE pending = 1`);
  sql.exec(`CREATE INDEX IF NOT EXISTS ${t}_failed ON ${t} (id) WHERE status = 'failed'`);
}

/** The slots whose table has its secondary indexes (the last one made names them all). */
const indexedSlots = (sql: SqlStorage): number[] =>
  sql
    .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND name GLOB 'm_[0-9]*_failed'")
    .toArray()
    .map((r) => Number(r.name.slice(2, -"_failed".length)));

/** The slots that have a table, ascending. */
const existingSlots = (sql: SqlStorage): number[] =>
  sql
    .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'm\\_%' ESCAPE '\\'")
    .toArray()
    .map((r) => slotOfTable(r.name))
    .filter((d): d is number => d !== null)
    .sort((a, b) => a - b);

/**
 * The slot tables of one object, in memory: a lookup never asks sqlite_master. Also the chunk of
 * records on its way to its history shard (history-tiering.ts): its records stay here, readable
 * and writable, until the shard has it, and a write to one of them meanwhile makes the copy stale
 * (it is sent again); no record is added to its slot meanwhile (tiers.ts, `writable`). And the
 * days being archived (`archives`).
 */
export class SlotTables {
  private readonly slots: Set<number>;
  private readonly indexed: Set<number>;
  /** Records in tables without their indexes yet (counted once per instance, then kept up to date). */
  private readonly sizes = new Map<number, number>();
  private copy: { slot: number; after: string; through: string; stale: boolean } | null = null;
  readonly archives = new ArchiveWatch();

  constructor(private readonly sql: SqlStorage) {
    this.slots = new Set(existingSlots(sql));
    this.indexed = new Set(indexedSlots(sql));
  }

  /** Whether the slot's table has its secondary indexes (a query may name one with INDEXED BY). */
  hasIndexes(slot: number): boolean {
    return this.indexed.has(slot);
  }

  has(slot: number): boolean {
    return this.slots.has(slot);
  }

  /** Ascending. */
  list(): number[] {
    return [...this.slots].sort((a, b) => a - b);
  }

  /** The slots of one UTC day that have a table, ascending. */
  ofDay(day: number): number[] {
    return slotsOfDay(day).filter((s) => this.slots.has(s));
  }

  /** The UTC days that have at least one table, ascending. */
  days(): number[] {
    return [...new Set(this.list().map(dayOfSlot))];
  }

  oldest(): number | null {
    return this.list()[0] ?? null;
  }

  /** Creates the slot's table if needed, without its indexes (inside the caller's transaction). */
  ensure(slot: number): string {
    if (!this.slots.has(slot)) {
      createSlotTable(this.sql, slot, false);
      this.slots.add(slot);
      this.sizes.set(slot, 0);
    }
    return slotTable(slot);
  }

  /** A record was inserted in the slot's table (inside its transaction): at INDEX_MIN_RECORDS the table gets its indexes. */
  added(slot: number): void {
    if (this.indexed.has(slot)) return;
    const known = this.sizes.get(slot);
    const n =
      known === undefined
        ? this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${slotTable(slot)}`).one().n
        : known + 1;
    if (n < INDEX_MIN_RECORDS) {
      this.sizes.set(slot, n);
      return;
    }
    createSlotIndexes(this.sql, slot);
    this.indexed.add(slot);
    this.sizes.delete(slot);
  }

  /** Drops the slot's table and its tally (inside the caller's transaction: a table made again later starts uncounted). */
  drop(slot: number): void {
    this.sql.exec(`DROP TABLE IF EXISTS ${slotTable(slot)}`);
    this.sql.exec("DELETE FROM meta WHERE k = ?", slotTallyKey(slot));
    this.slots.delete(slot);
    this.indexed.delete(slot);
    this.sizes.delete(slot);
  }

  /** The records of `slot` with ids in (after, through] are on their way to the shard, as read now. */
  copying(slot: number, after: string, through: string): void {
    this.copy = { slot, after, through, stale: false };
  }

  /** Whether records of this slot are on their way to the shard. */
  isCopying(slot: number): boolean {
    return this.copy?.slot === slot;
  }

  /** A record was written: a copy on its way that holds it is stale. */
  written(slot: number, id: string): void {
    this.archives.touch(dayOfSlot(slot));
    const c = this.copy;
    if (c !== null && c.slot === slot && id > c.after && id <= c.through) c.stale = true;
  }

  /** The copy reached the shard (or failed to): whether it holds the records as they are here. */
  copied(): boolean {
    const fresh = this.copy !== null && !this.copy.stale;
    this.copy = null;
    return fresh;
  }

  /** Reads the tables again: a transaction that created one may have been rolled back. */
  resync(): void {
    this.slots.clear();
    for (const s of existingSlots(this.sql)) this.slots.add(s);
    this.indexed.clear();
    for (const s of indexedSlots(this.sql)) this.indexed.add(s);
    this.sizes.clear();
  }
}

/**
 * The days whose archive is being written, in memory: an archive is written part by part (R2 puts,
 * across alarm runs) while the object takes other calls, and a record changed after its part was
 * written would leave in the archive as it was. A change to a record of such a day (here or in
 * its shard) marks it, and the archive starts over (the same keys, overwritten). An instance that
 * finds an archive begun by another cannot know what changed meanwhile: it starts over too.
 */
export class ArchiveWatch {
  private readonly days = new Map<number, "clean" | "changed" | "closing">();

  /** Watches `day` from now; whether this instance watched it already (its parts so far are current unless changed). */
  watch(day: number): boolean {
    if (this.days.has(day)) return true;
    this.days.set(day, "clean");
    return false;
  }

  /** A record of `day` changed (or is about to, in its shard). */
  touch(day: number): void {
    if (this.days.get(day) === "clean") this.days.set(day, "changed");
  }

  /** Whether a record of `day` changed since it was watched (or since the last `restart`). */
  changed(day: number): boolean {
    return this.days.get(day) === "changed";
  }

  restart(day: number): void {
    this.days.set(day, "clean");
  }

  /** The archive is complete and its source about to be dropped: no change is taken any more. */
  close(day: number): void {
    this.days.set(day, "closing");
  }

  isClosing(day: number): boolean {
    return this.days.get(day) === "closing";
  }

  /** Whether `day` is watched (an archive under way in this instance): no record is added to it. */
  has(day: number): boolean {
    return this.days.has(day);
  }

  forget(day: number): void {
    this.days.delete(day);
  }
}
