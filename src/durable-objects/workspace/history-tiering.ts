import { now } from "../../lib/clock";
import { DAY_MS, utcDay, uuidV7Time } from "../../domain/job-id";
import { getMeta } from "../shared/meta";
import { withSlack, type ScheduledStep } from "../shared/scheduler";
import { historyStub } from "../history/history";
import type { ArchiveProgress } from "../history/archive-writer";
import { archiveRows } from "../history/archive-writer";
import type { WorkspaceContext } from "./context";
import type { DailyCounts } from "./counts";
import { dayTable } from "./day-tables";
import { dayPage, SCAN_BUDGET, type Keyset, type MessageFilter, type Page } from "./message-queries";
import type { MessageRow } from "./record";
import type { Tiers } from "./tiers";
import { legacyPage } from "./legacy/message-queries-v1";

/** A day's table stays here at least until this many days after it (so every key of the last 24 hours is in a table here). */
export const HOT_DAYS = 2;
/**
 * Above this, days older than HOT_DAYS move to their history shards; below it, a day stays here
 * until it is archived (a workspace sending 10,000 messages a day holds its 30 days in ~230 MB).
 * The operator may set a lower budget for one workspace in its `meta` (`hot_bytes_budget`).
 */
export const HOT_BYTES_BUDGET = 1024 ** 3;
/** Records per chunk moved to a shard (one row there), and chunks per alarm run. */
const CHUNK_RECORDS = 200;
const CHUNKS_PER_RUN = 50;
/** Archive parts written per alarm run (each ~20,000 messages). */
const ARCHIVE_PARTS_PER_RUN = 4;
const DEFAULT_HISTORY_DAYS = 30;
/** How long archives are kept (and listed); an R2 lifecycle rule deletes the objects (README, deploying). */
export const KEEP_ARCHIVES_DAYS = 400;

export interface ArchivedDay {
  day: number;
  messages: number;
  parts: number;
  archived_at: number;
}

/**
 * The workspace's messages across tiers: reads and lists over the day tables here, the earlier
 * layout's table, and the history shards; the step that moves a busy workspace's old days to
 * their shards, and the one that archives days past the plan's window to R2.
 */
export class HistoryTiering {
  constructor(
    private readonly w: WorkspaceContext,
    private readonly tiers: Tiers,
    private readonly counts: DailyCounts,
  ) {}

  steps(): { moveToHistory: ScheduledStep; archiveHistory: ScheduledStep } {
    return {
      moveToHistory: {
        name: "move-to-history",
        due: () => withSlack(this.moveDue()),
        run: (at) => this.moveOldestDay(at),
      },
      archiveHistory: {
        name: "archive-history",
        due: () => withSlack(this.archiveDue()),
        run: (at) => this.archiveOldestDay(at),
      },
    };
  }

  /** A message of this workspace, wherever it lives now. */
  async getMessage(id: string): Promise<MessageRow | null> {
    const at = this.tiers.locate(id);
    if (at.tier === "day" || at.tier === "legacy") return at.row;
    const workspaceId = this.w.workspaceId();
    if (at.tier === "history" && workspaceId) return historyStub(this.w.env, workspaceId, at.day).get(id);
    return null;
  }

  /**
   * One page of the workspace's messages, newest first, strictly older than `after`: day by day,
   * each day's records in this order (each older than the one before): its table here, its
   * chunks in its history shard, then records of the earlier layout still here, then those in
   * the shard. At most SCAN_BUDGET rows are read per page, so a page may be short; `next` says
   * where to go on (null: nothing older matches).
   */
  async listMessages(
    filter: MessageFilter,
    after: Keyset | null,
    limit: number,
  ): Promise<{ rows: MessageRow[]; next: Keyset | null }> {
    const workspaceId = this.w.workspaceId();
    // One more than the page: whether anything older matches decides between a cursor and the end.
    const want = limit + 1;
    const found: { row: MessageRow; key: Keyset }[] = [];
    const done = (next: Keyset | null) => ({ rows: found.slice(0, limit).map((f) => f.row), next });
    let budget = SCAN_BUDGET;
    const newestDay = after ? utcDay(after.createdAt) : utcDay(now());
    const until = filter.createdUntil === undefined ? newestDay : Math.min(newestDay, utcDay(filter.createdUntil - 1));
    const from = filter.createdFrom === undefined ? 0 : utcDay(filter.createdFrom);
    let position = after;
    for (const day of this.daysDescending(from, until)) {
      for (const segment of SEGMENTS) {
        if (found.length === want) break;
        if (budget <= 0) return done(found.length > 0 ? found[found.length - 1]!.key : position);
        const here = position !== null && utcDay(position.createdAt) === day ? this.segmentOf(day, position) : null;
        if (here !== null && SEGMENTS.indexOf(here) > SEGMENTS.indexOf(segment)) continue;
        const mine = here === segment ? position : null;
        const page = await this.segmentPage(workspaceId, day, segment, filter, mine, want - found.length, budget);
        const legacy = segment === "legacy" || segment === "shard-legacy";
        found.push(...page.rows.map((row) => ({ row, key: legacy ? legacyKeyset(row) : keysetOf(row) })));
        budget -= page.scanned;
        // The budget ran out inside this segment: go on from where it stopped.
        if (page.next && found.length < want) return done(page.next);
        position = null;
      }
      if (found.length === want) break;
    }
    return done(found.length === want ? found[limit - 1]!.key : null);
  }

  /** Days that may hold records, newest first. */
  private daysDescending(from: number, until: number): number[] {
    const days = new Set<number>(this.tiers.tables.list().filter((d) => d >= from && d <= until));
    for (const d of this.tiers.ledger.days(from, until)) {
      const s = this.tiers.ledger.get(d);
      if (s.history !== undefined || s.legacyHistory !== undefined) days.add(d);
    }
    if (this.tiers.hasLegacy()) {
      const span = this.w.sql
        .exec<{ lo: number | null; hi: number | null }>(
          "SELECT MIN(created_at) AS lo, MAX(created_at) AS hi FROM messages",
        )
        .one();
      if (span.lo !== null && span.hi !== null)
        for (let d = Math.max(from, utcDay(span.lo)); d <= Math.min(until, utcDay(span.hi)); d++) days.add(d);
    }
    return [...days].sort((a, b) => b - a);
  }

  /** Which segment of its day a position is in. */
  private segmentOf(day: number, k: Keyset): Segment {
    if (k.legacy) {
      const boundary = JSON.parse(getMeta(this.w.sql, "history_boundary") ?? "null") as Keyset | null;
      const moved =
        boundary !== null &&
        (k.createdAt < boundary.createdAt || (k.createdAt === boundary.createdAt && k.id <= boundary.id));
      return moved ? "shard-legacy" : "legacy";
    }
    return this.tiers.inHistory(day, k.id) ? "chunks" : "table";
  }

  private async segmentPage(
    workspaceId: string | null,
    day: number,
    segment: Segment,
    filter: MessageFilter,
    after: Keyset | null,
    limit: number,
    budget: number,
  ): Promise<Page> {
    const empty: Page = { rows: [], next: null, scanned: 0 };
    const state = this.tiers.ledger.get(day);
    switch (segment) {
      case "table": {
        if (!this.tiers.tables.has(day)) return empty;
        const floor = state.moveCursor;
        const page = dayPage(this.w.sql, day, filter, after?.id ?? null, limit, budget, keysetOf);
        // Records at or below the move cursor are read from the shard.
        if (floor === undefined) return page;
        const rows = page.rows.filter((r) => r.id > floor);
        return { rows, next: rows.length < page.rows.length ? null : page.next, scanned: page.scanned };
      }
      case "chunks":
        if (!workspaceId || (state.history === undefined && state.moveCursor === undefined)) return empty;
        return historyStub(this.w.env, workspaceId, day).list("chunks", filter, after, limit, budget);
      case "legacy":
        if (!this.tiers.hasLegacy()) return empty;
        return legacyPage(this.w.sql, dayBounded(filter, day), after, limit, budget);
      case "shard-legacy":
        if (!workspaceId || state.legacyHistory === undefined) return empty;
        return historyStub(this.w.env, workspaceId, day).list("legacy", dayBounded(filter, day), after, limit, budget);
    }
  }

  private budgetBytes(): number {
    return Number(getMeta(this.w.sql, "hot_bytes_budget") ?? HOT_BYTES_BUDGET);
  }

  /** The oldest day table that may move: past HOT_DAYS, the object over its budget, none of its records still in the number's hands. */
  private moveCandidate(): number | null {
    const oldest = this.tiers.tables.oldest();
    if (oldest === null || (oldest + HOT_DAYS) * DAY_MS > now()) return null;
    if (this.w.sql.databaseSize <= this.budgetBytes() && this.tiers.ledger.get(oldest).moveCursor === undefined)
      return null;
    return oldest;
  }

  private moveDue(): number | null {
    const day = this.moveCandidate();
    return day === null ? null : (day + HOT_DAYS) * DAY_MS;
  }

  /**
   * Moves the oldest day's records to its shard, a chunk at a time in key order; the cursor (in
   * the day's ledger row) says which records the shard owns from then on (reads and reports go
   * there). When all are there, the day's counts are frozen and the table is dropped: no row
   * deleted one by one. A day whose records still have work (a number's queue) waits.
   */
  private async moveOldestDay(at: number): Promise<void> {
    const workspaceId = this.w.workspaceId();
    const day = this.moveCandidate();
    if (!workspaceId || day === null || (day + HOT_DAYS) * DAY_MS > at) return;
    const t = dayTable(day);
    if (this.w.sql.exec(`SELECT 1 FROM ${t} WHERE pending = 1 LIMIT 1`).toArray().length > 0) return;
    const shard = historyStub(this.w.env, workspaceId, day);
    let cursor = this.tiers.ledger.get(day).moveCursor ?? "";
    for (let i = 0; i < CHUNKS_PER_RUN; i++) {
      const rows = this.w.sql
        .exec<MessageRow>(`SELECT * FROM ${t} WHERE id > ? ORDER BY id LIMIT ?`, cursor, CHUNK_RECORDS)
        .toArray();
      if (rows.length === 0) {
        const records = this.w.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t}`).one().n;
        const counts = this.counts.of(day);
        this.w.storage.transactionSync(() => {
          this.tiers.ledger.update(day, (s) => {
            const { moveCursor: _moved, ...rest } = s;
            return { ...rest, counts, history: { records: (s.history?.records ?? 0) + records } };
          });
          this.tiers.tables.drop(day);
        });
        this.counts.forget(day);
        return;
      }
      await shard.putChunk(rows.map(stripWork));
      cursor = rows[rows.length - 1]!.id;
      const moved = cursor;
      this.w.storage.transactionSync(() => this.tiers.ledger.update(day, (s) => ({ ...s, moveCursor: moved })));
    }
    await this.w.wake(now());
  }

  private historyDays(): number {
    return Number(getMeta(this.w.sql, "history_days") ?? DEFAULT_HISTORY_DAYS);
  }

  /** The oldest day here or in history, which leaves once all of it is older than the plan's window. */
  private archiveCandidate(): number | null {
    const table = this.tiers.tables.oldest();
    const inHistory =
      this.tiers.ledger.days(0, utcDay(now())).find((d) => {
        const s = this.tiers.ledger.get(d);
        return s.history !== undefined || s.legacyHistory !== undefined;
      }) ?? null;
    const candidates = [table, inHistory].filter((d): d is number => d !== null);
    return candidates.length === 0 ? null : Math.min(...candidates);
  }

  private archiveDue(): number | null {
    const day = this.archiveCandidate();
    return day === null ? null : (day + 1 + this.historyDays()) * DAY_MS;
  }

  /**
   * Archives the oldest day past the plan's window to R2, a few parts per run, from its table
   * here or from its shard; then drops the table (or the shard): nothing is deleted before the
   * manifest is in R2.
   */
  private async archiveOldestDay(at: number): Promise<void> {
    const workspaceId = this.w.workspaceId();
    const day = this.archiveCandidate();
    if (!workspaceId || day === null) return;
    await this.w.loadConfig(workspaceId);
    if ((day + 1 + this.historyDays()) * DAY_MS > at) return;
    const state = this.tiers.ledger.get(day);
    // A day archived before and re-created since adds parts after the archived ones.
    const start: ArchiveProgress = state.archiving ?? {
      parts: state.archived?.parts ?? 0,
      messages: state.archived?.messages ?? 0,
      cursor: null,
      done: false,
    };
    const local =
      this.tiers.tables.has(day) &&
      state.moveCursor === undefined &&
      state.history === undefined &&
      state.legacyHistory === undefined;
    let progress: ArchiveProgress;
    if (local) {
      const t = dayTable(day);
      progress = await archiveRows(
        this.w.env.ARCHIVE,
        workspaceId,
        day,
        start,
        ARCHIVE_PARTS_PER_RUN,
        (cursor, limit) => {
          const rows = this.w.sql
            .exec<MessageRow>(`SELECT * FROM ${t} WHERE id > ? ORDER BY id LIMIT ?`, cursor ?? "", limit)
            .toArray();
          return { rows, cursor: rows[rows.length - 1]?.id ?? cursor };
        },
      );
    } else {
      progress = await historyStub(this.w.env, workspaceId, day).archive(
        workspaceId,
        day,
        start,
        ARCHIVE_PARTS_PER_RUN,
      );
    }
    if (!progress.done) {
      this.w.storage.transactionSync(() => this.tiers.ledger.update(day, (s) => ({ ...s, archiving: progress })));
      await this.w.wake(now());
      return;
    }
    if (!local) await historyStub(this.w.env, workspaceId, day).drop();
    const counts = local ? this.counts.of(day) : undefined;
    this.w.storage.transactionSync(() => {
      if (local) this.tiers.tables.drop(day);
      this.tiers.ledger.update(day, (s) => {
        const { archiving: _a, history: _h, legacyHistory: _l, moveCursor: _m, ...rest } = s;
        return {
          ...rest,
          ...(counts ? { counts } : {}),
          archived: { messages: progress.messages, parts: progress.parts, at: now() },
        };
      });
      for (const old of this.tiers.ledger.days(0, day - KEEP_ARCHIVES_DAYS)) this.tiers.ledger.delete(old);
    });
    this.counts.forget(day);
  }

  /** Days archived to R2, newest first (GET /message-archives). */
  listArchives(beforeDay: number | null, limit: number): ArchivedDay[] {
    const out: ArchivedDay[] = [];
    const upper = beforeDay === null ? utcDay(now()) : beforeDay - 1;
    for (const day of this.tiers.ledger.days(0, upper).reverse()) {
      const a = this.tiers.ledger.get(day).archived;
      if (!a) continue;
      out.push({ day, messages: a.messages, parts: a.parts, archived_at: a.at });
      if (out.length === limit) break;
    }
    return out;
  }

  /** One archived day of this workspace, or null (GET /message-archives/{day}). */
  archive(day: number): ArchivedDay | null {
    const a = this.tiers.ledger.get(day).archived;
    return a ? { day, messages: a.messages, parts: a.parts, archived_at: a.at } : null;
  }
}

const SEGMENTS = ["table", "chunks", "legacy", "shard-legacy"] as const;
type Segment = (typeof SEGMENTS)[number];

/** A record's position: by id for records of this release (their id's time), by (created_at, id) for the earlier layout's. */
function keysetOf(r: MessageRow): Keyset {
  return { createdAt: uuidV7Time(r.id) ?? r.created_at, id: r.id };
}

const legacyKeyset = (r: MessageRow): Keyset => ({ createdAt: r.created_at, id: r.id, legacy: true });

/** The filter narrowed to one UTC day (the earlier layout's records are listed day by day too). */
const dayBounded = (f: MessageFilter, day: number): MessageFilter => ({
  ...f,
  createdFrom: Math.max(f.createdFrom ?? 0, day * DAY_MS),
  createdUntil: Math.min(f.createdUntil ?? Number.MAX_SAFE_INTEGER, (day + 1) * DAY_MS),
});

/** A record as a shard keeps it: the send's work state stays behind. */
const stripWork = (r: MessageRow): MessageRow => {
  const { idem_key: _k, fingerprint: _f, pending: _p, attempts: _a, answered: _n, next_attempt_at: _t, ...rest } = r;
  return rest as MessageRow;
};
