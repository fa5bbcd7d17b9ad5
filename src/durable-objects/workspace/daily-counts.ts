import { now } from "../../lib/clock";
import { log } from "../../lib/log";
import { DAY_MS, utcDay } from "../../domain/job-id";
import { publishInOrder } from "../../lib/queue-publisher";
import { getMeta } from "../shared/meta";
import type { ScheduledStep } from "../shared/scheduler";
import type { DailyUsage } from "./contract";
import type { WorkspaceContext } from "./context";

/** Daily counts reach D1 (operator analytics) at most this often per workspace. */
const COUNTS_FLUSH_INTERVAL_MS = 60_000;
const COUNTS_BATCH = 200;

export type CountField = "accepted" | "sent" | "failed" | "received";

/**
 * Per-day, per-number counters: the month's quota usage (the sum of `accepted`
 * over the month's days), the usage history, and the aggregates shipped to D1
 * for the operator. Bound: one row per number and day (~60 B), kept 400 days:
 * ≤ 100 numbers × 400 rows. Purged by the retention step.
 * `dirty` marks rows whose totals D1 has not seen yet.
 */
export function createDailyCountsTable(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS daily_counts (
      day INTEGER NOT NULL, channel_number_id TEXT NOT NULL,
      accepted INTEGER NOT NULL DEFAULT 0, sent INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,
      received INTEGER NOT NULL DEFAULT 0, dirty INTEGER NOT NULL DEFAULT 1,
      PRIMARY KEY (day, channel_number_id)) WITHOUT ROWID;
    -- Each count's upsert SETs dirty, so an index on it cost a row per count: dirty rows are
    -- found by a range of the key instead (changingSince).
    DROP INDEX IF EXISTS daily_counts_dirty;
  `);
}

/**
 * The oldest day whose counts can still change: a report about a message is
 * counted on the day it happened, and messages leave for the archive after
 * the plan's window. Dirty rows are looked for from here on, through the key:
 * at most numbers × (window + 2) rows read.
 */
const changingSince = (sql: SqlStorage): number =>
  utcDay(now()) - (Number(getMeta(sql, "history_days") ?? DEFAULT_WINDOW_DAYS) + 2);
const DEFAULT_WINDOW_DAYS = 30;

export function countOne(sql: SqlStorage, at: number, channelNumberId: string, field: CountField): void {
  sql.exec(
    `INSERT INTO daily_counts (day, channel_number_id, ${field}, dirty) VALUES (?, ?, 1, 1)
     ON CONFLICT (day, channel_number_id) DO UPDATE SET ${field} = ${field} + 1, dirty = 1`,
    utcDay(at),
    channelNumberId,
  );
}

/** Accepted sends in the days [fromDay, toDay). */
export const acceptedBetween = (sql: SqlStorage, fromDay: number, toDay: number): number =>
  sql
    .exec<{ n: number | null }>(
      "SELECT SUM(accepted) AS n FROM daily_counts WHERE day >= ? AND day < ?",
      fromDay,
      toDay,
    )
    .one().n ?? 0;

/** One entry per day in [fromDay, toDay), zeros included. */
export function dailyUsage(sql: SqlStorage, fromDay: number, toDay: number): DailyUsage[] {
  const rows = sql
    .exec<{ day: number; accepted: number; sent: number; failed: number; received: number }>(
      `SELECT day, SUM(accepted) AS accepted, SUM(sent) AS sent, SUM(failed) AS failed, SUM(received) AS received
       FROM daily_counts WHERE day >= ? AND day < ? GROUP BY day`,
      fromDay,
      toDay,
    )
    .toArray();
  const byDay = new Map(rows.map((r) => [r.day, r]));
  const out: DailyUsage[] = [];
  for (let day = fromDay; day < toDay; day++) {
    const r = byDay.get(day);
    out.push({
      day: new Date(day * DAY_MS).toISOString().slice(0, 10),
      accepted: r?.accepted ?? 0,
      sent: r?.sent ?? 0,
      failed: r?.failed ?? 0,
      received: r?.received ?? 0,
    });
  }
  return out;
}

export interface CountsRow {
  day: number;
  channel_number_id: string;
  accepted: number;
  sent: number;
  failed: number;
  received: number;
  [key: string]: SqlStorageValue;
}

export const dirtyCounts = (sql: SqlStorage, limit: number): CountsRow[] =>
  sql
    .exec<CountsRow>(
      "SELECT day, channel_number_id, accepted, sent, failed, received FROM daily_counts WHERE day >= ? AND dirty = 1 ORDER BY day LIMIT ?",
      changingSince(sql),
      limit,
    )
    .toArray();

export const hasDirtyCounts = (sql: SqlStorage): boolean =>
  sql.exec("SELECT 1 FROM daily_counts WHERE day >= ? AND dirty = 1 LIMIT 1", changingSince(sql)).toArray().length > 0;

/** Clean only if unchanged since it was read: a count that moved meanwhile ships next round. */
export function markCountsClean(sql: SqlStorage, r: CountsRow): void {
  sql.exec(
    `UPDATE daily_counts SET dirty = 0 WHERE day = ? AND channel_number_id = ? AND accepted = ? AND sent = ? AND failed = ? AND received = ?`,
    r.day,
    r.channel_number_id,
    r.accepted,
    r.sent,
    r.failed,
    r.received,
  );
}

export function purgeCountsBefore(sql: SqlStorage, day: number): void {
  sql.exec("DELETE FROM daily_counts WHERE day < ? AND dirty = 0", day);
}

/** Ships changed daily counts to D1 through the usage queue, at most once a minute. */
export class CountsShipper {
  private lastFlush = now();

  constructor(private readonly w: WorkspaceContext) {}

  /** When changed counts may ship next. */
  nextFlush(): number {
    return this.lastFlush + COUNTS_FLUSH_INTERVAL_MS;
  }

  steps(): { countsToD1: ScheduledStep } {
    return {
      countsToD1: {
        name: "counts-to-d1",
        due: () => (hasDirtyCounts(this.w.sql) ? this.nextFlush() : null),
        run: () => this.flush(),
      },
    };
  }

  /** Ships changed daily counts to D1 (through the usage queue); a count that moved meanwhile ships next round. */
  private async flush(): Promise<void> {
    const workspaceId = this.w.workspaceId();
    this.lastFlush = now();
    if (!workspaceId) return;
    const rows = dirtyCounts(this.w.sql, COUNTS_BATCH);
    const byKey = new Map(rows.map((r) => [`${r.day}:${r.channel_number_id}`, r]));
    await publishInOrder(
      this.w.env.USAGE_QUEUE,
      rows.map((r) => ({ key: `${r.day}:${r.channel_number_id}`, body: usageMessage(workspaceId, r) })),
      {
        sent: (keys) => {
          for (const k of keys) markCountsClean(this.w.sql, byKey.get(k)!);
        },
        setAside: (k, reason) => log("error", "daily count set aside", { key: k, reason }),
      },
    );
  }
}

/** Storage from before daily counts kept one counter per month: it becomes that month's first day. */
export function migrateMonthlyUsage(sql: SqlStorage): void {
  const exists =
    sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'monthly_usage'").toArray().length > 0;
  if (!exists) return;
  // Inside the schema step's transaction: all of it or none.
  for (const m of sql.exec<{ period: string; used: number }>("SELECT period, used FROM monthly_usage").toArray()) {
    const day = utcDay(Date.parse(`${m.period}-01T00:00:00Z`));
    sql.exec(
      "INSERT INTO daily_counts (day, channel_number_id, accepted, dirty) VALUES (?, '', ?, 0) ON CONFLICT DO UPDATE SET accepted = accepted + excluded.accepted",
      day,
      m.used,
    );
  }
  sql.exec("DROP TABLE monthly_usage");
}

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

const usageMessage = (workspaceId: string, r: CountsRow): UsageCountMessage => ({
  workspaceId,
  day: new Date(r.day * DAY_MS).toISOString().slice(0, 10),
  channelNumberId: r.channel_number_id,
  accepted: r.accepted,
  sent: r.sent,
  failed: r.failed,
  received: r.received,
});
