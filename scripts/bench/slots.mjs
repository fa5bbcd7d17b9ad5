// `npm run bench`: the workspace object's record layout, as the bench reads and seeds it
// (src/durable-objects/workspace/day-tables.ts, src/domain/job-id.ts). Pure functions.

/** One slot table holds the records of 6 hours of ids (day-tables.ts SLOT_MS). */
export const SLOT_MS = 6 * 60 * 60 * 1000;

/** @param {number} ms */
export const slotOf = (ms) => Math.floor(ms / SLOT_MS);

/** @param {number} slot */
export const slotTable = (slot) => `m_${slot}`;

/** The slot of a slot table's name, or null for any other table. @param {string} name */
export function slotOfTable(name) {
  const m = /^m_(\d+)$/.exec(name);
  return m ? Number(m[1]) : null;
}

/** Whether a table is a day table of the delivery log (delivery-log.ts `d_<day>`). @param {string} name */
export const isDeliveryTable = (name) => /^d_\d+$/.test(name);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The millisecond timestamp of a UUIDv7, or null for anything else. @param {string} id */
export function uuidV7Time(id) {
  if (!UUID.test(id) || id[14] !== "7") return null;
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** The slot (table) a message id lives in, or null. @param {string} id */
export function slotOfId(id) {
  const t = uuidV7Time(id);
  return t === null ? null : slotOf(t);
}

/**
 * A UUIDv7 string with the given millisecond timestamp and other bits from `rest` (at least 10 bytes),
 * as `newJobId` makes one (src/domain/job-id.ts).
 * @param {number} ms @param {Uint8Array} rest
 */
export function uuidV7(ms, rest) {
  const b = new Uint8Array(16);
  let t = ms;
  for (let i = 5; i >= 0; i--) {
    b[i] = t % 256;
    t = Math.floor(t / 256);
  }
  b.set(rest.subarray(0, 10), 6);
  b[6] = /** @type {number} */ (b[6] & 0x0f) | 0x70;
  b[8] = /** @type {number} */ (b[8] & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The SQL of one slot table and its indexes, statement by statement (createSlotTable in
 * day-tables.ts: the seeder creates a missing table exactly as the object would).
 * @param {number} slot @returns {string[]}
 */
export function slotTableDdl(slot) {
  const t = slotTable(slot);
  return [
    `CREATE TABLE IF NOT EXISTS ${t} (
      id TEXT PRIMARY KEY, direction TEXT NOT NULL, channel_number_id TEXT NOT NULL, recipient TEXT NOT NULL,
      type TEXT NOT NULL, body TEXT NOT NULL, content TEXT, status TEXT NOT NULL,
      idem_key TEXT, fingerprint TEXT, pending INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,
      answered INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER,
      upstream_message_id TEXT, error_code TEXT, error_message TEXT, error_retriable INTEGER, upstream_error_code TEXT,
      created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, processing_at INTEGER, sent_at INTEGER, failed_at INTEGER,
      delivered_at INTEGER, read_at INTEGER, outcome_unknown_since INTEGER, received_at INTEGER, details TEXT
    ) WITHOUT ROWID`,
    `CREATE INDEX IF NOT EXISTS ${t}_to ON ${t} (recipient, id)`,
    `CREATE UNIQUE INDEX IF NOT EXISTS ${t}_key ON ${t} (idem_key) WHERE idem_key IS NOT NULL`,
    `CREATE INDEX IF NOT EXISTS ${t}_work ON ${t} (channel_number_id, id) WHERE pending = 1`,
    `CREATE INDEX IF NOT EXISTS ${t}_failed ON ${t} (id) WHERE status = 'failed'`,
  ];
}

/** The columns of a slot table, in order (what the seeder checks an existing table against). */
export const SLOT_COLUMNS = [
  "id",
  "direction",
  "channel_number_id",
  "recipient",
  "type",
  "body",
  "content",
  "status",
  "idem_key",
  "fingerprint",
  "pending",
  "attempts",
  "answered",
  "next_attempt_at",
  "upstream_message_id",
  "error_code",
  "error_message",
  "error_retriable",
  "upstream_error_code",
  "created_at",
  "updated_at",
  "processing_at",
  "sent_at",
  "failed_at",
  "delivered_at",
  "read_at",
  "outcome_unknown_since",
  "received_at",
  "details",
];

/** Rows one list page may read (src/durable-objects/workspace/message-queries.ts SCAN_BUDGET). */
export const SCAN_BUDGET = 2_000;

/**
 * @typedef {{ id: string, status: string, channel_number_id: string, direction: string, recipient: string }} ListedRow
 * @typedef {{ status?: string, channelNumberId?: string, direction?: string }} ListFilter
 */

/**
 * The ids of one GET /messages page, newest first, as the object builds it from its slot tables
 * (history-tiering.ts listMessages over slotPage, when every record is in a slot table here and the
 * filter has no driving index: `status` other than failed, `channelNumberId`, `direction`): slot by
 * slot, newest first, each read by id for at most the budget left, the filters applied to what was
 * read, until limit + 1 records matched (the page and whether anything older matches) or the budget
 * ran out. `readSlot(slot, beforeId, n)` gives a slot's `n` newest rows older than `beforeId`.
 * @param {number[]} slots the slots with a table, any order
 * @param {(slot: number, beforeId: string | null, n: number) => ListedRow[]} readSlot
 * @param {{ filter: ListFilter, limit: number, beforeId?: string | null, budget?: number }} o
 * @returns {{ ids: string[], read: number }} the page, and the rows the object read for it
 */
export function listPageOf(slots, readSlot, { filter, limit, beforeId = null, budget = SCAN_BUDGET }) {
  const exact = filter.status === undefined && filter.channelNumberId === undefined && filter.direction === undefined;
  const want = limit + 1;
  /** @type {string[]} */
  const found = [];
  let left = budget;
  let read = 0;
  const before = beforeId === null ? null : slotOfId(beforeId);
  for (const slot of [...slots].sort((a, b) => b - a)) {
    if (before !== null && slot > before) continue;
    if (found.length === want) break;
    if (left <= 0) break;
    const n = exact ? Math.min(left, want - found.length + 1) : left;
    const rows = readSlot(slot, before === slot ? beforeId : null, n);
    read += rows.length;
    left -= rows.length;
    let full = false;
    for (const r of rows) {
      if (filter.status !== undefined && r.status !== filter.status) continue;
      if (filter.channelNumberId !== undefined && r.channel_number_id !== filter.channelNumberId) continue;
      if (filter.direction !== undefined && r.direction !== filter.direction) continue;
      found.push(r.id);
      if (found.length === want) {
        full = true;
        break;
      }
    }
    // The budget ran out inside this slot: the page ends here (with a cursor).
    if (!full && rows.length === n && !exact) break;
  }
  return { ids: found.slice(0, limit), read };
}
