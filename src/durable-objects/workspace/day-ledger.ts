import { getMeta, setMeta } from "../shared/meta";
import type { ArchiveProgress } from "../history/archive-writer";

/** Per-number counts of a day: accepted, sent, failed, received. */
export type Tally = [number, number, number, number];
export type DayCounts = Record<string, Tally>;

/**
 * What the workspace knows of one UTC day besides its records, as one `meta` row (`day:<n>`),
 * written only when the day changes hands:
 * - `counts`: the day's counts once its table is gone; a day whose table is here adds the table's
 *   own counts to them;
 * - `moved`: per slot of the day (0–3, see day-tables.ts), how much of it is in the day's history
 *   shard: "*" all of it (its table is gone), or the id up to which its records are there (it is
 *   moving; the records up to the cursor are read and changed in the shard from then on);
 * - `history`: records of the day in its shard;
 * - `archiving` / `archived`: its archive to R2, in progress or done (kept 400 days, listed by
 *   GET /message-archives);
 * - `media`: the inbound media of its messages copied to R2 (or being copied): bytes and items,
 *   held to the plan's bytes per day (media-copies.ts).
 * A day with none of these (a day whose table is here and nothing else happened) has no row.
 *
 * Bound: one row per day that left the object or was archived, ~200 B, 400 days at most.
 */
export interface DayState {
  counts?: DayCounts;
  moved?: Record<string, string>;
  history?: { records: number };
  archiving?: ArchiveProgress;
  archived?: { messages: number; parts: number; at: number };
  media?: { bytes: number; items: number };
}

const key = (day: number): string => `day:${String(day).padStart(6, "0")}`;

export class DayLedger {
  private readonly cache = new Map<number, DayState>();

  constructor(private readonly sql: SqlStorage) {}

  get(day: number): DayState {
    let s = this.cache.get(day);
    if (!s) {
      const raw = getMeta(this.sql, key(day));
      s = raw ? (JSON.parse(raw) as DayState) : {};
      this.cache.set(day, s);
    }
    return s;
  }

  /** Writes the day's state (one row), inside the caller's transaction. */
  set(day: number, state: DayState): void {
    setMeta(this.sql, key(day), JSON.stringify(state));
    this.cache.set(day, state);
  }

  update(day: number, change: (s: DayState) => DayState): DayState {
    const next = change({ ...this.get(day) });
    this.set(day, next);
    return next;
  }

  /** Forgets an entry (a day archived longer than archives are kept). */
  delete(day: number): void {
    this.sql.exec("DELETE FROM meta WHERE k = ?", key(day));
    this.cache.delete(day);
  }

  /** Days with a row, ascending, within [from, to]. */
  days(from: number, to: number): number[] {
    return this.sql
      .exec<{ k: string }>("SELECT k FROM meta WHERE k >= ? AND k <= ? ORDER BY k", key(from), key(to))
      .toArray()
      .map((r) => Number(r.k.slice(4)));
  }

  /** Drops what a rollback may have left in memory. */
  reset(): void {
    this.cache.clear();
  }
}

export const addTally = (a: Tally | undefined, b: Tally | undefined): Tally => [
  (a?.[0] ?? 0) + (b?.[0] ?? 0),
  (a?.[1] ?? 0) + (b?.[1] ?? 0),
  (a?.[2] ?? 0) + (b?.[2] ?? 0),
  (a?.[3] ?? 0) + (b?.[3] ?? 0),
];

export function addCounts(a: DayCounts | undefined, b: DayCounts | undefined): DayCounts {
  const out: DayCounts = { ...(a ?? {}) };
  for (const [n, t] of Object.entries(b ?? {})) out[n] = addTally(out[n], t);
  return out;
}
