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
  /** From the release before day tables (its outbox listed it). */
  legacy?: boolean;
}

export class WorkQueue {
  private readonly byId = new Map<string, Entry>();
  /** Per recipient, its entries' jobIds in acceptance order (ids sort by acceptance time). */
  private readonly lines = new Map<string, string[]>();

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
    // Nearly always the newest; a reloaded or legacy entry may be older.
    let i = line.length;
    while (i > 0 && line[i - 1]! > e.jobId) i--;
    line.splice(i, 0, e.jobId);
    this.lines.set(e.recipient, line);
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

  /** Queued entries accepted at `until` or earlier, oldest first (the held bound). */
  queuedAcceptedBy(until: number, limit: number): Entry[] {
    return this.entries()
      .filter((e) => e.state === "queued" && e.acceptedAt <= until)
      .sort((a, b) => a.acceptedAt - b.acceptedAt)
      .slice(0, limit);
  }

  oldestQueuedAt(): number | null {
    let at: number | null = null;
    for (const e of this.byId.values())
      if (e.state === "queued" && (at === null || e.acceptedAt < at)) at = e.acceptedAt;
    return at;
  }
}
