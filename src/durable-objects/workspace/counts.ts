import { DAY_MS, utcDay, uuidV7Floor } from "../../lib/job-id";
import { now } from "../../lib/clock";
import { log } from "../../lib/log";
import { publishInOrder } from "../../lib/queue-batches";
import { getMeta, setMeta } from "../shared/meta";
import type { ScheduledStep } from "../shared/scheduler";
import type { DailyUsage } from "./contract";
import { dayOfSlot, slotOfId, slotTallyKey, type SlotTables } from "./day-tables";
import { addCounts, addTally, type DayCounts, type DayLedger, type Tally } from "./day-ledger";
import { countsOfSlot } from "./records";

/** Daily counts reach D1 (operator analytics, a number's sends today) at most this often per workspace. */
export const COUNTS_FLUSH_INTERVAL_MS = 60_000;
/**
 * A slot's counts are kept in a tally row once this many of its records are not in one (fewer are
 * read again on a restart: cheaper than a row written, and a lone message writes none).
 */
export const TALLY_MIN_RECORDS = 64;
/**
 * A tally covers the records older than this when it is written: the newest ones still change
 * (sent a moment later), and a change to a record the tally covers writes the tally again.
 */
const TALLY_LAG_MS = COUNTS_FLUSH_INTERVAL_MS;

/**
 * The counts of a slot's records with ids older than `before` (ms), as they are now, kept in one
 * `meta` row (`tally:<slot>`, day-tables.ts `slotTallyKey`) so that a restart reads that row and
 * the records since `before` instead of the whole slot. A change to a record it covers rewrites it
 * in the change's transaction; it is moved forward by the minute's flush (or by a restart that had
 * to read many records), and deleted with the slot's table.
 *
 * Bound: one row per slot table of TALLY_MIN_RECORDS records or more, ~60 B + ~60 B per number
 * with records in the slot; at most the slot tables here (4 a day, the plan's days).
 */
export interface SlotTally {
  before: number;
  counts: DayCounts;
}

export type CountField = "accepted" | "sent" | "failed" | "received";
const FIELD: Record<CountField, number> = { accepted: 0, sent: 1, failed: 2, received: 3 };

/** The body of a USAGE_QUEUE message: absolute totals, so that redelivery and reordering are harmless. */
export interface UsageCountMessage {
  workspaceId: string;
  day: string;
  channelNumberId: string;
  accepted: number;
  sent: number;
  failed: number;
  received: number;
}

/**
 * Writes the tally of every slot table of TALLY_MIN_RECORDS records or more that has none (the
 * schema step that brings tallies to storage written before them: one pass over those records).
 */
export function tallySlotTables(sql: SqlStorage, at: number): void {
  const before = at - TALLY_LAG_MS;
  const slots = sql
    .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'm_[0-9]*'")
    .toArray()
    .map((r) => Number(r.name.slice(2)));
  for (const slot of slots) {
    if (getMeta(sql, slotTallyKey(slot)) !== undefined) continue;
    const rows = countsOfSlot(sql, slot, "", uuidV7Floor(before));
    if (recordsOf(rows) < TALLY_MIN_RECORDS) continue;
    const counts: DayCounts = {};
    for (const r of rows) counts[r.channel_number_id] = tallyOfRow(r);
    setMeta(sql, slotTallyKey(slot), JSON.stringify({ before, counts } satisfies SlotTally));
  }
}

/**
 * Per-day, per-number counts, derived from the records rather than written with each of them: a
 * slot whose table is here is counted from its tally (`SlotTally`) and the records its tally does
 * not cover (one pass over that key range when first needed, then kept in memory and moved with
 * each change): a restart reads a row per slot and the records of the last minutes, not the
 * month's. A slot whose table is gone has its counts in its day's ledger row, frozen when the
 * table left. A message counts on the day of its id (its acceptance, or for an
 * inbound message the operator's time): `sent` and `failed` are the day's messages in that status
 * now (a message reported failed after it was sent moves from one to the other).
 *
 * The month's quota is the sum of `accepted` over the month's days; D1 gets each changed day's
 * totals at most once a minute (`counts-to-d1`).
 */
export class DailyCounts {
  /** Per slot with a table. */
  private readonly live = new Map<number, DayCounts>();
  /** Per slot with a table: its tally row as stored (null: none), read once. */
  private readonly tallies = new Map<number, SlotTally | null>();
  private readonly dirty = new Set<string>();
  private lastFlush = now();
  /** A restart loses which totals D1 has not seen: the days still changing ship once more. */
  private shipRecent: boolean;

  constructor(
    private readonly sql: SqlStorage,
    private readonly tables: SlotTables,
    private readonly ledger: DayLedger,
    private readonly workspaceId: () => string | null,
    private readonly usageQueue: Queue,
  ) {
    this.shipRecent = tables.days().some((day) => day >= utcDay(now()) - 1);
  }

  /** The counts of a slot whose table is here (counted once per instance, then kept up to date). */
  private liveOf(slot: number): DayCounts {
    let c = this.live.get(slot);
    if (!c) {
      const tally = this.tallyOf(slot);
      const from = tally ? uuidV7Floor(tally.before) : "";
      const before = now() - TALLY_LAG_MS;
      const older = countsOfSlot(this.sql, slot, from, uuidV7Floor(before));
      const newer = countsOfSlot(this.sql, slot, uuidV7Floor(Math.max(before, tally?.before ?? 0)));
      const covered = { ...(tally?.counts ?? {}) };
      for (const r of older) covered[r.channel_number_id] = addTally(covered[r.channel_number_id], tallyOfRow(r));
      c = { ...covered };
      for (const r of newer) c[r.channel_number_id] = addTally(c[r.channel_number_id], tallyOfRow(r));
      this.live.set(slot, c);
      // Records read here are read no more after the next restart: their count is kept.
      if (recordsOf(older) >= TALLY_MIN_RECORDS) this.writeTally(slot, { before, counts: covered });
    }
    return c;
  }

  private tallyOf(slot: number): SlotTally | null {
    let t = this.tallies.get(slot);
    if (t === undefined) {
      const raw = getMeta(this.sql, slotTallyKey(slot));
      t = raw === undefined ? null : (JSON.parse(raw) as SlotTally);
      this.tallies.set(slot, t);
    }
    return t;
  }

  private writeTally(slot: number, tally: SlotTally): void {
    setMeta(this.sql, slotTallyKey(slot), JSON.stringify(tally));
    this.tallies.set(slot, tally);
  }

  /**
   * Moves the tally of each counted slot with TALLY_MIN_RECORDS records or more outside it up to
   * TALLY_LAG_MS ago: one pass over the records in between, one row written.
   */
  private keepTallies(at: number): void {
    const before = at - TALLY_LAG_MS;
    for (const [slot, c] of this.live) {
      if (!this.tables.has(slot)) continue;
      const tally = this.tallyOf(slot);
      if (tally && tally.before >= before) continue;
      if (recordsOfCounts(c) - recordsOfCounts(tally?.counts ?? {}) < TALLY_MIN_RECORDS) continue;
      const counts = { ...(tally?.counts ?? {}) };
      for (const r of countsOfSlot(this.sql, slot, tally ? uuidV7Floor(tally.before) : "", uuidV7Floor(before)))
        counts[r.channel_number_id] = addTally(counts[r.channel_number_id], tallyOfRow(r));
      this.writeTally(slot, { before, counts });
    }
  }

  /** A slot's counts while its table is here. */
  ofSlot(slot: number): DayCounts {
    return this.tables.has(slot) ? { ...this.liveOf(slot) } : {};
  }

  /** A day's counts, wherever they are. */
  of(day: number): DayCounts {
    let out: DayCounts = { ...(this.ledger.get(day).counts ?? {}) };
    for (const slot of this.tables.ofDay(day)) out = addCounts(out, this.liveOf(slot));
    return out;
  }

  /**
   * A record was added or changed (call inside its transaction): moves its slot's live counts (if
   * counted yet: a later count reads the table, which has it), its slot's tally if the tally covers
   * it (one row), and marks its day for D1. `frozen`: the record's slot table is gone, the change
   * goes to its day's ledger row.
   */
  note(
    id: string,
    channelNumberId: string,
    delta: Partial<Record<CountField, number>>,
    where: "table" | "frozen" = "table",
  ): void {
    const slot = slotOfId(id);
    if (slot === null) return;
    const d: Tally = [0, 0, 0, 0];
    for (const [f, v] of Object.entries(delta) as [CountField, number][]) d[FIELD[f]] = d[FIELD[f]]! + v;
    const day = dayOfSlot(slot);
    if (where === "frozen") {
      this.ledger.update(day, (s) => ({
        ...s,
        counts: { ...(s.counts ?? {}), [channelNumberId]: addTally(s.counts?.[channelNumberId], d) },
      }));
    } else {
      const c = this.live.get(slot);
      if (c) c[channelNumberId] = addTally(c[channelNumberId], d);
      const tally = this.tallyOf(slot);
      if (tally && id < uuidV7Floor(tally.before))
        this.writeTally(slot, {
          before: tally.before,
          counts: { ...tally.counts, [channelNumberId]: addTally(tally.counts[channelNumberId], d) },
        });
    }
    this.dirty.add(`${day}|${channelNumberId}`);
  }

  /** The change of counts a status change makes (`sent` ⇄ `failed`). */
  static statusDelta(before: string, after: string): Partial<Record<CountField, number>> {
    const delta: Partial<Record<CountField, number>> = {};
    if (before === after) return delta;
    if (before === "sent" || before === "failed") delta[before] = -1;
    if (after === "sent" || after === "failed") delta[after] = (delta[after] ?? 0) + 1;
    return delta;
  }

  /** The slot's table is gone: its counts are in its day's ledger row from now on (the caller added them there, with `ofSlot`). */
  forget(slot: number): void {
    this.live.delete(slot);
    this.tallies.delete(slot);
  }

  /** Accepted sends in the days [fromDay, toDay). */
  acceptedBetween(fromDay: number, toDay: number): number {
    let n = 0;
    for (let day = fromDay; day < toDay; day++) {
      if (this.tables.ofDay(day).length === 0 && this.ledger.get(day).counts === undefined) continue;
      for (const t of Object.values(this.of(day))) n += t[0];
    }
    return n;
  }

  /** One entry per day in [fromDay, toDay), zeros included. */
  usage(fromDay: number, toDay: number): DailyUsage[] {
    const out: DailyUsage[] = [];
    for (let day = fromDay; day < toDay; day++) {
      const t = Object.values(this.of(day)).reduce<Tally>((a, b) => addTally(a, b), [0, 0, 0, 0]);
      out.push({
        day: new Date(day * DAY_MS).toISOString().slice(0, 10),
        accepted: t[0],
        sent: t[1],
        failed: t[2],
        received: t[3],
      });
    }
    return out;
  }

  nextFlush(): number {
    return this.lastFlush + COUNTS_FLUSH_INTERVAL_MS;
  }

  step(): ScheduledStep {
    return {
      name: "counts-to-d1",
      due: () => (this.dirty.size > 0 || this.shipRecent ? this.nextFlush() : null),
      run: () => this.flush(),
    };
  }

  /** Ships the changed days' totals to D1 (through the usage queue); a total that moves meanwhile ships next round. */
  private async flush(): Promise<void> {
    const workspaceId = this.workspaceId();
    this.lastFlush = now();
    if (this.shipRecent) {
      this.shipRecent = false;
      this.markRecentDirty(this.lastFlush);
    }
    if (!workspaceId || this.dirty.size === 0) return;
    const keys = [...this.dirty];
    this.dirty.clear();
    const items = keys.map((k) => {
      const [day, numberId] = k.split("|") as [string, string];
      const t = this.of(Number(day))[numberId] ?? [0, 0, 0, 0];
      const body: UsageCountMessage = {
        workspaceId,
        day: new Date(Number(day) * DAY_MS).toISOString().slice(0, 10),
        channelNumberId: numberId,
        accepted: t[0],
        sent: t[1],
        failed: t[2],
        received: t[3],
      };
      return { key: k, body };
    });
    // After the counts above: every slot they read is counted now.
    this.keepTallies(this.lastFlush);
    try {
      await publishInOrder(this.usageQueue, items, {
        sent: () => undefined,
        setAside: (k, reason) => log("error", "daily count set aside", { key: k, reason }),
      });
    } catch (err) {
      for (const k of keys) this.dirty.add(k);
      throw err;
    }
  }

  /** The days still changing, shipped again after a restart (D1 keeps the larger total). */
  private markRecentDirty(at: number): void {
    for (const day of this.tables.days()) {
      if (day < utcDay(at) - 1) continue;
      for (const numberId of Object.keys(this.of(day))) this.dirty.add(`${day}|${numberId}`);
    }
  }
}

type CountRow = { channel_number_id: string; accepted: number; sent: number; failed: number; received: number };
const tallyOfRow = (r: CountRow): Tally => [r.accepted, r.sent, r.failed, r.received];
/** Records counted: each is accepted (outbound) or received (inbound), once. */
const recordsOf = (rows: CountRow[]): number => rows.reduce((n, r) => n + r.accepted + r.received, 0);
const recordsOfCounts = (c: DayCounts): number => Object.values(c).reduce((n, t) => n + t[0] + t[3], 0);
