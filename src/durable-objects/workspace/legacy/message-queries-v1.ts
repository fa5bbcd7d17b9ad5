import type { MessageRow } from "../record";
import { matches, type Keyset, type MessageFilter, type Page } from "../message-queries";

// Lists over the `messages` table of the release before day tables (its records accepted before
// the upgrade, in the workspace object until they move, and in that release's history shards).
// Its order is (created_at, id); positions in it carry `legacy: true`.

interface Driver {
  /** The equality that selects an index, and its binding. */
  where: string;
  bindings: SqlStorageValue[];
  /** Whether the index alone decides every filter (then no row read is wasted). */
  exact: boolean;
}

/** The index that narrows the scan most for these filters (each ends in (created_at, id), the list's order). */
function driverOf(f: MessageFilter): Driver {
  const others = (covered: (keyof MessageFilter)[]) =>
    (Object.keys(f) as (keyof MessageFilter)[]).every(
      (k) => f[k] === undefined || covered.includes(k) || k === "createdFrom" || k === "createdUntil",
    );
  if (f.counterpart !== undefined)
    return { where: "recipient = ?", bindings: [f.counterpart], exact: others(["counterpart"]) };
  if (f.channelNumberId !== undefined)
    return { where: "channel_number_id = ?", bindings: [f.channelNumberId], exact: others(["channelNumberId"]) };
  if (f.status === "failed")
    return { where: "status = 'failed'", bindings: [], exact: others(["status", "direction"]) };
  if (f.status === "queued")
    return { where: "status = 'queued'", bindings: [], exact: others(["status", "direction"]) };
  if (f.direction === "inbound" || f.status === "received")
    return { where: "direction = 'inbound'", bindings: [], exact: others(["direction", "status"]) };
  return { where: "1", bindings: [], exact: others([]) };
}

const keyset = (r: MessageRow): Keyset => ({ createdAt: r.created_at, id: r.id, legacy: true });

/**
 * One page of messages, newest first, strictly older than `after`: the driving
 * index is scanned for at most `budget` rows within the time bounds, the other
 * filters are applied to what was read. A page can hold fewer than `limit` rows
 * (then `next` says where to go on) — the work per page is bounded either way.
 */
export function legacyPage(
  sql: SqlStorage,
  f: MessageFilter,
  after: Keyset | null,
  limit: number,
  budget: number,
): Page {
  const d = driverOf(f);
  const conds = [d.where];
  const bindings = [...d.bindings];
  if (f.createdFrom !== undefined) {
    conds.push("created_at >= ?");
    bindings.push(f.createdFrom);
  }
  if (f.createdUntil !== undefined) {
    conds.push("created_at < ?");
    bindings.push(f.createdUntil);
  }
  if (after) {
    conds.push("(created_at, id) < (?, ?)");
    bindings.push(after.createdAt, after.id);
  }
  // When the index decides every filter, one row past the page is all there is to read.
  const read = d.exact ? Math.min(budget, limit + 1) : budget;
  const scanned = sql
    .exec<MessageRow>(
      `SELECT * FROM messages WHERE ${conds.join(" AND ")} ORDER BY created_at DESC, id DESC LIMIT ?`,
      ...bindings,
      read,
    )
    .toArray();
  const rows: MessageRow[] = [];
  for (const r of scanned) {
    if (!matches(r, f)) continue;
    if (rows.length === limit) {
      // One more match exists: the page ends at its last row.
      return { rows, next: keyset(rows[rows.length - 1]!), scanned: scanned.length };
    }
    rows.push(r);
  }
  if (scanned.length < read) {
    // Nothing older is left in range.
    return { rows, next: null, scanned: scanned.length };
  }
  const lastRead = scanned[scanned.length - 1]!;
  const lastRow = rows[rows.length - 1];
  // The budget ran out: continue after what was read (or after the page's last row, when it is full).
  const next = rows.length === limit && lastRow ? keyset(lastRow) : keyset(lastRead);
  return { rows, next, scanned: scanned.length };
}
