// `npm run bench`: writes message records straight into a stopped workspace
// object's SQLite file (wrangler dev's local state), so that GET /messages can be
// measured on a workspace with a million rows without sending them for hours.
//
// The rows are what the object itself writes (src/durable-objects/workspace/
// messages.ts): outbound rows as insertOutbound + writeLifecycle leave them once
// settled, inbound rows as insertInbound does, ids shaped like the object's
// (deriveJobId: UUIDv7 of the acceptance day's start; newUuidV7: of the receipt).
// The object's own bookkeeping about its rows is kept true:
// - daily_counts gains accepted / sent / failed / received per (day, number),
//   marked dirty (D1 has not seen them), as countOne would have left it;
// - no row is queued or processing (the stranded-message check would hand it to
//   its number again), none is in the last RATE_WINDOW_MARGIN_MS (the 1200/min
//   window is rebuilt from the rows on start), and all are younger than the hot
//   window by HOT_WINDOW_MARGIN_MS (the history step would start moving them);
// - history_boundary, history_days and the events cursor are left as they are:
//   nothing is moved to history, and no event is added.
// Not seeded: events (2–4 per message, kept 24 h once settled) and idempotency
// keys (24 h). GET /messages reads neither; the report says so.
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** @typedef {"sent" | "delivered" | "read" | "failed" | "failed-after-sent" | "inbound"} Shape */

const DAY_MS = 24 * 60 * 60 * 1000;
const HOT_WINDOW_MS = 48 * 60 * 60 * 1000; // src/durable-objects/workspace/workspace.ts
export const HOT_WINDOW_MARGIN_MS = 4 * 60 * 60 * 1000;
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

/** A UUIDv7 string with the given millisecond timestamp and random other bits (src/domain/job-id.ts). @param {number} ms @param {Buffer} rest */
function uuidV7(ms, rest) {
  const b = Buffer.alloc(16);
  b.writeUIntBE(ms, 0, 6);
  rest.copy(b, 6, 0, 10);
  b.writeUInt8((b.readUInt8(6) & 0x0f) | 0x70, 6);
  b.writeUInt8((b.readUInt8(8) & 0x3f) | 0x80, 8);
  const hex = b.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
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

/**
 * Inserts `count` message rows into the workspace object's SQLite file at `file`
 * (the object must be stopped), spread over the hot window before `now`, over
 * `numberIds`. One transaction, prepared statements. Returns what it wrote.
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
    const columns = db
      .prepare("SELECT name FROM pragma_table_info('messages')")
      .all()
      .map((r) => r.name);
    for (const c of [
      "direction",
      "type",
      "content",
      "outcome_unknown_since",
      "received_at",
      "copy_pending",
      "version",
    ]) {
      if (!columns.includes(c))
        throw new Error(`messages has no column ${c}: the seeder no longer matches the object's schema`);
    }
    const insert = db.prepare(
      `INSERT INTO messages (id, direction, channel_number_id, recipient, type, body, content, status, upstream_message_id,
         error_code, error_message, error_retriable, upstream_error_code, created_at, updated_at, processing_at, sent_at,
         failed_at, delivered_at, read_at, outcome_unknown_since, received_at, version, copy_pending)
       VALUES (?, ?, ?, ?, 'text', ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, 0)`,
    );
    const count1 = db.prepare(
      `INSERT INTO daily_counts (day, channel_number_id, accepted, sent, failed, received, dirty) VALUES (?, ?, ?, ?, ?, ?, 1)
       ON CONFLICT (day, channel_number_id) DO UPDATE SET accepted = accepted + excluded.accepted, sent = sent + excluded.sent,
         failed = failed + excluded.failed, received = received + excluded.received, dirty = 1`,
    );
    const newest = now - RATE_WINDOW_MARGIN_MS;
    const oldest = now - HOT_WINDOW_MS + HOT_WINDOW_MARGIN_MS;
    const step = (newest - oldest) / count;
    /** @type {Map<string, { day: number, numberId: string, accepted: number, sent: number, failed: number, received: number }>} */
    const counts = new Map();
    /** @param {number} day @param {string} numberId @param {"accepted" | "sent" | "failed" | "received"} field */
    const tally = (day, numberId, field) => {
      const key = `${day}\n${numberId}`;
      let c = counts.get(key);
      if (!c) counts.set(key, (c = { day, numberId, accepted: 0, sent: 0, failed: 0, received: 0 }));
      c[field]++;
    };
    const random = randomBytes(10 * count);
    /** @type {Record<Shape, number>} */
    const shapes = { sent: 0, delivered: 0, read: 0, failed: 0, "failed-after-sent": 0, inbound: 0 };
    db.exec("BEGIN");
    try {
      for (let i = 0; i < count; i++) {
        const at = Math.floor(oldest + i * step);
        const rest = random.subarray(i * 10, i * 10 + 10);
        // Number and shape from the id's random bits: independent of each other and of the time.
        const numberId = /** @type {string} */ (numberIds[rest.readUInt16BE(0) % numberIds.length]);
        const counterpart = `55119${String(10_000_000 + ((i * 104_729) % 89_999_999)).padStart(8, "0")}`;
        const shape = shapeOf(rest.readUInt16BE(2));
        shapes[shape]++;
        const day = Math.floor(at / DAY_MS);
        if (shape === "inbound") {
          const id = uuidV7(at, rest);
          // An inbound row: received_at is the operator's time, created_at when it was recorded.
          insert.run(
            id,
            "inbound",
            numberId,
            counterpart,
            bodyOf(i),
            "received",
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
            at - 800,
            1,
          );
          tally(day, numberId, "received");
          continue;
        }
        const id = uuidV7(day * DAY_MS, rest);
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
        // One version per lifecycle write after the insert (processing, sent, delivered, read, failed).
        const version = 1 + [processing, sent, delivered, read, failed].filter((t) => t !== null).length;
        insert.run(
          id,
          "outbound",
          numberId,
          counterpart,
          bodyOf(i),
          failed !== null ? "failed" : "sent",
          wamidOf(rest, i),
          ...error,
          at,
          updated,
          processing,
          sent,
          failed,
          delivered,
          read,
          null,
          version,
        );
        tally(day, numberId, "accepted");
        if (sent !== null) tally(day, numberId, "sent");
        if (failed !== null) tally(day, numberId, "failed");
      }
      for (const c of counts.values()) count1.run(c.day, c.numberId, c.accepted, c.sent, c.failed, c.received);
      db.exec("COMMIT");
    } catch (err) {
      db.exec("ROLLBACK");
      throw err;
    }
    const ms = performance.now() - started;
    return { count, ms, oldest, newest, shapes, countRows: counts.size };
  } finally {
    db.close();
  }
}
