import { matches, type Keyset, type MessageFilter } from "../../messages/list";
import { uuidV7Floor } from "../../lib/job-id";
import { slotTable } from "./day-tables";
import type { MessageRow } from "../../messages/record";

export interface Page {
  rows: MessageRow[];
  /** Where the next page continues, or null when nothing older matches in this store. */
  next: Keyset | null;
  /** Rows read to build the page. */
  scanned: number;
}

/** Rows one page may read, whatever the filters: a selective filter on a large workspace answers a short page and a cursor instead of scanning on. */
export const SCAN_BUDGET = 2_000;

/** The index that narrows a slot table's scan most for these filters (each ends in id, the list order); none in a table without its indexes. */
function driverOf(
  table: string,
  f: MessageFilter,
  indexed: boolean,
): { index: string | null; where: string; bindings: SqlStorageValue[]; exact: boolean } {
  const only = (covered: (keyof MessageFilter)[]) =>
    (Object.keys(f) as (keyof MessageFilter)[]).every(
      (k) => f[k] === undefined || covered.includes(k) || k === "createdFrom" || k === "createdUntil",
    );
  if (f.counterpart !== undefined)
    return {
      index: indexed ? `${table}_to` : null,
      where: "recipient = ?",
      bindings: [f.counterpart],
      exact: only(["counterpart"]),
    };
  if (f.status === "failed")
    return {
      index: indexed ? `${table}_failed` : null,
      where: "status = 'failed'",
      bindings: [],
      exact: only(["status", "direction"]),
    };
  return { index: null, where: "1", bindings: [], exact: only([]) };
}

/**
 * One page of a slot table, newest first, strictly older than `beforeId` (null: from its newest):
 * the driving index is read for at most `budget` rows within the time bounds, the other filters
 * are applied to what was read. `next` is where to go on in this table, or null when it is done.
 */
export function slotPage(
  sql: SqlStorage,
  slot: number,
  indexed: boolean,
  f: MessageFilter,
  beforeId: string | null,
  limit: number,
  budget: number,
  keysetOf: (r: MessageRow) => Keyset,
): Page {
  const table = slotTable(slot);
  const d = driverOf(table, f, indexed);
  const conds = [d.where];
  const bindings = [...d.bindings];
  if (f.createdFrom !== undefined) {
    conds.push("id >= ?");
    bindings.push(uuidV7Floor(f.createdFrom));
  }
  if (f.createdUntil !== undefined) {
    conds.push("id < ?");
    bindings.push(uuidV7Floor(f.createdUntil));
  }
  if (beforeId !== null) {
    conds.push("id < ?");
    bindings.push(beforeId);
  }
  const read = d.exact ? Math.min(budget, limit + 1) : budget;
  const scanned = sql
    .exec<MessageRow>(
      `SELECT * FROM ${table}${d.index ? ` INDEXED BY ${d.index}` : ""} WHERE ${conds.join(" AND ")} ORDER BY id DESC LIMIT ?`,
      ...bindings,
      read,
    )
    .toArray();
  const rows: MessageRow[] = [];
  for (const r of scanned) {
    if (!matches(r, f)) continue;
    if (rows.length === limit) return { rows, next: keysetOf(rows[rows.length - 1]!), scanned: scanned.length };
    rows.push(r);
  }
  if (scanned.length < read) return { rows, next: null, scanned: scanned.length };
  const last = rows[rows.length - 1];
  return {
    rows,
    next: rows.length === limit && last ? keysetOf(last) : keysetOf(scanned[scanned.length - 1]!),
    scanned: scanned.length,
  };
}
