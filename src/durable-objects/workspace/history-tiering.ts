import { now } from "../../lib/clock";
import { DAY_MS, utcDay, uuidV7Time } from "../../domain/job-id";
import { getMeta, setMeta } from "../shared/meta";
import { withSlack, type ScheduledStep } from "../shared/scheduler";
import { historyStub } from "../history/history";
import type { WorkspaceContext } from "./context";
import { listPage, SCAN_BUDGET, type Keyset, type MessageFilter } from "./message-queries";
import { findMessage, type MessageRow } from "./messages";

/** Messages stay in the workspace object this long, then move to their day's history shard. */
export const HOT_WINDOW_MS = 48 * 60 * 60 * 1000;
/** Above this, the object sheds early: the hot window shrinks to MIN_HOT_WINDOW_MS (the storage budget, docs/architecture.md). */
export const HOT_BYTES_BUDGET = 3.5 * 1024 ** 3;
export const MIN_HOT_WINDOW_MS = 6 * 60 * 60 * 1000;
const TIER_BATCH = 500;
/** Archive parts written per alarm run (each ~20,000 messages). */
const ARCHIVE_PARTS_PER_RUN = 4;
const DEFAULT_HISTORY_DAYS = 30;

/**
 * Which UTC days of this workspace's messages live in history shards, and
 * where the hot window ends: every row in a shard is older, in (created_at, id)
 * order, than every row left in the workspace object, so a newest-first list
 * reads the hot rows and then the shards, day by day.
 *
 * Bound: one row per day in history (≤ the plan's window, 400 at most), and one
 * row per message that predates UUIDv7 ids (their day is not in the id).
 */
export function createHistoryTables(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS history_days (day INTEGER PRIMARY KEY, messages INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS history_legacy_ids (id TEXT PRIMARY KEY, day INTEGER NOT NULL) WITHOUT ROWID;
    -- Days archived to R2 (their manifest), listed by GET /message-archives. One row per day, kept as long as the archive (400 days).
    CREATE TABLE IF NOT EXISTS archived_days (day INTEGER PRIMARY KEY, messages INTEGER NOT NULL, parts INTEGER NOT NULL, archived_at INTEGER NOT NULL) WITHOUT ROWID;
  `);
}

/** How long archives are kept (and listed); an R2 lifecycle rule deletes the objects (README, deploying). */
export const KEEP_ARCHIVES_DAYS = 400;

export interface ArchivedDay {
  day: number;
  messages: number;
  parts: number;
  archived_at: number;
  [key: string]: SqlStorageValue;
}

export function recordArchivedDay(sql: SqlStorage, day: number, messages: number, parts: number, at: number): void {
  sql.exec(
    "INSERT OR REPLACE INTO archived_days (day, messages, parts, archived_at) VALUES (?, ?, ?, ?)",
    day,
    messages,
    parts,
    at,
  );
  sql.exec("DELETE FROM archived_days WHERE day < ?", day - KEEP_ARCHIVES_DAYS);
}

/** Archived days, newest first, before `beforeDay`. */
export const archivedDays = (sql: SqlStorage, beforeDay: number | null, limit: number): ArchivedDay[] =>
  sql
    .exec<ArchivedDay>(
      "SELECT * FROM archived_days WHERE day < ? ORDER BY day DESC LIMIT ?",
      beforeDay ?? Number.MAX_SAFE_INTEGER,
      limit,
    )
    .toArray();

export const archivedDay = (sql: SqlStorage, day: number): ArchivedDay | null =>
  sql.exec<ArchivedDay>("SELECT * FROM archived_days WHERE day = ?", day).toArray()[0] ?? null;

const BOUNDARY = "history_boundary";

/** The newest row moved to history, or null when nothing was moved yet. */
export const historyBoundary = (sql: SqlStorage): Keyset | null =>
  JSON.parse(getMeta(sql, BOUNDARY) ?? "null") as Keyset | null;

/** The oldest hot rows created before `before`, oldest first. */
export const oldestHotRows = (sql: SqlStorage, before: number, limit: number): MessageRow[] =>
  sql
    .exec<MessageRow>("SELECT * FROM messages WHERE created_at < ? ORDER BY created_at, id LIMIT ?", before, limit)
    .toArray();

export const oldestHotAt = (sql: SqlStorage): number | null =>
  sql.exec<{ created_at: number }>("SELECT created_at FROM messages ORDER BY created_at, id LIMIT 1").toArray()[0]
    ?.created_at ?? null;

/** After a shard took them: forget rows unchanged since they were read (a changed one moves again next round). */
export function forgetMoved(sql: SqlStorage, rows: MessageRow[], day: number): number {
  let moved = 0;
  for (const r of rows) {
    if (sql.exec("DELETE FROM messages WHERE id = ? AND version = ?", r.id, r.version).rowsWritten === 0) continue;
    moved++;
    if (uuidV7Time(r.id) === null)
      sql.exec("INSERT OR REPLACE INTO history_legacy_ids (id, day) VALUES (?, ?)", r.id, day);
  }
  sql.exec(
    "INSERT INTO history_days (day, messages) VALUES (?, ?) ON CONFLICT (day) DO UPDATE SET messages = messages + excluded.messages",
    day,
    moved,
  );
  const last = rows[rows.length - 1];
  const boundary = historyBoundary(sql);
  if (
    last &&
    (!boundary ||
      last.created_at > boundary.createdAt ||
      (last.created_at === boundary.createdAt && last.id > boundary.id))
  ) {
    setMeta(sql, BOUNDARY, JSON.stringify({ createdAt: last.created_at, id: last.id }));
  }
  return moved;
}

/** The history day a message id belongs to, if that day is in history. */
export function historyDayOf(sql: SqlStorage, id: string): number | null {
  const t = uuidV7Time(id);
  const day =
    t === null
      ? sql.exec<{ day: number }>("SELECT day FROM history_legacy_ids WHERE id = ?", id).toArray()[0]?.day
      : utcDay(t);
  if (day === undefined) return null;
  return sql.exec("SELECT 1 FROM history_days WHERE day = ?", day).toArray().length > 0 ? day : null;
}

/** Days in history, newest first, within [fromDay, toDay]. */
export const historyDays = (sql: SqlStorage, fromDay: number, toDay: number): number[] =>
  sql
    .exec<{ day: number }>("SELECT day FROM history_days WHERE day >= ? AND day <= ? ORDER BY day DESC", fromDay, toDay)
    .toArray()
    .map((r) => r.day);

export const oldestHistoryDay = (sql: SqlStorage): number | null =>
  sql.exec<{ day: number | null }>("SELECT MIN(day) AS day FROM history_days").one().day;

/** The day left history (archived and deleted). */
export function forgetHistoryDay(sql: SqlStorage, day: number): void {
  sql.exec("DELETE FROM history_days WHERE day = ?", day);
  sql.exec(
    "DELETE FROM history_legacy_ids WHERE id IN (SELECT id FROM history_legacy_ids WHERE day = ? LIMIT 10000)",
    day,
  );
}

/**
 * The workspace's messages across tiers: reads and lists over the hot rows and
 * the history shards, and the steps that move old rows to their day's shard
 * and archive days past the plan's window to R2.
 */
export class HistoryTiering {
  constructor(private readonly w: WorkspaceContext) {}

  steps(): { moveToHistory: ScheduledStep; archiveHistory: ScheduledStep } {
    return {
      moveToHistory: {
        name: "move-to-history",
        due: () => withSlack(this.tierDue()),
        run: (at) => this.moveToHistory(at),
      },
      archiveHistory: { name: "archive-history", due: () => this.archiveDue(), run: (at) => this.archiveOldestDay(at) },
    };
  }

  /**
   * A message of this workspace, wherever it lives now (this object or its
   * day's history shard), as its stored row (`toMessageView` renders it: rows
   * are what RPC carries without loss).
   */
  async getMessage(id: string): Promise<MessageRow | null> {
    const row = findMessage(this.w.sql, id);
    if (row) return row;
    const day = historyDayOf(this.w.sql, id);
    const workspaceId = this.w.workspaceId();
    return day === null || !workspaceId ? null : historyStub(this.w.env, workspaceId, day).get(id);
  }

  /**
   * One page of the workspace's messages, newest first, strictly older than
   * `after`: the rows still in this object, then the history shards day by day.
   * At most SCAN_BUDGET rows are read per page, so a page may be short; `next`
   * says where to go on (null: nothing older matches).
   */
  async listMessages(
    filter: MessageFilter,
    after: Keyset | null,
    limit: number,
  ): Promise<{ rows: MessageRow[]; next: Keyset | null }> {
    const workspaceId = this.w.workspaceId();
    const rows: MessageRow[] = [];
    let budget = SCAN_BUDGET;
    const boundary = historyBoundary(this.w.sql);
    let position = after;
    if (
      !boundary ||
      !after ||
      after.createdAt > boundary.createdAt ||
      (after.createdAt === boundary.createdAt && after.id > boundary.id)
    ) {
      const page = listPage(this.w.sql, filter, after, limit, budget);
      rows.push(...page.rows);
      budget -= page.scanned;
      if (page.next) return { rows, next: page.next };
      // The hot rows are exhausted: history is older than all of them.
      position = null;
    }
    if (boundary && workspaceId) {
      const oldestHot = oldestHotAt(this.w.sql);
      const newestDay = utcDay(position?.createdAt ?? boundary.createdAt);
      const upper =
        filter.createdUntil === undefined ? newestDay : Math.min(newestDay, utcDay(filter.createdUntil - 1));
      const lower = filter.createdFrom === undefined ? 0 : utcDay(filter.createdFrom);
      for (const day of historyDays(this.w.sql, lower, upper)) {
        if (rows.length === limit || budget <= 0) {
          const last = rows[rows.length - 1];
          return { rows, next: last ? { createdAt: last.created_at, id: last.id } : position };
        }
        const page = await historyStub(this.w.env, workspaceId, day).list(
          filter,
          position,
          limit - rows.length,
          budget,
        );
        rows.push(...page.rows.filter((r) => !stillHot(this.w.sql, r, oldestHot)));
        budget -= page.scanned;
        if (page.next) return { rows, next: page.next };
        position = null;
      }
    }
    return { rows, next: null };
  }

  private tierDue(): number | null {
    const oldest = oldestHotAt(this.w.sql);
    if (oldest === null) return null;
    return oldest + (this.w.underPressure() ? MIN_HOT_WINDOW_MS : HOT_WINDOW_MS);
  }

  /** Moves one batch of the oldest messages past the hot window to their days' history shards. */
  private async moveToHistory(at: number): Promise<void> {
    const workspaceId = this.w.workspaceId();
    if (!workspaceId) return;
    const rows = oldestHotRows(
      this.w.sql,
      at - (this.w.underPressure() ? MIN_HOT_WINDOW_MS : HOT_WINDOW_MS),
      TIER_BATCH,
    );
    const byDay = new Map<number, MessageRow[]>();
    for (const r of rows) byDay.set(utcDay(r.created_at), [...(byDay.get(utcDay(r.created_at)) ?? []), r]);
    // Oldest day first, so that everything in history stays older than everything here.
    for (const [day, dayRows] of [...byDay].sort(([a], [b]) => a - b)) {
      await historyStub(this.w.env, workspaceId, day).put(workspaceId, day, dayRows);
      this.w.storage.transactionSync(() => forgetMoved(this.w.sql, dayRows, day));
    }
  }

  private archiveDue(): number | null {
    const oldest = oldestHistoryDay(this.w.sql);
    if (oldest === null) return null;
    const keepDays = Number(getMeta(this.w.sql, "history_days") ?? DEFAULT_HISTORY_DAYS);
    // A day leaves once all of it is older than the window.
    return (oldest + 1 + keepDays) * DAY_MS;
  }

  /**
   * Archives the oldest day past the plan's window to R2, a few parts per run,
   * then deletes its shard: the rows are deleted only once the archive is confirmed.
   */
  private async archiveOldestDay(at: number): Promise<void> {
    const workspaceId = this.w.workspaceId();
    const day = oldestHistoryDay(this.w.sql);
    if (!workspaceId || day === null) return;
    await this.w.loadConfig(workspaceId);
    if ((day + 1 + Number(getMeta(this.w.sql, "history_days") ?? DEFAULT_HISTORY_DAYS)) * DAY_MS > at) return;
    const shard = historyStub(this.w.env, workspaceId, day);
    // A day archived before and re-created since (a row moved late) adds parts after the archived ones.
    const earlier = archivedDay(this.w.sql, day);
    const { done, manifest } = await shard.archive(
      ARCHIVE_PARTS_PER_RUN,
      earlier && { parts: earlier.parts, messages: earlier.messages },
    );
    if (!done) {
      await this.w.wake(now());
      return;
    }
    if (manifest)
      this.w.storage.transactionSync(() =>
        recordArchivedDay(this.w.sql, day, manifest.messages, manifest.parts, now()),
      );
    await shard.drop();
    this.w.storage.transactionSync(() => forgetHistoryDay(this.w.sql, day));
  }

  /** Days archived to R2, newest first (GET /message-archives). */
  async listArchives(beforeDay: number | null, limit: number): Promise<ArchivedDay[]> {
    return archivedDays(this.w.sql, beforeDay, limit);
  }

  /** One archived day of this workspace, or null (GET /message-archives/{day}). */
  async archive(day: number): Promise<ArchivedDay | null> {
    return archivedDay(this.w.sql, day);
  }
}

/**
 * Whether a row read from a shard is also hot: a move copies rows to the shard, then forgets here
 * only those unchanged meanwhile (`forgetMoved`); a changed one stays until the next move, and
 * lists show it once, from here. Such rows are the oldest hot ones, so a shard row older than
 * every hot row (`oldestHot`) needs no lookup.
 */
const stillHot = (sql: SqlStorage, row: MessageRow, oldestHot: number | null): boolean =>
  oldestHot !== null && row.created_at >= oldestHot && findMessage(sql, row.id) !== undefined;
