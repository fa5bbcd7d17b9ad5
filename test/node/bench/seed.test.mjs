import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  loadSqlite,
  RATE_WINDOW_MARGIN_MS,
  seedMessages,
  SEED_SPAN_MS,
} from "../../../scripts/bench/seed-messages.mjs";
import { SLOT_MS, slotOfId } from "../../../scripts/bench/slots.mjs";
import { expectedPages, pendingWork, retentionState, storageOf } from "../../../scripts/bench/workspace-file.mjs";

const dir = mkdtempSync(join(tmpdir(), "bench-seed-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("seedMessages into a workspace object's file", () => {
  const file = join(dir, "workspace.sqlite");
  const { DatabaseSync } = loadSqlite();
  const db = new DatabaseSync(file);
  db.exec("CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
  db.close();
  const now = Date.UTC(2026, 10, 25, 13, 7);
  const seeded = seedMessages({ file, count: 3_000, numberIds: ["n1", "n2"], now });

  it("writes each record into the slot table of its id, settled, over the span before now", () => {
    expect(seeded.newest).toBe(now - RATE_WINDOW_MARGIN_MS);
    expect(seeded.oldest).toBe(now - SEED_SPAN_MS);
    expect(seeded.slotTables).toBe(Math.floor(seeded.newest / SLOT_MS) - Math.floor(seeded.oldest / SLOT_MS) + 1);
    const read = new DatabaseSync(file, { readOnly: true });
    const tables = read
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'm\\_%' ESCAPE '\\'")
      .all()
      .map((r) => String(r.name));
    for (const t of tables) {
      for (const r of read
        .prepare(`SELECT id, pending, attempts, answered, status, idem_key, direction FROM ${t}`)
        .all()) {
        expect(`m_${slotOfId(String(r.id))}`).toBe(t);
        expect([
          r.pending,
          r.attempts === r.answered,
          ["sent", "failed", "received"].includes(String(r.status)),
        ]).toEqual([0, true, true]);
        expect(r.idem_key === null).toBe(r.direction === "inbound");
      }
    }
    read.close();
    expect(pendingWork(file)).toEqual({ active: 0, logged: 0 });
    expect(retentionState(file)).toEqual({ records: 3_000, slotTables: seeded.slotTables, historyDays: 0 });
  });

  it("sizes the slot tables per b-tree", () => {
    const s = storageOf(file);
    expect(s.slots.rows).toBe(3_000);
    expect(s.slotTables).toBe(seeded.slotTables);
    expect(Object.keys(s.slots.btrees).sort()).toEqual(["_failed", "_key", "_to", "_work", "records"]);
    expect(s.deliveries).toEqual({ bytes: 0, rows: 0, attempts: 0, btrees: {} });
  });

  it("expects the pages the object reads: the newest, the next, and a filtered one", () => {
    const pages = expectedPages(file, { status: "sent", channelNumberId: "n1", limit: 20 });
    const read = new DatabaseSync(file, { readOnly: true });
    const all = read
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'm\\_%' ESCAPE '\\'")
      .all()
      .flatMap((t) => read.prepare(`SELECT id, status, channel_number_id FROM ${t.name}`).all())
      .sort((a, b) => (String(a.id) < String(b.id) ? 1 : -1));
    read.close();
    expect(pages.first).toEqual(all.slice(0, 20).map((r) => r.id));
    expect(pages.second).toEqual(all.slice(20, 40).map((r) => r.id));
    expect(pages.filtered).toEqual(
      all
        .filter((r) => r.status === "sent" && r.channel_number_id === "n1")
        .slice(0, 20)
        .map((r) => r.id),
    );
  });
});
