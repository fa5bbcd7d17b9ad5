// `npm run bench`: reads a workspace object's SQLite file in wrangler dev's local
// state (read-only; the file is in WAL mode, so reading beside the running
// object is safe): which file is whose, its size and where the bytes are, and
// what GET /messages must answer for it.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { loadSqlite } from "./bench-seed-messages.mjs";

const SCAN_BUDGET = 1_000; // src/durable-objects/workspace/message-queries.ts

/** Runs `read` on the file opened read-only, and closes it. */
function withDatabase(file, read) {
  const { DatabaseSync } = loadSqlite();
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** The SQLite file of the workspace object that serves `workspaceId` (its `meta` names it). */
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
 */
export function storageOf(file) {
  return withDatabase(file, (db) => {
    const pageSize = db.prepare("PRAGMA page_size").get().page_size;
    const pageCount = db.prepare("PRAGMA page_count").get().page_count;
    const freePages = db.prepare("PRAGMA freelist_count").get().freelist_count;
    const owner = new Map(db.prepare("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')").all().map((r) => [r.name, r.tbl_name]));
    const tables = {};
    for (const r of db.prepare("SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name").all()) {
      const table = owner.get(r.name) ?? r.name;
      tables[table] = (tables[table] ?? 0) + r.bytes;
    }
    const rows = {};
    for (const t of ROW_TABLES) rows[t] = db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get().n;
    return { bytes: pageSize * pageCount, pageSize, pageCount, freePages, tables, rows };
  });
}

/** What the retention steps would have changed: the rows left here, and the days moved to history shards. */
export function retentionState(file) {
  return withDatabase(file, (db) => ({
    messages: db.prepare("SELECT COUNT(*) AS n FROM messages").get().n,
    historyDays: db.prepare("SELECT COUNT(*) AS n FROM history_days").get().n,
  }));
}

/** Work the object still has to write about its messages: messages not yet settled, events not yet reported. */
export function pendingWork(file) {
  return withDatabase(file, (db) => ({
    active: db.prepare("SELECT COUNT(*) AS n FROM messages WHERE status IN ('queued', 'processing')").get().n,
    events: db.prepare("SELECT COUNT(*) AS n FROM events WHERE delivery = 'pending'").get().n,
  }));
}

/**
 * The ids GET /messages must answer (limit 20): the first page, the second one
 * (after the first page's cursor), and a page filtered by status and number, as
 * listPage reads it: the number's index, SCAN_BUDGET rows, the status applied to
 * what was read.
 */
export function expectedPages(file, { status, channelNumberId, limit }) {
  return withDatabase(file, (db) => {
    const newest = db.prepare("SELECT id FROM messages ORDER BY created_at DESC, id DESC LIMIT ?").all(2 * limit).map((r) => r.id);
    const scanned = db
      .prepare("SELECT id, status FROM messages WHERE channel_number_id = ? ORDER BY created_at DESC, id DESC LIMIT ?")
      .all(channelNumberId, SCAN_BUDGET);
    const filtered = scanned.filter((r) => r.status === status).slice(0, limit).map((r) => r.id);
    return { first: newest.slice(0, limit), second: newest.slice(limit), filtered, filterScanned: scanned.length };
  });
}
