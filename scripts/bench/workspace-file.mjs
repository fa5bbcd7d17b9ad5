// `npm run bench`: reads a workspace object's SQLite file in wrangler dev's local
// state (read-only; the file is in WAL mode, so reading beside the running
// object is safe): which file is whose, its size and where the bytes are.
import { readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(import.meta.url);

/**
 * node:sqlite without its "experimental" warning on every run (Node 22 prints one on first load).
 * @returns {typeof import("node:sqlite")}
 */
function loadSqlite() {
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

/** The slot of a slot table's name (`m_<slot>`, day-tables.ts), or null for any other table. @param {string} name */
function slotOfTable(name) {
  const m = /^m_(\d+)$/.exec(name);
  return m ? Number(m[1]) : null;
}
/** @param {number} slot */
const slotTable = (slot) => `m_${slot}`;
/** Whether a table is a day table of the delivery log (delivery-log.ts `d_<day>`). @param {string} name */
const isDeliveryTable = (name) => /^d_\d+$/.test(name);

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

/** The tables of a file, by name. @param {Database} db @returns {string[]} */
const tableNames = (db) =>
  db
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
    .all()
    .map((r) => String(r.name));

/** The slots with a table, ascending. @param {Database} db */
const slotsOf = (db) =>
  tableNames(db)
    .map(slotOfTable)
    .filter((s) => s !== null)
    .sort((a, b) => a - b);

/**
 * The SQLite file of the workspace object that holds the message `messageId` (an id the API gave
 * for one of its sends): the object's own tables are the only place that names it, since a
 * workspace object knows its id from the name it was created with (`ctx.id.name`), which its
 * file name (a hash of the id) does not tell.
 * @param {string} stateDir @param {string} messageId
 */
export function findWorkspaceFile(stateDir, messageId) {
  const doDir = join(stateDir, "v3", "do");
  const classDir = readdirSync(doDir).find((d) => d.endsWith("-WorkspaceDurableObject"));
  if (!classDir) return null;
  for (const name of readdirSync(join(doDir, classDir))) {
    if (!name.endsWith(".sqlite") || name === "metadata.sqlite") continue;
    const file = join(doDir, classDir, name);
    const owns = withDatabase(file, (db) =>
      slotsOf(db).some((slot) => db.prepare(`SELECT 1 FROM ${slotTable(slot)} WHERE id = ?`).get(messageId)),
    );
    if (owns) return file;
  }
  return null;
}

/**
 * Bytes and rows of one b-tree group: a slot table (`m_<slot>` with its indexes `_to`, `_key`,
 * `_work`, `_failed`), the delivery log's day tables (`d_<day>`; `attempts` counts the delivery
 * attempts its rows hold), or any other table.
 * @typedef {{ bytes: number, rows: number, attempts?: number, btrees: Record<string, number> }} TableGroup
 */

/**
 * The database's size as `ctx.storage.sql.databaseSize` reports it (page count × page size, free
 * pages included), and where its bytes are (dbstat): the slot tables added up (`slots`, each of
 * their b-trees by its suffix: the table itself as `records`, then `_to`, `_key`, `_work`,
 * `_failed`), the delivery log's day tables added up (`deliveries`), each other table by name.
 * @param {string} file
 * @returns {{ bytes: number, pageSize: number, pageCount: number, freePages: number, slotTables: number, deliveryTables: number,
 *   slots: TableGroup, deliveries: TableGroup, others: Record<string, TableGroup> }}
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
    /** @type {TableGroup} */
    const slots = { bytes: 0, rows: 0, btrees: {} };
    /** @type {TableGroup} */
    const deliveries = { bytes: 0, rows: 0, attempts: 0, btrees: {} };
    /** @type {Record<string, TableGroup>} */
    const others = {};
    /** @param {string} table */
    const groupOf = (table) =>
      slotOfTable(table) !== null
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
    let slotTables = 0;
    let deliveryTables = 0;
    for (const t of tableNames(db)) {
      if (t.startsWith("sqlite_") || t.startsWith("_cf_")) continue;
      const group = groupOf(t);
      group.rows += numberOf(db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get(), "n");
      if (group === slots) slotTables++;
      if (group === deliveries) {
        deliveryTables++;
        deliveries.attempts =
          (deliveries.attempts ?? 0) +
          numberOf(db.prepare(`SELECT SUM(json_array_length(attempts)) AS n FROM ${t}`).get(), "n");
      }
    }
    return {
      bytes: pageSize * pageCount,
      pageSize,
      pageCount,
      freePages,
      slotTables,
      deliveryTables,
      slots,
      deliveries,
      others,
    };
  });
}

/**
 * What the tiering steps would have changed: the records left in the slot tables, the slot tables,
 * and the days the day ledger says moved (partly or wholly) to history shards or were archived.
 * @param {string} file
 */
export function retentionState(file) {
  return withDatabase(file, (db) => {
    const slots = slotsOf(db);
    let records = 0;
    for (const s of slots) records += numberOf(db.prepare(`SELECT COUNT(*) AS n FROM ${slotTable(s)}`).get(), "n");
    let historyDays = 0;
    for (const r of db.prepare("SELECT v FROM meta WHERE k LIKE 'day:%'").all()) {
      const state = JSON.parse(String(r.v));
      if (state.moved || state.history || state.archiving || state.archived) historyDays++;
    }
    return { records, slotTables: slots.length, historyDays };
  });
}

/**
 * Work the object still has about its messages: records not yet settled (queued, processing, or
 * still in a number's work list), and the delivery attempts its log holds so far.
 * @param {string} file
 */
export function pendingWork(file) {
  return withDatabase(file, (db) => {
    let active = 0;
    for (const s of slotsOf(db)) {
      active += numberOf(
        db
          .prepare(`SELECT COUNT(*) AS n FROM ${slotTable(s)} WHERE pending = 1 OR status IN ('queued', 'processing')`)
          .get(),
        "n",
      );
    }
    let logged = 0;
    for (const t of tableNames(db).filter(isDeliveryTable))
      logged += numberOf(db.prepare(`SELECT SUM(json_array_length(attempts)) AS n FROM ${t}`).get(), "n");
    return { active, logged };
  });
}
