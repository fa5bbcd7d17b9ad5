import { dayOfSlot, SLOTS_PER_DAY, slotOf, slotOfId, slotTable, type SlotTables } from "./day-tables";
import type { DayLedger, DayState } from "./day-ledger";
import type { MessageRow } from "../../messages/record";

/**
 * Where a record lives now:
 * - `slot`: its slot's table in this object (every record of the slot not yet moved);
 * - `history`: its day's history shard (its slot moved, or is moving and the record is up to the cursor);
 * - `none`: nowhere (never recorded, or archived and dropped).
 */
export type Located = { tier: "slot"; row: MessageRow } | { tier: "history"; day: number } | { tier: "none" };

/** The index of a slot within its day (the key of `DayState.moved`). */
export const slotIndex = (slot: number): string => String(slot % SLOTS_PER_DAY);

/** How much of a slot is in its day's shard: "*" all, an id (everything up to it), or nothing. */
export const movedOf = (state: DayState, slot: number): string | undefined => state.moved?.[slotIndex(slot)];

export class Tiers {
  constructor(
    private readonly sql: SqlStorage,
    readonly tables: SlotTables,
    readonly ledger: DayLedger,
  ) {}

  /** Whether the record with this id (of this slot) is in its day's history shard. */
  inHistory(slot: number, id: string): boolean {
    const moved = movedOf(this.ledger.get(dayOfSlot(slot)), slot);
    return moved !== undefined && (moved === "*" || id <= moved);
  }

  locate(id: string): Located {
    const slot = slotOfId(id);
    if (slot !== null && this.tables.has(slot) && !this.inHistory(slot, id)) {
      const row = this.sql.exec<MessageRow>(`SELECT * FROM ${slotTable(slot)} WHERE id = ?`, id).toArray()[0];
      if (row) return { tier: "slot", row };
    }
    if (slot !== null && this.inHistory(slot, id)) return { tier: "history", day: dayOfSlot(slot) };
    return { tier: "none" };
  }

  /**
   * Whether a record of this time can still be written here: its slot has not left (moved to
   * history, or its day archived). An inbound message delivered days late may fall on such a slot.
   */
  writable(ms: number, now: number): boolean {
    const slot = slotOf(ms);
    const s = this.ledger.get(dayOfSlot(slot));
    // A slot whose records are on their way to its shard takes none: one added inside the chunk
    // being copied would be behind the move's cursor once the shard has the chunk, found nowhere.
    if (
      this.tables.isCopying(slot) ||
      this.tables.archives.has(dayOfSlot(slot)) ||
      movedOf(s, slot) !== undefined ||
      s.archived !== undefined ||
      s.archiving !== undefined
    )
      return false;
    // A slot more than a day old may be about to move: only a slot table already here, or a recent one, takes late records.
    return this.tables.has(slot) || slot >= slotOf(now) - SLOTS_PER_DAY;
  }
}
