import { describe, expect, it } from "vitest";
import {
  isDeliveryTable,
  listPageOf,
  SCAN_BUDGET,
  SLOT_COLUMNS,
  SLOT_MS,
  slotOf,
  slotOfId,
  slotOfTable,
  slotTableDdl,
  uuidV7,
  uuidV7Time,
} from "../../../scripts/bench/slots.mjs";
import { loadSqlite } from "../../../scripts/bench/seed-messages.mjs";

/** @typedef {import("../../../scripts/bench/slots.mjs").ListedRow} ListedRow */

describe("the slot layout", () => {
  it("puts an id in the 6-hour slot of its time", () => {
    const at = Date.UTC(2026, 10, 25, 13, 0, 0, 123);
    const id = uuidV7(at, new Uint8Array(10).fill(0xff));
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(uuidV7Time(id)).toBe(at);
    expect(slotOfId(id)).toBe(slotOf(at));
    expect(slotOf(at)).toBe(Math.floor(Date.UTC(2026, 10, 25) / SLOT_MS) + 2);
    expect(slotOfId("not-an-id")).toBeNull();
    expect(uuidV7Time("0189a1b2-c3d4-4e5f-8a6b-7c8d9e0f1a2b")).toBeNull();
  });

  it("tells slot tables and delivery log tables by name", () => {
    expect([slotOfTable("m_82000"), slotOfTable("m_82000_to"), slotOfTable("meta")]).toEqual([82000, null, null]);
    expect([isDeliveryTable("d_20500"), isDeliveryTable("daily_counts")]).toEqual([true, false]);
  });

  it("creates a table with the columns it checks an existing one against", () => {
    const { DatabaseSync } = loadSqlite();
    const db = new DatabaseSync(":memory:");
    for (const s of slotTableDdl(7)) db.exec(s);
    expect(
      db
        .prepare("SELECT name FROM pragma_table_info('m_7')")
        .all()
        .map((r) => r.name),
    ).toEqual(SLOT_COLUMNS);
    expect(
      db
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'm_7' AND name NOT LIKE 'sqlite_%'",
        )
        .all()
        .map((r) => r.name)
        .sort(),
    ).toEqual(["m_7_failed", "m_7_key", "m_7_to", "m_7_work"]);
    db.close();
  });
});

describe("listPageOf", () => {
  // Slot s holds ids `s-0999` … `s-0000` (newest first); every third is failed, numbers alternate a/b.
  /** @param {number} slot @param {number} i @returns {ListedRow} */
  const rowOf = (slot, i) => ({
    id: `${slot}-${String(i).padStart(4, "0")}`,
    status: i % 3 === 0 ? "failed" : "sent",
    channel_number_id: i % 2 === 0 ? "a" : "b",
    direction: "outbound",
    recipient: "5511",
  });
  /** @param {number} perSlot */
  const reader = (perSlot) => {
    /** @type {Array<{ slot: number, n: number }>} */
    const reads = [];
    /** @param {number} slot @param {string | null} beforeId @param {number} n */
    const readSlot = (slot, beforeId, n) => {
      reads.push({ slot, n });
      const rows = [];
      for (let i = perSlot - 1; i >= 0 && rows.length < n; i--) {
        const r = rowOf(slot, i);
        if (beforeId === null || r.id < beforeId) rows.push(r);
      }
      return rows;
    };
    return { readSlot, reads };
  };

  it("answers the newest records, reading one more than the page per slot", () => {
    const { readSlot, reads } = reader(10);
    const page = listPageOf([100, 102, 101], readSlot, { filter: {}, limit: 20 });
    expect(page.ids.slice(0, 3)).toEqual(["102-0009", "102-0008", "102-0007"]);
    expect(page.ids).toHaveLength(20);
    expect(page.ids.at(-1)).toBe("101-0000");
    expect(reads).toEqual([
      { slot: 102, n: 22 },
      { slot: 101, n: 12 },
      { slot: 100, n: 2 },
    ]);
  });

  it("goes on after a cursor in the cursor's slot, and skips newer slots", () => {
    // A cursor's slot comes from its id: real UUIDv7 ids here.
    const base = Date.UTC(2026, 0, 1);
    const rest = new Uint8Array(10);
    /** @type {Map<number, ListedRow[]>} */
    const tables = new Map();
    for (const slot of [slotOf(base), slotOf(base) + 1]) {
      const list = [];
      for (let i = 0; i < 5; i++) {
        rest[9] = i;
        list.push({ ...rowOf(slot, i), id: uuidV7(slot * SLOT_MS + i * 1000, rest) });
      }
      tables.set(slot, list.reverse());
    }
    /** @param {number} slot @param {string | null} beforeId @param {number} n */
    const read = (slot, beforeId, n) =>
      (tables.get(slot) ?? []).filter((r) => beforeId === null || r.id < beforeId).slice(0, n);
    const all = [...(tables.get(slotOf(base) + 1) ?? []), ...(tables.get(slotOf(base)) ?? [])].map((r) => r.id);
    const first = listPageOf([...tables.keys()], read, { filter: {}, limit: 3 });
    expect(first.ids).toEqual(all.slice(0, 3));
    const second = listPageOf([...tables.keys()], read, { filter: {}, limit: 3, beforeId: first.ids.at(-1) ?? null });
    expect(second.ids).toEqual(all.slice(3, 6));
  });

  it("applies the filters to what it read, within the scan budget", () => {
    const { readSlot, reads } = reader(3_000);
    const page = listPageOf([5], readSlot, { filter: { status: "sent", channelNumberId: "b" }, limit: 20 });
    // Newest first: 2999 (b, sent), 2998 (a), 2997 (b, failed: 2997 % 3 = 0), 2996 (a), 2995 (b, sent) …
    expect(page.ids.slice(0, 2)).toEqual(["5-2999", "5-2995"]);
    expect(page.ids).toHaveLength(20);
    expect(reads).toEqual([{ slot: 5, n: SCAN_BUDGET }]);
    expect(page.read).toBe(SCAN_BUDGET);
  });

  it("answers a short page when the budget runs out before the page is full", () => {
    const { readSlot } = reader(3_000);
    const page = listPageOf([5, 4], readSlot, { filter: { channelNumberId: "c" }, limit: 20 });
    expect(page).toEqual({ ids: [], read: SCAN_BUDGET });
  });
});
