/**
 * The number's queue, in memory only: the messages it still has to call, one line per recipient
 * (a conversation), each line in acceptance order. It is a view of the workspace's records (their
 * `pending` work list), rebuilt from them after a restart: the records are the durable state, so
 * the number writes no row per message.
 *
 * Bound: one entry (~150 B) per message with work left: at most 24 hours of the number's 2/s
 * (a paused number; HELD_BOUND_MS), 172,800 entries, ~26 MB.
 */
export type EntryState = "queued" | "calling" | "holding";

export interface Entry {
  jobId: string;
  workspaceId: string;
  recipient: string;
  acceptedAt: number;
  /** Claims granted for it (the next call is attempt `attempts + 1`). */
  attempts: number;
  /** Not before this (a retry's back-off, the pair pace, a claim to ask again). */
  nextAttemptAt: number;
  /** When its first call was claimed (a retry's one-hour budget counts from it). */
  firstAttemptAt?: number;
  state: EntryState;
}

export class WorkQueue {
  private readonly byId = new Map<string, Entry>();
  /** Per recipient, its entries' jobIds in acceptance order (ids sort by acceptance time). */
  private readonly lines = new Map<string, string[]>();
  /**
   * Every jobId in acceptance order, from `front` on: the held bound reads the oldest without
   * walking the queue. Removed ids stay until the front passes them (a removal is a Map delete).
   */
  private order: [acceptedAt: number, jobId: string][] = [];
  private front = 0;

  get size(): number {
    return this.byId.size;
  }

  get(jobId: string): Entry | undefined {
    return this.byId.get(jobId);
  }

  has(jobId: string): boolean {
    return this.byId.has(jobId);
  }

  entries(): Entry[] {
    return [...this.byId.values()];
  }

  add(e: Entry): void {
    if (this.byId.has(e.jobId)) return;
    this.byId.set(e.jobId, e);
    const line = this.lines.get(e.recipient) ?? [];
    // Nearly always the newest; a reloaded entry may be older.
    let i = line.length;
    while (i > 0 && line[i - 1]! > e.jobId) i--;
    line.splice(i, 0, e.jobId);
    this.lines.set(e.recipient, line);
    this.addToOrder(e.acceptedAt, e.jobId);
  }

  private addToOrder(at: number, jobId: string): void {
    const before = (k: [number, string]) => k[0] < at || (k[0] === at && k[1] < jobId);
    const last = this.order[this.order.length - 1];
    if (last === undefined || before(last)) {
      this.order.push([at, jobId]);
      return;
    }
    let lo = this.front;
    let hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (before(this.order[mid]!)) lo = mid + 1;
      else hi = mid;
    }
    // Already there when it was removed and added again (a reload): kept once.
    if (this.order[lo]?.[1] !== jobId) this.order.splice(lo, 0, [at, jobId]);
  }

  /** The entries in acceptance order, from the oldest; drops the removed ids at the front as it goes. */
  private *oldestFirst(): Generator<Entry> {
    while (this.front < this.order.length && !this.byId.has(this.order[this.front]![1])) this.front++;
    if (this.front > 1024 && this.front * 2 > this.order.length) {
      this.order = this.order.slice(this.front);
      this.front = 0;
    }
    for (let i = this.front; i < this.order.length; i++) {
      const e = this.byId.get(this.order[i]![1]);
      if (e) yield e;
    }
  }

  remove(jobId: string): Entry | undefined {
    const e = this.byId.get(jobId);
    if (!e) return undefined;
    this.byId.delete(jobId);
    const line = this.lines.get(e.recipient);
    if (line) {
      const i = line.indexOf(jobId);
      if (i >= 0) line.splice(i, 1);
      if (line.length === 0) this.lines.delete(e.recipient);
    }
    return e;
  }

  /** The head of each conversation (its oldest entry): only a head may be called, and only when it is queued. */
  private heads(): Entry[] {
    const out: Entry[] = [];
    for (const line of this.lines.values()) {
      const head = this.byId.get(line[0]!);
      if (head) out.push(head);
    }
    return out;
  }

  /** The due head to call next: the earliest due, then the oldest; `allowed` filters (the pair pace). */
  nextDue(at: number, allowed: (e: Entry) => boolean = () => true): Entry | undefined {
    let best: Entry | undefined;
    for (const h of this.heads()) {
      if (h.state !== "queued" || h.nextAttemptAt > at || !allowed(h)) continue;
      if (
        !best ||
        h.nextAttemptAt < best.nextAttemptAt ||
        (h.nextAttemptAt === best.nextAttemptAt && h.jobId < best.jobId)
      )
        best = h;
    }
    return best;
  }

  /** When the next head is due, or null when no conversation can move. */
  nextDueAt(notBefore: (e: Entry) => number = (e) => e.nextAttemptAt): number | null {
    let at: number | null = null;
    for (const h of this.heads()) {
      if (h.state !== "queued") continue;
      const t = notBefore(h);
      if (at === null || t < at) at = t;
    }
    return at;
  }

  /**
   * Queued entries accepted at `until` or earlier, oldest first (the held bound). Walks from the
   * oldest and stops at the first accepted later: what it passes that is not queued is being
   * called or handed (at most a few per conversation being called).
   */
  queuedAcceptedBy(until: number, limit: number): Entry[] {
    const out: Entry[] = [];
    for (const e of this.oldestFirst()) {
      if (e.acceptedAt > until || out.length >= limit) break;
      if (e.state === "queued") out.push(e);
    }
    return out;
  }

  oldestQueuedAt(): number | null {
    for (const e of this.oldestFirst()) if (e.state === "queued") return e.acceptedAt;
    return null;
  }
}
