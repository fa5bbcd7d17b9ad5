// `npm run bench`: reads a workspace object's SQLite file in wrangler dev's local
// state (read-only; the file is in WAL mode, so reading beside the running
// object is safe): which file is whose, its size and where the bytes are, and
// what GET /messages must answer for it.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { loadSqlite } from "./seed-messages.mjs";

const SCAN_BUDGET = 1_000; // src/durable-objects/workspace/message-queries.ts

/** @typedef {import("node:sqlite").DatabaseSync} Database */

/** One row's column as a number (COUNT(*), PRAGMA values). @param {Record<string, unknown> | undefined} row @param {string} column */
const numberOf = (row, column) => Number(row?.[column] ?? 0);

/**
 * Runs `read` on the file opened read-only, and closes it.
 * @template T
 * @param {string} file @param {(db: Database) => T} read @returns {T}
 */
function withDatabase(file, read) {
  const { DatabaseSync } = loadSqlite();
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** The SQLite file of the workspace object that serves `workspaceId` (its `meta` names it). @param {string} stateDir @param {string} workspaceId */
export function findWorkspaceFile(stateDir, workspaceId) {
  const doDir = join(stateDir, "v3", "do");
  const classDir = readdirSync(doDir).find((d) => d.endsWith("-WorkspaceDurableObject"));
  if (!classDir) return null;
  for (const name of readdirSync(join(doDir, classDir))) {
    if (!name.endsWith(".sqlite") || name === "metadata.sqlite") continue;
    const file = join(doDir, classDir, name);
    const owns = withDatabase(file, (db) => {
      const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
      return Boolean(hasMeta) && db.prepare("SELECT v FROM meta WHERE k = 'workspace_id'").get()?.v === workspaceId;
    });
    if (owns) return file;
  }
  return null;
}

const ROW_TABLES = ["messages", "events", "idempotency_keys", "event_attempts", "daily_counts"];

/**
 * The database's size as `ctx.storage.sql.databaseSize` reports it (page count × page
 * size, free pages included), the bytes of each table with its indexes (dbstat), and
 * the row counts.
 * @param {string} file
 * @returns {{ bytes: number, pageSize: number, pageCount: number, freePages: number, tables: Record<string, number>, rows: Record<string, number> }}
 */
export function storageOf(file) {
  return withDatabase(file, (db) => {
    const pageSize = numberOf(db.prepare("PRAGMA page_size").get(), "page_size");
    const pageCount = numberOf(db.prepare("PRAGMA page_count").get(), "page_count");
    const freePages = numberOf(db.prepare("PRAGMA freelist_count").get(), "freelist_count");
    const owner = new Map(
      db
        .prepare("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')")
        .all()
        .map((r) => [String(r.name), String(r.tbl_name)]),
    );
    /** @type {Record<string, number>} */
    const tables = {};
    for (const r of db.prepare("SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name").all()) {
      const table = owner.get(String(r.name)) ?? String(r.name);
      tables[table] = (tables[table] ?? 0) + Number(r.bytes);
    }
    /** @type {Record<string, number>} */
    const rows = {};
    for (const t of ROW_TABLES) rows[t] = numberOf(db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get(), "n");
    return { bytes: pageSize * pageCount, pageSize, pageCount, freePages, tables, rows };
  });
}

/** What the retention steps would have changed: the rows left here, and the days moved to history shards. */
/** @param {string} file */
export function retentionState(file) {
  return withDatabase(file, (db) => ({
    messages: numberOf(db.prepare("SELECT COUNT(*) AS n FROM messages").get(), "n"),
    historyDays: numberOf(db.prepare("SELECT COUNT(*) AS n FROM history_days").get(), "n"),
  }));
}

/** Work the object still has to write about its messages: messages not yet settled, events not yet reported. */
/** @param {string} file */
export function pendingWork(file) {
  return withDatabase(file, (db) => ({
    active: numberOf(
      db.prepare("SELECT COUNT(*) AS n FROM messages WHERE status IN ('queued', 'processing')").get(),
      "n",
    ),
    events: numberOf(db.prepare("SELECT COUNT(*) AS n FROM events WHERE delivery = 'pending'").get(), "n"),
  }));
}

/**
 * The ids GET /messages must answer (limit 20): the first page, the second one
 * (after the first page's cursor), and a page filtered by status and number, as
 * listPage reads it: the number's index, SCAN_BUDGET rows, the status applied to
 * what was read.
 * @param {string} file @param {{ status: string, channelNumberId: string, limit: number }} page
 */
export function expectedPages(file, { status, channelNumberId, limit }) {
  return withDatabase(file, (db) => {
    const newest = db
      .prepare("SELECT id FROM messages ORDER BY created_at DESC, id DESC LIMIT ?")
      .all(2 * limit)
      .map((r) => String(r.id));
    const scanned = db
      .prepare("SELECT id, status FROM messages WHERE channel_number_id = ? ORDER BY created_at DESC, id DESC LIMIT ?")
      .all(channelNumberId, SCAN_BUDGET);
    const filtered = scanned
      .filter((r) => r.status === status)
      .slice(0, limit)
      .map((r) => String(r.id));
    return { first: newest.slice(0, limit), second: newest.slice(limit), filtered, filterScanned: scanned.length };
  });
}
