import { DAY_MS, utcDay } from "../../domain/job-id";
import { now } from "../../lib/clock";
import { log } from "../../lib/log";
import { publishInOrder } from "../../lib/queue-publisher";
import type { ScheduledStep } from "../shared/scheduler";
import type { DailyUsage } from "./contract";
import { dayOfSlot, type SlotTables } from "./day-tables";
import { addCounts, addTally, type DayCounts, type DayLedger, type Tally } from "./day-ledger";
import { countsOfSlot } from "./records";

/** Daily counts reach D1 (operator analytics, a number's sends today) at most this often per workspace. */
export const COUNTS_FLUSH_INTERVAL_MS = 60_000;

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
 * Per-day, per-number counts, derived from the records rather than written with each of them: a
 * slot whose table is here is counted from its table (one pass when first needed, then kept in
 * memory and moved with each change), a slot whose table is gone has its counts in its day's
 * ledger row, frozen when the table left. A message counts on the day of its id (its acceptance, or for an
 * inbound message the operator's time): `sent` and `failed` are the day's messages in that status
 * now (a message reported failed after it was sent moves from one to the other).
 *
 * The month's quota is the sum of `accepted` over the month's days; D1 gets each changed day's
 * totals at most once a minute (`counts-to-d1`).
 */
export class DailyCounts {
  /** Per slot with a table. */
  private readonly live = new Map<number, DayCounts>();
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
      c = {};
      for (const r of countsOfSlot(this.sql, slot)) c[r.channel_number_id] = [r.accepted, r.sent, r.failed, r.received];
      this.live.set(slot, c);
    }
    return c;
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
   * A record changed after its commit: moves its slot's live counts (if counted yet: a later count
   * reads the table, which has it) and marks its day for D1. `frozen`: the record's slot table is
   * gone, the change goes to its day's ledger row (call inside the record's transaction).
   */
  note(
    slot: number,
    channelNumberId: string,
    delta: Partial<Record<CountField, number>>,
    where: "table" | "frozen" = "table",
  ): void {
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
