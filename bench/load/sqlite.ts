// `npm run bench`: a workspace object's SQLite file in wrangler dev's local state, read-only (the file is in
// WAL mode, so reading beside the running object is safe). Table names as the engine makes them: slot
// tables `m_<slot>` (day-tables.ts), the delivery log's day tables `d_<day>` (delivery-log.ts).
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

const groupOf = (table: string) => (/^m_\d+$/.test(table) ? "slots" : /^d_\d+$/.test(table) ? "log" : "other");

/** Runs `read` on the file opened read-only with its first value of a statement (`one`) and its tables. */
function read<T>(
  file: string,
  fn: (one: (sql: string, ...params: string[]) => number, tables: string[], db: DatabaseSync) => T,
) {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const one = (sql: string, ...params: string[]) =>
      Number(Object.values(db.prepare(sql).get(...params) ?? {})[0] ?? 0);
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
      .all()
      .map((r) => String(r.name));
    return fn(one, tables, db);
  } finally {
    db.close();
  }
}
const sumOver = (tables: string[], group: string, value: (t: string) => number) =>
  tables.filter((t) => groupOf(t) === group).reduce((n, t) => n + value(t), 0);

/**
 * The SQLite file of the workspace object that holds the message `messageId`: its own tables are the only
 * place that names it (the file's name is a hash of the object's id).
 */
export function findWorkspaceFile(stateDir: string, messageId: string) {
  const doDir = join(stateDir, "v3", "do");
  const classDir = join(doDir, readdirSync(doDir).find((d) => d.endsWith("-WorkspaceDurableObject")) ?? "");
  return (
    readdirSync(classDir)
      .filter((name) => name.endsWith(".sqlite") && name !== "metadata.sqlite")
      .map((name) => join(classDir, name))
      .find((file) =>
        read(
          file,
          (one, tables) =>
            sumOver(tables, "slots", (t) => one(`SELECT COUNT(*) FROM ${t} WHERE id = ?`, messageId)) > 0,
        ),
      ) ?? null
  );
}

/**
 * The file's size as `ctx.storage.sql.databaseSize` reports it (page count × page size), the bytes
 * (dbstat, indexes included) and rows of the slot tables and of the delivery log (with its attempts),
 * and the records not yet settled.
 */
export function storageOf(file: string) {
  return read(file, (one, tables, db) => {
    const bytes = { slots: 0, log: 0, other: 0 };
    const owned =
      "SELECT m.tbl_name AS t, SUM(s.pgsize) AS b FROM dbstat s JOIN sqlite_master m ON m.name = s.name GROUP BY m.tbl_name";
    for (const r of db.prepare(owned).all()) bytes[groupOf(String(r.t))] += Number(r.b);
    const rows = (group: string) => sumOver(tables, group, (t) => one(`SELECT COUNT(*) FROM ${t}`));
    const pageSize = one("PRAGMA page_size");
    return {
      bytes: pageSize * one("PRAGMA page_count"),
      pageSize,
      slotTables: tables.filter((t) => groupOf(t) === "slots").length,
      slots: { bytes: bytes.slots, rows: rows("slots") },
      log: {
        bytes: bytes.log,
        rows: rows("log"),
        attempts: sumOver(tables, "log", (t) => one(`SELECT SUM(json_array_length(attempts)) FROM ${t}`)),
      },
      // Records not yet settled: queued, processing, or in a number's work list.
      active: sumOver(tables, "slots", (t) =>
        one(`SELECT COUNT(*) FROM ${t} WHERE pending = 1 OR status IN ('queued', 'processing')`),
      ),
    };
  });
}
