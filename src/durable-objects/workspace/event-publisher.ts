import type { WebhookEvent } from "../../messages/events";
import { publishEventPacks } from "../../lib/event-packs";
import type { QueueSender } from "../../lib/queue-batches";
import { now } from "../../lib/clock";
import { errorText, log } from "../../lib/log";
import { changesOf, eventOf } from "./message-events";
import type { MessageRow } from "../../messages/record";

/**
 * Status events wait up to this long before publishing, so that the changes of that second go out
 * packed in one queue message (billed per message): a number sending at its 2/s puts about two
 * messages' events in each pack, ten busy numbers twenty. A customer's webhook hears of a status
 * change up to 1 s later. An inbound message is published at once (a conversation waits on it).
 */
export const PUBLISH_DELAY_MS = 1_000;
/**
 * The alarm that publishes what an instance lost (it restarted with changes owed and nothing
 * called it since) runs at the latest this long after the change. Most of the time the object's
 * alarm is armed sooner for its counts (once a minute while it has work): the backstop then costs
 * no alarm write of its own.
 */
export const PUBLISH_BACKSTOP_MS = 60_000;
/** Messages whose events one flush reads and publishes at once: what the publisher holds in memory at most. */
export const PUBLISH_PAGE = 100;
const RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000] as const;

/**
 * The list of messages whose changes are committed and not yet announced: one row per message,
 * with the position in its record's sequence of changes (`changes`, status-transition.ts) of the
 * first change not announced, and `seq`, the order it was listed in (inbound messages of one
 * conversation are published in the order they were recorded). Written in the transaction of the
 * change (INSERT … ON CONFLICT DO NOTHING: a second change of a message already listed writes
 * nothing), deleted once the message's events are on the queue. No index besides the key: a page
 * is read in `seq` order from a list that is a pack's worth long.
 *
 * Bound: ~70 B per row. Rows live from a change to its pack's flush (≤ 1 s, one row per message
 * changed in that second: ~20 at design load); while the queue refuses, one per message changed
 * since (72,000 per hour at 20 changes per second, ~4 MB), emptied in pages as the queue takes them.
 */
export function createOwedEventsTable(sql: SqlStorage): void {
  sql.exec(
    "CREATE TABLE IF NOT EXISTS owed_events (id TEXT PRIMARY KEY, from_change INTEGER NOT NULL, seq INTEGER NOT NULL) WITHOUT ROWID",
  );
}

export interface PublisherDeps {
  sql: SqlStorage;
  storage: DurableObjectStorage;
  queue: QueueSender;
  /** How long a status change waits for others (0: published at once). */
  delayMs: number;
  /** The record of a message, wherever it lives now (a history shard's is read from there). */
  read: (id: string) => Promise<MessageRow | null>;
  workspaceId: () => string | null;
  /** Arms the object's alarm no later than a time (it runs `flush` when `due`). */
  wake: (at: number) => Promise<void>;
}

/**
 * The customer events of one workspace object, from the commit of the change they announce to the
 * queue. Nothing of an event is stored: it is rebuilt from its record (message-events.ts), with the
 * same id and content every time. What must not be lost is the obligation to announce, and that is
 * durable: the owed list above, written in the change's own transaction. So a change committed is
 * announced even when the object restarts (or every object does, in a deploy) before its events
 * left: the next instance finds the list on start and publishes it; its alarm does if nothing
 * calls it. Callers never wait for their events to be announced; at worst an event is announced
 * twice (a flush whose delete was lost), with the same `webhook-id`, which customers deduplicate on.
 *
 * When: an in-memory timer publishes what is due (at once for an inbound message, `delayMs` after
 * the first status change of a pack), and every call into the object checks the time on the
 * object's clock (`tick`: the clock tests and the cost bench move). The alarm is only the backstop
 * for an instance that restarted (PUBLISH_BACKSTOP_MS), not one per second of activity.
 *
 * Memory: one page of messages at a time (PUBLISH_PAGE) and the ids of that page; the rest waits
 * in storage, however long the queue refuses.
 */
export class EventPublisher {
  /** When what is owed is due on the object's clock (null: nothing owed, as far as this instance knows). */
  private dueAt: number | null = null;
  private retryAt = 0;
  private failures = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private soonQueued = false;
  private flushing: Promise<void> | null = null;
  /** Messages of the flush in progress, and those of them changed again meanwhile. */
  private inFlight = new Set<string>();
  private readonly dirty = new Set<string>();
  /** Messages whose change is being written elsewhere (a history shard): a flush meanwhile keeps their row. */
  private readonly pinned = new Map<string, number>();
  private heldPeak = 0;
  private seq: number;

  constructor(private readonly d: PublisherDeps) {
    const last = d.sql.exec<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM owed_events").one().seq;
    this.seq = last ?? 0;
    // Owed by an earlier instance: published now (re-derived from storage, nothing was in memory).
    if (last !== null) {
      this.dueAt = now();
      this.arm();
    }
  }

  /**
   * The events of a message's changes from position `from` of its sequence are owed: call inside
   * the transaction that commits them. `soon`: published at once (an inbound message).
   */
  owe(id: string, from: number, soon = false): void {
    this.d.sql.exec(
      "INSERT INTO owed_events (id, from_change, seq) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
      id,
      from,
      ++this.seq,
    );
    if (this.inFlight.has(id)) this.dirty.add(id);
    const t = now();
    const at = Math.max(soon ? t : t + this.d.delayMs, this.retryAt);
    const first = this.dueAt === null;
    if (first || at < this.dueAt!) {
      this.dueAt = at;
      this.arm();
    }
    if (first)
      void this.d
        .wake(t + PUBLISH_BACKSTOP_MS)
        .catch((e: unknown) => log("warn", "arming the publish backstop failed", { error: errorText(e) }));
  }

  /** A change of the message is being written in another object (its row, owed before, must outlive a flush meanwhile). */
  pin(id: string): void {
    this.pinned.set(id, (this.pinned.get(id) ?? 0) + 1);
  }

  unpin(id: string): void {
    const n = (this.pinned.get(id) ?? 1) - 1;
    if (n > 0) this.pinned.set(id, n);
    else this.pinned.delete(id);
  }

  /** When what is owed is due (the alarm's step), or null. */
  due(): number | null {
    // A flush under way is due: the alarm's step awaits it (its run returns that flush).
    return this.flushing !== null ? now() : this.dueAt;
  }

  /** The latest the alarm must run for it: the backstop (the timer publishes it first, unless the instance is gone). */
  latest(): number | null {
    const due = this.due();
    return due === null ? null : due + PUBLISH_BACKSTOP_MS;
  }

  /** The most events this instance held in memory at once (a page's worth at most). */
  peakHeld(): number {
    return this.heldPeak;
  }

  /** Publishes what is due on the object's clock (every call into the object runs this first). */
  tick(): void {
    if (this.dueAt !== null && now() >= this.dueAt) void this.flush();
  }

  /**
   * Resolves once what is due now was tried (published, or kept for a retry); never throws. A
   * pack still waiting for its second is not waited for.
   */
  async settled(): Promise<void> {
    if (this.flushing) await this.flushing;
    if (this.dueAt !== null && now() >= this.dueAt) await this.flush();
  }

  /**
   * Publishes what is owed now, whatever its pack's time (a step that must not go on before its
   * events left: the archive drops the records they are rebuilt from); throws when the queue
   * refused them (they stay owed and are tried again).
   */
  async flushNow(): Promise<void> {
    if (this.flushing) await this.flushing;
    if (this.d.sql.exec("SELECT 1 FROM owed_events LIMIT 1").toArray().length === 0) return;
    this.dueAt = Math.min(this.dueAt ?? now(), now());
    await this.flush();
    if (this.failures > 0) throw new Error("events could not be queued; they stay owed and are tried again");
  }

  /** Publishes everything owed, page by page; a failure keeps it owed (with a back-off). Never throws. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    this.flushing = this.run().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  private async run(): Promise<void> {
    for (;;) {
      if (this.dueAt === null || now() < this.dueAt) return;
      // What is owed from here on is due on its own time again (`owe` sets it).
      this.dueAt = null;
      const rows = this.d.sql
        .exec<{ id: string; from_change: number }>(
          "SELECT id, from_change FROM owed_events ORDER BY seq LIMIT ?",
          PUBLISH_PAGE,
        )
        .toArray();
      if (rows.length === 0) return;
      if (!(await this.publishPage(rows))) return;
      // A full page: more may wait in storage, due now.
      if (rows.length === PUBLISH_PAGE) this.dueAt = Math.min(this.dueAt ?? now(), now());
    }
  }

  /** One page: its events rebuilt from their records, published, and the page's rows settled. False when the queue refused. */
  private async publishPage(rows: { id: string; from_change: number }[]): Promise<boolean> {
    const workspaceId = this.d.workspaceId() ?? "";
    this.inFlight = new Set(rows.map((r) => r.id));
    this.dirty.clear();
    const pages: { id: string; through: number; events: WebhookEvent[]; left: number }[] = [];
    try {
      for (const r of rows) {
        const record = await this.d.read(r.id);
        if (!record) {
          // Archived or dropped since: nothing of it can be announced any more.
          log("warn", "owed events of a message no longer here are dropped", { messageId: r.id });
          pages.push({ id: r.id, through: r.from_change, events: [], left: 0 });
          continue;
        }
        const changes = changesOf(record);
        const events = changes.slice(r.from_change).map((c) => eventOf(workspaceId, record, c));
        pages.push({ id: r.id, through: changes.length, events, left: events.length });
      }
      this.heldPeak = Math.max(
        this.heldPeak,
        pages.reduce((n, p) => n + p.events.length, 0),
      );
      const done = (key: { page: number }) => pages[key.page]!.left--;
      let ok = true;
      try {
        await publishEventPacks(
          this.d.queue,
          pages.flatMap((p, page) => p.events.map((event) => ({ key: { page, eventId: event.id }, event }))),
          {
            sent: (keys) => keys.forEach(done),
            setAside: (key, reason) => {
              done(key);
              log("error", "event set aside: it can never be queued", { eventId: key.eventId, reason });
            },
          },
        );
      } catch (err) {
        ok = false;
        this.failed(err);
      }
      // Each message whose events all left: off the list, or, changed again meanwhile, owed from there on.
      this.d.storage.transactionSync(() => {
        for (const p of pages) {
          if (p.left > 0) continue;
          if (this.dirty.has(p.id) || this.pinned.has(p.id))
            this.d.sql.exec("UPDATE owed_events SET from_change = ? WHERE id = ?", p.through, p.id);
          else this.d.sql.exec("DELETE FROM owed_events WHERE id = ?", p.id);
        }
      });
      if (ok) {
        this.failures = 0;
        this.retryAt = 0;
      }
      return ok;
    } finally {
      this.inFlight = new Set();
      this.dirty.clear();
    }
  }

  private failed(err: unknown): void {
    this.failures++;
    const wait = RETRY_MS[Math.min(this.failures, RETRY_MS.length) - 1]!;
    this.retryAt = now() + wait;
    this.dueAt = this.retryAt;
    log("warn", "publishing events failed; they stay owed and are tried again", {
      retryInMs: wait,
      error: errorText(err),
    });
    this.arm(wait);
  }

  /**
   * The in-memory timer for what is due on the object's clock. It fires after that much real time;
   * a clock that stands still (a test's) leaves it to the next call or the alarm.
   */
  private arm(waitMs?: number): void {
    const wait = waitMs ?? Math.max(0, (this.dueAt ?? now()) - now());
    if (wait === 0) {
      if (this.timer !== null) clearTimeout(this.timer);
      this.timer = null;
      if (this.soonQueued) return;
      this.soonQueued = true;
      // Right after the change's transaction: a microtask runs once the synchronous commit returned.
      queueMicrotask(() => {
        this.soonQueued = false;
        if (this.dueAt !== null) void this.flush();
      });
      return;
    }
    if (this.timer !== null) return;
    const armedAt = now();
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.dueAt === null) return;
      if (now() >= this.dueAt) void this.flush();
      else if (now() !== armedAt) this.arm();
    }, wait);
  }
}
