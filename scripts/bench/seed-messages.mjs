// `npm run bench`: writes message records straight into a stopped workspace
// object's SQLite file (wrangler dev's local state), so that GET /messages can be
// measured on a workspace with a million records without sending them for hours.
//
// The records are what the object itself writes (src/durable-objects/workspace/records.ts,
// day-tables.ts): each in the 6-hour slot table of its id (`m_<slot>`, created as the object
// creates it when missing), outbound records as insertOutbound and the answers of their calls
// leave them once settled (Idempotency-Key and fingerprint kept, one claim made and answered,
// `pending = 0`: off their number's work list), inbound records as insertInbound does. Ids are
// shaped like the object's: outbound a UUIDv7 of the acceptance time (newJobId), inbound of the
// operator's time in whole seconds (inboundMessageId), with random other bits.
// The object's own bookkeeping about its records is kept true by construction:
// - counts are derived from the slot tables (counts.ts), so there is nothing to add: the object
//   counts the seeded records when it first needs a slot's counts;
// - no record is queued, processing or pending (a number rebuilds its queue from `pending = 1`
//   and would send it), none is in the last RATE_WINDOW_MARGIN_MS (the 1200/min window is rebuilt
//   from the records on start), and all are within the last SEED_SPAN_MS, under the 48 hours after
//   which an object over its byte budget starts moving slots to history (history-tiering.ts);
// - the day ledger (meta `day:<n>`) is left as it is: nothing moved or archived.
// Not seeded: the delivery log (3 days). GET /messages does not read it; the report says so.
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { SLOT_COLUMNS, slotOf, slotTable, slotTableDdl, uuidV7 } from "./slots.mjs";

const require = createRequire(import.meta.url);

/** @typedef {"sent" | "delivered" | "read" | "failed" | "failed-after-sent" | "inbound"} Shape */

/** How far back the seeded records go: ~40 hours, the hot tables of a busy workspace (under the 48-hour window). */
export const SEED_SPAN_MS = 40 * 60 * 60 * 1000;
export const RATE_WINDOW_MARGIN_MS = 5 * 60 * 1000;
export const BODY_CHARS = 200;

/**
 * node:sqlite without its "experimental" warning on every run (Node 22 prints one on first load).
 * @returns {typeof import("node:sqlite")}
 */
export function loadSqlite() {
  const emit = process.emitWarning;
  process.emitWarning = /** @type {typeof process.emitWarning} */ (
    (/** @type {string | Error} */ warning, /** @type {unknown[]} */ ...rest) => {
      if (String(warning).includes("SQLite is an experimental feature")) return;
      Reflect.apply(emit, process, [warning, ...rest]);
    }
  );
  try {
    return require("node:sqlite");
  } finally {
    process.emitWarning = emit;
  }
}

const TEMPLATES = [
  "Hello {n}, your order #{k} has shipped and should arrive within two business days. Track it any time in the app; reply STOP to opt out.",
  "Your verification code is {k}. It expires in 10 minutes. If you did not ask for it, ignore this message. Ref {n}.",
  "Reminder: your appointment with Dr. {n} is tomorrow at {h}:30. Reply 1 to confirm or 2 to reschedule. Address: 221B Baker Street.",
  "Hi {n}! Thanks for contacting support, ticket {k} is open and an agent will answer you shortly. Business hours: 8h to 20h.",
];
const NAMES = [
  "Ana",
  "Bruno",
  "Carla",
  "Diego",
  "Elisa",
  "Fábio",
  "Gabriela",
  "Hugo",
  "Iara",
  "João",
  "Karina",
  "Lucas",
];

/** An operator message id of the usual length (55 characters, "wamid." and base64), unique per row. @param {Buffer} rest @param {number} i */
const wamidOf = (rest, i) =>
  `wamid.HBgNNTUxMTk${rest.toString("base64url")}${String(i).padStart(8, "0")}FQIAEhggQjRBRjQ5`.slice(0, 58);

/** A realistic body of exactly BODY_CHARS characters. @param {number} i */
function bodyOf(i) {
  const t = /** @type {string} */ (TEMPLATES[i % TEMPLATES.length])
    .replace("{n}", /** @type {string} */ (NAMES[i % NAMES.length]))
    .replace("{k}", String(100000 + ((i * 7919) % 900000)))
    .replace("{h}", String(8 + (i % 10)));
  return `${t} ${"Visit example.com/help for more.".repeat(3)}`.slice(0, BODY_CHARS).padEnd(BODY_CHARS, ".");
}

/**
 * The rows' mix, in 20ths: 16 outbound (10 sent, of them 4 delivered and 3 of those read; 1 failed
 * after processing; 1 failed after sent, reported by the operator), 4 inbound.
 * @param {number} r @returns {Shape}
 */
function shapeOf(r) {
  const k = r % 20;
  if (k >= 16) return "inbound";
  if (k === 14) return "failed";
  if (k === 15) return "failed-after-sent";
  if (k < 3) return "read";
  if (k < 4) return "delivered";
  return "sent";
}

/** An Idempotency-Key as clients make them (a UUID) from 16 random bytes. @param {Buffer} b */
const keyOf = (b) => {
  const hex = b.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};

/**
 * Inserts `count` message records into the workspace object's SQLite file at `file` (the object
 * must be stopped), spread over the SEED_SPAN_MS before `now` (the newest RATE_WINDOW_MARGIN_MS
 * before it), over `numberIds`, each into its slot's table. One transaction, one prepared
 * statement per slot table. Returns what it wrote.
 * @param {{ file: string, count: number, numberIds: string[], now: number }} o
 */
export function seedMessages({ file, count, numberIds, now }) {
  const { DatabaseSync } = loadSqlite();
  const db = new DatabaseSync(file);
  const started = performance.now();
  try {
    db.exec("PRAGMA cache_size = -262144"); // 256 MiB: the indexes' pages stay in memory while they grow
    // A crash mid-seed loses nothing that matters (the bench state is rebuilt on every run).
    db.exec("PRAGMA synchronous = OFF");
    const newest = now - RATE_WINDOW_MARGIN_MS;
    const oldest = now - SEED_SPAN_MS;
    const step = (newest - oldest) / count;
    /** @type {Map<number, import("node:sqlite").StatementSync>} */
    const inserts = new Map();
    /** The insert into a slot's table, the table created as the object creates it (or checked against its columns). @param {number} slot */
    const insertInto = (slot) => {
      let insert = inserts.get(slot);
      if (insert) return insert;
      const t = slotTable(slot);
      const columns = db
        .prepare(`SELECT name FROM pragma_table_info('${t}')`)
        .all()
        .map((r) => String(r.name));
      if (columns.length === 0) for (const statement of slotTableDdl(slot)) db.exec(statement);
      else if (columns.join(",") !== SLOT_COLUMNS.join(","))
        throw new Error(`${t} has the columns ${columns.join(", ")}: the seeder no longer matches the object's schema`);
      insert = db.prepare(
        `INSERT INTO ${t} (id, direction, channel_number_id, recipient, type, body, content, status, idem_key, fingerprint,
           pending, attempts, answered, next_attempt_at, upstream_message_id, error_code, error_message, error_retriable,
           upstream_error_code, created_at, updated_at, processing_at, sent_at, failed_at, delivered_at, read_at,
           outcome_unknown_since, received_at)
         VALUES (?, ?, ?, ?, 'text', ?, NULL, ?, ?, ?, 0, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)`,
      );
      inserts.set(slot, insert);
      return insert;
    };
    // 10 bytes of each id's random bits, 16 of its key, 32 of its fingerprint (a SHA-256 in hex).
    const random = randomBytes(58 * count);
    /** @type {Record<Shape, number>} */
    const shapes = { sent: 0, delivered: 0, read: 0, failed: 0, "failed-after-sent": 0, inbound: 0 };
    db.exec("BEGIN");
    try {
      for (let i = 0; i < count; i++) {
        const at = Math.floor(oldest + i * step);
        const rest = random.subarray(i * 58, i * 58 + 10);
        // Number and shape from the id's random bits: independent of each other and of the time.
        const numberId = /** @type {string} */ (numberIds[rest.readUInt16BE(0) % numberIds.length]);
        const counterpart = `55119${String(10_000_000 + ((i * 104_729) % 89_999_999)).padStart(8, "0")}`;
        const shape = shapeOf(rest.readUInt16BE(2));
        shapes[shape]++;
        if (shape === "inbound") {
          // The operator's time (whole seconds) names the record; created_at is when it was recorded.
          const operatorAt = Math.floor((at - 800) / 1000) * 1000;
          insertInto(slotOf(operatorAt)).run(
            uuidV7(operatorAt, rest),
            "inbound",
            numberId,
            counterpart,
            bodyOf(i),
            "received",
            null,
            null,
            0,
            0,
            wamidOf(rest, i),
            null,
            null,
            null,
            null,
            at,
            at,
            null,
            null,
            null,
            null,
            null,
            operatorAt,
          );
          continue;
        }
        const processing = at + 40;
        const sent = shape === "failed" ? null : at + 350;
        const delivered = shape === "delivered" || shape === "read" ? at + 2_500 : null;
        const read = shape === "read" ? at + 60_000 : null;
        const failed = shape === "failed" ? at + 400 : shape === "failed-after-sent" ? at + 1_400 : null;
        const error =
          shape === "failed"
            ? ["invalid_parameters", "A parameter value is not valid.", 0, "131009"] // src/upstream/error-codes.ts
            : shape === "failed-after-sent"
              ? ["recipient_unreachable", "The message could not be delivered to the recipient.", 0, "131026"]
              : [null, null, null, null];
        const updated = Math.max(processing, sent ?? 0, delivered ?? 0, read ?? 0, failed ?? 0);
        insertInto(slotOf(at)).run(
          uuidV7(at, rest),
          "outbound",
          numberId,
          counterpart,
          bodyOf(i),
          failed !== null ? "failed" : "sent",
          keyOf(random.subarray(i * 58 + 10, i * 58 + 26)),
          random.subarray(i * 58 + 26, i * 58 + 58).toString("hex"),
          // One claim, answered: the call was made and its outcome reported.
          1,
          1,
          // A call that failed while processing has no operator id.
          shape === "failed" ? null : wamidOf(rest, i),
          ...error,
          at,
          updated,
          processing,
          sent,
          failed,
          delivered,
          read,
          null,
        );
      }
      db.exec("COMMIT");
    } catch (err) {
      db.exec("ROLLBACK");
      throw err;
    }
    const ms = performance.now() - started;
    return { count, ms, oldest, newest, shapes, slotTables: inserts.size };
  } finally {
    db.close();
  }
}
