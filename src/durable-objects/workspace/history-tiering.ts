import { now } from "../../lib/clock";
import { DAY_MS, utcDay, uuidV7Time } from "../../lib/job-id";
import { getMeta } from "../shared/meta";
import { NO_PROGRESS, withSlack, type ScheduledStep } from "../shared/scheduler";
import { historyStub } from "../history/history";
import { archiveRows, type ArchiveProgress } from "../history/archive-writer";
import type { WorkspaceContext } from "./context";
import type { DailyCounts } from "./counts";
import { dayOfSlot, SLOT_MS, slotOfId, slotStart, slotTable } from "./day-tables";
import { addCounts } from "./day-ledger";
import { SCAN_BUDGET, slotPage, type Page } from "./message-queries";
import { type Keyset, type MessageFilter } from "../../messages/list";
import { keepMovedKeys } from "./moved-keys";
import { IDEMPOTENCY_TTL_MS } from "./admission";
import type { MessageRow } from "../../messages/record";
import { movedOf, slotIndex, type Tiers } from "./tiers";
import { lastUnknownOfDay } from "./unknown-outcomes";

/** A slot's records stay here at least this long after the slot ends (so that a late report finds them in the object). */
export const HOT_WINDOW_MS = 48 * 60 * 60 * 1000;
/**
 * Above this, slots older than HOT_WINDOW_MS move to their day's history shard; below it, a day
 * stays here until it is archived (a workspace sending 10,000 messages a day holds its 30 days in
 * ~250 MB). The operator may set a lower budget for one workspace in its `meta` (`hot_bytes_budget`).
 */
export const HOT_BYTES_BUDGET = 1024 ** 3;
/**
 * The size guard: above this (3.5 times the budget, 3.5 GB: 35% of an object's 10 GB), slots move
 * as soon as they are MIN_HOT_WINDOW_MS old, and the Idempotency-Keys of their records still within
 * their 24 hours are kept apart (moved-keys.ts).
 */
export const PRESSURE_FACTOR = 3.5;
export const MIN_HOT_WINDOW_MS = 6 * 60 * 60 * 1000;
/** Records per chunk moved to a shard (one row there), and chunks per alarm run. */
const CHUNK_RECORDS = 200;
const CHUNKS_PER_RUN = 50;
/** Archive parts written per alarm run (each ~20,000 messages). */
const ARCHIVE_PARTS_PER_RUN = 4;
/** Records still listed for their number, given up on per alarm run before their day is archived. */
const GIVE_UP_PER_RUN = 100;
/** The plan's window when `meta` holds none (`history_days`): the usual plans' 30 days write no row. */
export const DEFAULT_HISTORY_DAYS = 30;
/** How long archives are kept (and listed); an R2 lifecycle rule deletes the objects (README, deploying). */
export const KEEP_ARCHIVES_DAYS = 400;

export interface ArchivedDay {
  day: number;
  messages: number;
  parts: number;
  archived_at: number;
}

/** A segment of a day in the newest-first order: a slot's table part, then its part in the shard. */
type Segment = { kind: "table" | "chunks"; slot: number };

/**
 * The workspace's messages across tiers: reads and lists over the slot tables here and the
 * history shards; the step that moves a busy workspace's old slots to
 * their day's shard, and the one that archives days past the plan's window to R2.
 */
export class HistoryTiering {
  constructor(
    private readonly w: WorkspaceContext,
    private readonly tiers: Tiers,
    private readonly counts: DailyCounts,
    /** Inside the transaction that drops an archived day: what else leaves with it (its media copies). */
    private readonly onDayArchived: (day: number) => void,
    /**
     * Records of a day about to be archived that their number still lists: given up on by the
     * claim's rules (status.ts `giveUpBeforeArchive`), their events published, before it returns.
     */
    private readonly giveUp: (ids: string[], at: number) => Promise<void>,
    /** How long an unknown outcome waits for the operator's report (its day is archived after). */
    private readonly unknownWindowMs: number,
  ) {}

  steps(): { moveToHistory: ScheduledStep; archiveHistory: ScheduledStep } {
    return {
      moveToHistory: {
        name: "move-to-history",
        due: (at) => withSlack(this.moveDue(at)),
        run: (at) => this.moveSlot(at),
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
    if (at.tier === "slot") return at.row;
    const workspaceId = this.w.workspaceId();
    if (at.tier === "history" && workspaceId) return historyStub(this.w.env, workspaceId, at.day).get(id);
    return null;
  }

  /**
   * One page of the workspace's messages, newest first, strictly older than `after`: day by day,
   * each day's records in this order (each older than the one before): per slot, newest first,
   * its table here and its part in the day's history shard. At most SCAN_BUDGET rows are read per page, so a page may
   * be short; `next` says where to go on (null: nothing older matches).
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
      const segments = this.segmentsOf(day);
      const here = position !== null && utcDay(position.createdAt) === day ? this.segmentOf(position) : null;
      const start =
        here === null
          ? 0
          : Math.max(
              0,
              segments.findIndex((s) => sameSegment(s, here)),
            );
      for (const segment of segments.slice(start)) {
        if (found.length === want) break;
        if (budget <= 0) return done(found.length > 0 ? found[found.length - 1]!.key : position);
        const mine = here !== null && sameSegment(segment, here) ? position : null;
        const page = await this.segmentPage(workspaceId, day, segment, filter, mine, want - found.length, budget);
        found.push(...page.rows.map((row) => ({ row, key: keysetOf(row) })));
        budget -= page.scanned;
        // The budget ran out inside this segment: go on from where it stopped.
        if (page.next && found.length < want) return done(page.next);
      }
      position = null;
      if (found.length === want) break;
    }
    return done(found.length === want ? found[limit - 1]!.key : null);
  }

  /** Days that may hold records, newest first. */
  private daysDescending(from: number, until: number): number[] {
    const days = new Set<number>(this.tiers.tables.days().filter((d) => d >= from && d <= until));
    for (const d of this.tiers.ledger.days(from, until)) {
      const s = this.tiers.ledger.get(d);
      if (s.history !== undefined) days.add(d);
    }
    return [...days].sort((a, b) => b - a);
  }

  /** A day's segments, newest first. */
  private segmentsOf(day: number): Segment[] {
    const out: Segment[] = [];
    for (let i = 3; i >= 0; i--) {
      const slot = day * 4 + i;
      out.push({ kind: "table", slot }, { kind: "chunks", slot });
    }
    return out;
  }

  /** Which segment of its day a position is in. */
  private segmentOf(k: Keyset): Segment {
    const slot = slotOfId(k.id) ?? Math.floor(k.createdAt / SLOT_MS);
    return this.tiers.inHistory(slot, k.id) ? { kind: "chunks", slot } : { kind: "table", slot };
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
    switch (segment.kind) {
      case "table": {
        if (!this.tiers.tables.has(segment.slot)) return empty;
        const moved = movedOf(state, segment.slot);
        const page = slotPage(
          this.w.sql,
          segment.slot,
          this.tiers.tables.hasIndexes(segment.slot),
          filter,
          after?.id ?? null,
          limit,
          budget,
          keysetOf,
        );
        // Records up to the move cursor are read from the shard.
        if (moved === undefined) return page;
        const rows = page.rows.filter((r) => r.id > moved);
        return { rows, next: rows.length < page.rows.length ? null : page.next, scanned: page.scanned };
      }
      case "chunks": {
        if (!workspaceId || movedOf(state, segment.slot) === undefined) return empty;
        return historyStub(this.w.env, workspaceId, day).list(slotBounded(filter, segment.slot), after, limit, budget);
      }
    }
  }

  private budgetBytes(): number {
    return Number(getMeta(this.w.sql, "hot_bytes_budget") ?? HOT_BYTES_BUDGET);
  }

  /** Whether the object is over its size guard (it keeps less: slots, and the delivery log). */
  underPressure(): boolean {
    return this.w.sql.databaseSize > this.budgetBytes() * PRESSURE_FACTOR;
  }

  /**
   * How long slots stay here after they end, given the object's size: for ever (until archived)
   * under its budget, HOT_WINDOW_MS over it, MIN_HOT_WINDOW_MS over the size guard.
   */
  private window(): number | null {
    const size = this.w.sql.databaseSize;
    const budget = this.budgetBytes();
    if (size > budget * PRESSURE_FACTOR) return MIN_HOT_WINDOW_MS;
    return size > budget ? HOT_WINDOW_MS : null;
  }

  /**
   * The slot to move next, and when: the oldest slot table past the window (none of its records
   * still in a number's hands), or one of a day that is partly in history already and past the
   * plan's window (its archive then reads the shard alone).
   */
  private moveCandidate(at: number): { slot: number; due: number } | null {
    const window = this.window();
    const archiveAfter = this.historyDays();
    // Every slot: one that cannot move yet (a record its number still lists) never hides a later one that can.
    for (const slot of this.tiers.tables.list()) {
      const day = dayOfSlot(slot);
      const state = this.tiers.ledger.get(day);
      const end = slotStart(slot) + SLOT_MS;
      const partly = state.history !== undefined || movedOf(state, slot) !== undefined;
      const dueByArchive = partly ? (day + 1 + archiveAfter) * DAY_MS : null;
      const dueBySize = window === null ? null : end + window;
      const due =
        dueByArchive === null ? dueBySize : dueBySize === null ? dueByArchive : Math.min(dueByArchive, dueBySize);
      if (due === null) continue;
      if (due <= at && this.hasPending(slot)) continue;
      return { slot, due };
    }
    return null;
  }

  private hasPending(slot: number): boolean {
    return this.w.sql.exec(`SELECT 1 FROM ${slotTable(slot)} WHERE pending = 1 LIMIT 1`).toArray().length > 0;
  }

  private moveDue(at: number): number | null {
    return this.moveCandidate(at)?.due ?? null;
  }

  /**
   * Moves a slot's records to its day's shard, a chunk at a time in key order; the cursor (in the
   * day's ledger row) says which records the shard owns from then on (reads and reports go there),
   * and moves only over a chunk the shard holds as the records are here (a record changed while
   * its chunk was on its way sends the chunk again).
   * When all are there, the slot's counts go to the day's ledger and its table is dropped: no row
   * deleted one by one. Records still within their Idempotency-Key's 24 hours (only under the size
   * guard) leave their keys behind (moved-keys.ts).
   */
  private async moveSlot(at: number): Promise<void | typeof NO_PROGRESS> {
    const workspaceId = this.w.workspaceId();
    const candidate = this.moveCandidate(at);
    if (!workspaceId) return NO_PROGRESS;
    if (candidate === null || candidate.due > at) return;
    const { slot } = candidate;
    const day = dayOfSlot(slot);
    const t = slotTable(slot);
    const shard = historyStub(this.w.env, workspaceId, day);
    const moved = movedOf(this.tiers.ledger.get(day), slot);
    let cursor = moved === undefined || moved === "*" ? "" : moved;
    for (let i = 0; i < CHUNKS_PER_RUN; i++) {
      const rows = this.w.sql
        .exec<MessageRow>(`SELECT * FROM ${t} WHERE id > ? ORDER BY id LIMIT ?`, cursor, CHUNK_RECORDS)
        .toArray();
      if (rows.length === 0) {
        const records = this.w.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t}`).one().n;
        const counts = this.counts.ofSlot(slot);
        this.w.storage.transactionSync(() => {
          this.tiers.ledger.update(day, (s) => ({
            ...s,
            counts: addCounts(s.counts, counts),
            moved: { ...(s.moved ?? {}), [slotIndex(slot)]: "*" },
            history: { records: (s.history?.records ?? 0) + records },
          }));
          this.tiers.tables.drop(slot);
        });
        this.counts.forget(slot);
        return;
      }
      const last = rows[rows.length - 1]!.id;
      // The records stay ours until the shard has them: a report or an answer may change one while
      // the chunk is on its way (this object takes other calls meanwhile). Then the chunk is sent
      // again as it is now; the shard replaces it (the same first record: none is added to a slot
      // being copied).
      this.tiers.tables.copying(slot, cursor, last);
      try {
        await shard.putChunk(rows.map(stripWork));
      } catch (err) {
        this.tiers.tables.copied();
        throw err;
      }
      if (!this.tiers.tables.copied()) continue;
      cursor = last;
      this.w.storage.transactionSync(() => {
        keepMovedKeys(this.w.sql, rows, at - IDEMPOTENCY_TTL_MS);
        this.tiers.ledger.update(day, (s) => ({ ...s, moved: { ...(s.moved ?? {}), [slotIndex(slot)]: last } }));
      });
    }
    await this.w.wake(now());
  }

  private historyDays(): number {
    return Number(getMeta(this.w.sql, "history_days") ?? DEFAULT_HISTORY_DAYS);
  }

  /** The oldest day here or in history (not archived), which leaves once all of it is older than the plan's window. */
  private archiveCandidate(): number | null {
    const local = this.tiers.tables.days()[0] ?? null;
    const inHistory =
      this.tiers.ledger.days(0, utcDay(now())).find((d) => {
        const s = this.tiers.ledger.get(d);
        return s.history !== undefined;
      }) ?? null;
    const candidates = [local, inHistory].filter((d): d is number => d !== null);
    return candidates.length === 0 ? null : Math.min(...candidates);
  }

  /**
   * When the oldest day may be archived: once past the plan's window, and not before the last of
   * its unknown outcomes has had the operator's whole window (the unknown-outcomes step fails it then).
   */
  private archiveDue(): number | null {
    const day = this.archiveCandidate();
    if (day === null) return null;
    const since = lastUnknownOfDay(this.w.sql, day);
    return Math.max((day + 1 + this.historyDays()) * DAY_MS, since === null ? 0 : since + this.unknownWindowMs);
  }

  /** Records of the day's slot tables their number still lists (the work index, or a small table read whole), a batch. */
  private stillListed(slots: number[]): string[] {
    const ids: string[] = [];
    for (const slot of slots) {
      if (ids.length >= GIVE_UP_PER_RUN) break;
      const t = slotTable(slot);
      for (const r of this.w.sql
        .exec<{ id: string }>(
          `SELECT id FROM ${t}${this.tiers.tables.hasIndexes(slot) ? ` INDEXED BY ${t}_work` : ""} WHERE pending = 1 LIMIT ?`,
          GIVE_UP_PER_RUN - ids.length,
        )
        .toArray())
        ids.push(r.id);
    }
    return ids;
  }

  /**
   * Archives the oldest day past the plan's window to R2, a few parts per run, from its slot
   * tables here or from its shard (a day partly in the shard moves the rest there first: the move
   * step does it once the day is past the window); then drops the tables (or the shard): nothing
   * is deleted before the manifest is in R2. Only terminal records are archived: one its number
   * still lists is given up on first (failed with its event, or an unknown outcome when its claim is
   * unanswered), and the archive waits for the day's unknown outcomes to be settled or failed.
   */
  private async archiveOldestDay(at: number): Promise<void | typeof NO_PROGRESS> {
    const workspaceId = this.w.workspaceId();
    const day = this.archiveCandidate();
    if (!workspaceId || day === null) return NO_PROGRESS;
    await this.w.loadConfig(workspaceId);
    // Not due yet (the plan's window changed): archiveDue names the later time.
    if ((day + 1 + this.historyDays()) * DAY_MS > at) return;
    const unknownSince = lastUnknownOfDay(this.w.sql, day);
    if (unknownSince !== null && unknownSince + this.unknownWindowMs > at) return;
    const state = this.tiers.ledger.get(day);
    const slots = this.tiers.tables.ofDay(day);
    const listed = this.stillListed(slots);
    if (listed.length > 0) {
      await this.giveUp(listed, at);
      await this.w.wake(now());
      return;
    }
    // An unknown outcome past its window not failed yet: the unknown-outcomes step does it first.
    if (unknownSince !== null) return NO_PROGRESS;
    const inShard = state.history !== undefined;
    // The rest of a day partly in its shard goes there first (move-to-history); the archive waits.
    if (inShard && slots.length > 0) return NO_PROGRESS;
    // A day archived before and re-created since adds parts after the archived ones.
    const fresh: ArchiveProgress = {
      parts: state.archived?.parts ?? 0,
      messages: state.archived?.messages ?? 0,
      cursor: null,
      done: false,
    };
    const watches = this.tiers.tables.archives;
    // Parts written by another instance may hold records changed since: those are written again.
    const start = watches.watch(day) && state.archiving ? state.archiving : fresh;
    let progress: ArchiveProgress;
    if (!inShard) {
      progress = await archiveRows(
        this.w.env.ARCHIVE,
        workspaceId,
        day,
        start,
        ARCHIVE_PARTS_PER_RUN,
        (cursor, limit) => this.readLocal(slots, cursor, limit),
      );
    } else {
      progress = await historyStub(this.w.env, workspaceId, day).archive(
        workspaceId,
        day,
        start,
        ARCHIVE_PARTS_PER_RUN,
      );
    }
    if (watches.changed(day)) {
      // A record changed after its part was written: the day is written again from its first part.
      watches.restart(day);
      progress = fresh;
    }
    if (!progress.done) {
      this.w.storage.transactionSync(() => this.tiers.ledger.update(day, (s) => ({ ...s, archiving: progress })));
      await this.w.wake(now());
      return;
    }
    watches.close(day);
    if (inShard) await historyStub(this.w.env, workspaceId, day).drop();
    const counts = this.counts.of(day);
    this.w.storage.transactionSync(() => {
      for (const slot of slots) this.tiers.tables.drop(slot);
      this.tiers.ledger.update(day, (s) => {
        const { archiving: _a, history: _h, moved: _m, ...rest } = s;
        return { ...rest, counts, archived: { messages: progress.messages, parts: progress.parts, at: now() } };
      });
      this.onDayArchived(day);
      for (const old of this.tiers.ledger.days(0, day - KEEP_ARCHIVES_DAYS)) this.tiers.ledger.delete(old);
    });
    for (const slot of slots) this.counts.forget(slot);
    watches.forget(day);
  }

  /** A day's records here, in key order (slots ascending): the archive's source. Cursor: "<slot>:<id>". */
  private readLocal(
    slots: number[],
    cursor: string | null,
    limit: number,
  ): { rows: MessageRow[]; cursor: string | null } {
    const [fromSlot, fromId] =
      cursor === null ? [slots[0] ?? 0, ""] : [Number(cursor.split(":")[0]), cursor.slice(cursor.indexOf(":") + 1)];
    const rows: MessageRow[] = [];
    let last = cursor;
    for (const slot of slots) {
      if (slot < fromSlot || rows.length >= limit) continue;
      const after = slot === fromSlot ? fromId : "";
      const page = this.w.sql
        .exec<MessageRow>(
          `SELECT * FROM ${slotTable(slot)} WHERE id > ? ORDER BY id LIMIT ?`,
          after,
          limit - rows.length,
        )
        .toArray();
      rows.push(...page);
      if (page.length > 0) last = `${slot}:${page[page.length - 1]!.id}`;
    }
    return { rows, cursor: last };
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

const sameSegment = (a: Segment, b: Segment): boolean => a.kind === b.kind && a.slot === b.slot;

/** A record's position: its id and its id's time. */
function keysetOf(r: MessageRow): Keyset {
  return { createdAt: uuidV7Time(r.id) ?? r.created_at, id: r.id };
}

/** The filter narrowed to one slot (its part of a day's shard). */
const slotBounded = (f: MessageFilter, slot: number): MessageFilter => ({
  ...f,
  createdFrom: Math.max(f.createdFrom ?? 0, slotStart(slot)),
  createdUntil: Math.min(f.createdUntil ?? Number.MAX_SAFE_INTEGER, slotStart(slot) + SLOT_MS),
});

/** A record as a shard keeps it: the send's work state stays behind. */
const stripWork = (r: MessageRow): MessageRow => {
  const { idem_key: _k, fingerprint: _f, pending: _p, attempts: _a, answered: _n, next_attempt_at: _t, ...rest } = r;
  return rest as MessageRow;
};
