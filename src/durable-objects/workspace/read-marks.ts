import { withTypingIndicator } from "../../messages/read-mark";
import type { MessageRow } from "../../messages/record";
import { updateRecord } from "./records";
import type { Tiers } from "./tiers";

/**
 * Notes a business's read mark on an inbound record (messages/read-mark.ts): its time in `read_at`
 * and, with the typing indicator, a key of `details`, in one UPDATE whose compare-and-set
 * (`read_at IS NULL`) keeps the first mark of concurrent ones. Returns the record as it is now;
 * null when it is not in this object's slot tables (moved to history: the mark is not kept, and a
 * later call marks it at the operator again, which is harmless there).
 */
export function noteReadMark(
  tiers: Tiers,
  sql: SqlStorage,
  id: string,
  at: number,
  typing: boolean,
): MessageRow | null {
  const located = tiers.locate(id);
  if (located.tier !== "slot") return null;
  const row = located.row;
  if (row.direction !== "inbound" || row.read_at !== null) return row;
  updateRecord(
    tiers.tables,
    sql,
    id,
    { read_at: at, ...(typing ? { details: withTypingIndicator(row.details) } : {}) },
    { sql: "read_at IS NULL", bindings: [] },
  );
  const after = tiers.locate(id);
  return after.tier === "slot" ? after.row : null;
}
