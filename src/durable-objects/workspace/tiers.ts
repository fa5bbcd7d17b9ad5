import { utcDay } from "../../domain/job-id";
import { dayOfId, dayTable, type DayTables } from "./day-tables";
import type { DayLedger } from "./day-ledger";
import { findLegacyMessage } from "./legacy/messages-v1";
import { legacyIdDay } from "./legacy/history-v1";
import type { MessageRow } from "./record";

/**
 * Where a record lives now:
 * - `day`: its day's table in this object (every record of the day not yet moved);
 * - `legacy`: the single table of the release before day tables (records accepted before the upgrade);
 * - `history`: its day's history shard (the day moved, or is moving and the record is past the cursor);
 * - `none`: nowhere (never recorded, or archived and dropped).
 */
export type Located =
  | { tier: "day"; row: MessageRow }
  | { tier: "legacy"; row: MessageRow }
  | { tier: "history"; day: number }
  | { tier: "none" };

export class Tiers {
  private legacy: boolean;

  constructor(
    private readonly sql: SqlStorage,
    readonly tables: DayTables,
    readonly ledger: DayLedger,
  ) {
    this.legacy =
      sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'messages'").toArray().length > 0;
  }

  /** Whether the earlier layout's table is still here. */
  hasLegacy(): boolean {
    return this.legacy;
  }

  legacyDropped(): void {
    this.legacy = false;
  }

  /** Whether a record of `day` with this id is in the day's history shard. */
  inHistory(day: number, id: string): boolean {
    const s = this.ledger.get(day);
    return s.history !== undefined || (s.moveCursor !== undefined && id <= s.moveCursor);
  }

  locate(id: string): Located {
    const day = dayOfId(id) ?? legacyIdDay(this.sql, id);
    if (day !== null && this.tables.has(day) && !this.inHistory(day, id)) {
      const row = this.sql.exec<MessageRow>(`SELECT * FROM ${dayTable(day)} WHERE id = ?`, id).toArray()[0];
      if (row) return { tier: "day", row };
    }
    if (this.legacy) {
      const row = findLegacyMessage(this.sql, id);
      if (row) return { tier: "legacy", row };
    }
    if (day !== null) {
      const s = this.ledger.get(day);
      if (s.history !== undefined || s.legacyHistory !== undefined || this.inHistory(day, id))
        return { tier: "history", day };
    }
    return { tier: "none" };
  }

  /** Whether a record of a day that left this object could be written now (its day is not archived). */
  writable(day: number): boolean {
    return this.tables.has(day) || this.ledger.get(day).history === undefined;
  }

  /** The day an inbound message with this id belongs to, if its day can still take records here. */
  hotDayFor(id: string, at: number): number | null {
    const day = dayOfId(id);
    if (day === null) return null;
    const s = this.ledger.get(day);
    if (
      s.history !== undefined ||
      s.legacyHistory !== undefined ||
      s.moveCursor !== undefined ||
      s.archived !== undefined ||
      s.archiving !== undefined
    )
      return null;
    // A day more than a day older than today may be about to move: only today's and yesterday's tables are created for late records.
    if (!this.tables.has(day) && day < utcDay(at) - 1) return null;
    return day;
  }
}
