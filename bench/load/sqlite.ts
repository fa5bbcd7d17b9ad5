// `npm run bench`: reads a workspace object's SQLite file in wrangler dev's local state, read-only
// (the file is in WAL mode, so reading beside the running object is safe): which file is whose, its
// size and where its bytes are. Table names as the engine makes them: slot tables `m_<slot>`
// (day-tables.ts), the delivery log's day tables `d_<day>` (delivery-log.ts).
import { readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { DatabaseSync } from "node:sqlite";

const require = createRequire(import.meta.url);
const isSlotTable = (name: string) => /^m_\d+$/.test(name);
const isDeliveryTable = (name: string) => /^d_\d+$/.test(name);

/** Runs `read` on the file opened read-only (node:sqlite, without its "experimental" warning), and closes it. */
function withDatabase<T>(file: string, read: (db: DatabaseSync) => T): T {
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    if (!String(warning).includes("SQLite is an experimental feature"))
      Reflect.apply(emit, process, [warning, ...rest]);
  }) as typeof process.emitWarning;
  let sqlite: typeof import("node:sqlite");
  try {
    sqlite = require("node:sqlite");
  } finally {
    process.emitWarning = emit;
  }
  const db = new sqlite.DatabaseSync(file, { readOnly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}
const one = (db: DatabaseSync, sql: string, ...params: string[]) =>
  Number(Object.values(db.prepare(sql).get(...params) ?? {})[0] ?? 0);
const tables = (db: DatabaseSync) =>
  db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
    .all()
    .map((r) => String(r.name));
const slotTables = (db: DatabaseSync) => tables(db).filter(isSlotTable);
const attemptsIn = (db: DatabaseSync) =>
  tables(db)
    .filter(isDeliveryTable)
    .reduce((n, t) => n + one(db, `SELECT SUM(json_array_length(attempts)) FROM ${t}`), 0);

/**
 * The SQLite file of the workspace object that holds the message `messageId`: its own tables are the
 * only place that names it (an object knows its id from the name it was created with; its file name,
 * a hash of the id, does not tell).
 */
export function findWorkspaceFile(stateDir: string, messageId: string) {
  const doDir = join(stateDir, "v3", "do");
  const classDir = readdirSync(doDir).find((d) => d.endsWith("-WorkspaceDurableObject"));
  for (const name of classDir ? readdirSync(join(doDir, classDir)) : []) {
    if (!name.endsWith(".sqlite") || name === "metadata.sqlite") continue;
    const file = join(doDir, classDir as string, name);
    if (
      withDatabase(file, (db) =>
        slotTables(db).some((t) => one(db, `SELECT COUNT(*) FROM ${t} WHERE id = ?`, messageId) > 0),
      )
    )
      return file;
  }
  return null;
}

/** Bytes and rows of one b-tree group (`attempts`: the delivery attempts its rows hold). */
export interface TableGroup {
  bytes: number;
  rows: number;
  attempts?: number;
  btrees: Record<string, number>;
}

/**
 * The database's size as `ctx.storage.sql.databaseSize` reports it (page count × page size, free
 * pages included), and where its bytes are (dbstat): the slot tables added up (`slots`, each b-tree
 * by its suffix: the table itself as `records`, then `_to`, `_key`, `_work`, `_failed`), the
 * delivery log's day tables added up (`deliveries`), each other table by name.
 */
export function storageOf(file: string) {
  return withDatabase(file, (db) => {
    const pageSize = one(db, "PRAGMA page_size");
    const owner = new Map(
      db
        .prepare("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')")
        .all()
        .map((r) => [String(r.name), String(r.tbl_name)]),
    );
    const slots: TableGroup = { bytes: 0, rows: 0, btrees: {} };
    const deliveries: TableGroup = { bytes: 0, rows: 0, attempts: attemptsIn(db), btrees: {} };
    const others: Record<string, TableGroup> = {};
    const groupOf = (table: string) =>
      isSlotTable(table)
        ? slots
        : isDeliveryTable(table)
          ? deliveries
          : (others[table] ??= { bytes: 0, rows: 0, btrees: {} });
    for (const r of db.prepare("SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name").all()) {
      const name = String(r.name);
      const table = owner.get(name) ?? name;
      const group = groupOf(table);
      const btree = name === table ? "records" : name.slice(table.length);
      group.bytes += Number(r.bytes);
      group.btrees[btree] = (group.btrees[btree] ?? 0) + Number(r.bytes);
    }
    const counted = tables(db).filter((t) => !t.startsWith("sqlite_") && !t.startsWith("_cf_"));
    for (const t of counted) groupOf(t).rows += one(db, `SELECT COUNT(*) FROM ${t}`);
    return {
      bytes: pageSize * one(db, "PRAGMA page_count"),
      pageSize,
      freePages: one(db, "PRAGMA freelist_count"),
      slotTables: counted.filter(isSlotTable).length,
      deliveryTables: counted.filter(isDeliveryTable).length,
      slots,
      deliveries,
      others,
    };
  });
}
export type Storage = ReturnType<typeof storageOf>;

/** What the tiering steps would have changed: the records left in the slot tables, and the days moved or archived. */
export function retentionState(file: string) {
  return withDatabase(file, (db) => {
    const slots = slotTables(db);
    const moved = db
      .prepare("SELECT v FROM meta WHERE k LIKE 'day:%'")
      .all()
      .filter((r) => {
        const s = JSON.parse(String(r.v));
        return s.moved || s.history || s.archiving || s.archived;
      });
    return {
      records: slots.reduce((n, t) => n + one(db, `SELECT COUNT(*) FROM ${t}`), 0),
      slotTables: slots.length,
      historyDays: moved.length,
    };
  });
}

/** Records not yet settled (queued, processing, or in a number's work list), and the delivery attempts logged so far. */
export function pendingWork(file: string) {
  return withDatabase(file, (db) => ({
    active: slotTables(db).reduce(
      (n, t) => n + one(db, `SELECT COUNT(*) FROM ${t} WHERE pending = 1 OR status IN ('queued', 'processing')`),
      0,
    ),
    logged: attemptsIn(db),
  }));
}
