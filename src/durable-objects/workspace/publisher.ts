import type { WebhookEvent } from "../../domain/events";
import { publishEventPacks } from "../../lib/event-publisher";
import type { QueueSender } from "../../lib/queue-publisher";
import { now } from "../../lib/clock";
import { errorText, log } from "../../lib/log";

/**
 * Events wait up to this long before publishing, so that the changes of that second go out packed
 * in one queue message (billed per message): a number sending at its 2/s puts about two messages'
 * events in each pack, ten busy numbers twenty. The cost: a customer's webhook hears of a change
 * up to 1 s later, and the object's alarm is set once per second of activity.
 */
export const PUBLISH_DELAY_MS = 1_000;
/** Ids this object published lately, so that a change reported twice is announced once (per instance). */
const REMEMBERED_IDS = 50_000;
const RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000] as const;

/** A commit's place in the publisher of one instance: `awaitFlushed` resolves once its events left. */
export interface Ticket {
  instance: string;
  seq: number;
}

/** A bounded set of recent ids (insertion order: the oldest are forgotten first). */
class RecentIds {
  private readonly ids = new Set<string>();
  constructor(private readonly max: number) {}
  has(id: string): boolean {
    return this.ids.has(id);
  }
  add(id: string): void {
    this.ids.delete(id);
    this.ids.add(id);
    if (this.ids.size > this.max) this.ids.delete(this.ids.values().next().value!);
  }
}

/**
 * The customer events of one workspace object between the commit of the change they announce and
 * the queue. Nothing is written for them: an event is rebuilt from its record whenever needed
 * (message-events.ts), so what must not be lost is the fact that a change still has to be
 * announced, and that is kept by whoever made the change until its event left:
 * - the number keeps a call's answer (and hands it again) until `awaitFlushed` says its events left;
 * - the operator's webhook is answered only after its events left (the route awaits them);
 * - the object's own timed changes publish before their step moves on.
 * Changed twice, or handed twice after a crash, a change announces the same event id: customers
 * deduplicate on `webhook-id`.
 *
 * Packing: the events of the first change wait until `delayMs` later on the object's clock (the
 * clock tests and the cost bench move); every call into the object checks that time (`tick`), and
 * the object's alarm is set for it (`due`), once per pack.
 */
export class EventPublisher {
  readonly instance = crypto.randomUUID();
  private pending: WebhookEvent[] = [];
  private readonly pendingIds = new Set<string>();
  /** Ids of the flush in progress. */
  private flightIds = new Set<string>();
  private readonly published = new RecentIds(REMEMBERED_IDS);
  private firstAt: number | null = null;
  private retryAt = 0;
  private commitSeq = 0;
  private flushedSeq = 0;
  private waiters: { seq: number; resolve: (ok: boolean) => void }[] = [];
  private flushing: Promise<void> | null = null;
  private failures = 0;

  /**
   * @param delayMs how long a change waits for others on the object's clock (0: published at once)
   * @param wake arms the object's alarm for a time (it runs `runDue`)
   */
  constructor(
    private readonly queue: QueueSender,
    private readonly delayMs: number,
    private readonly wake: (at: number) => Promise<void>,
  ) {}

  /** Whether this instance already published (or is about to publish) the event. */
  known(id: string): boolean {
    return this.published.has(id) || this.pendingIds.has(id) || this.flightIds.has(id);
  }

  /** Adds the events of one commit (those not already published by this instance); returns its ticket. */
  add(events: readonly WebhookEvent[]): Ticket {
    const seq = ++this.commitSeq;
    for (const e of events) {
      if (this.known(e.id)) continue;
      this.pending.push(e);
      this.pendingIds.add(e.id);
    }
    if (this.pending.length === 0) {
      // Nothing of its own to wait for; a flush in progress may carry its events (it settles it).
      if (this.flushing === null) this.flushedSeq = seq;
    } else if (this.firstAt === null) {
      this.firstAt = now();
      if (this.delayMs === 0) void this.flush();
      else
        void this.wake(this.firstAt + this.delayMs).catch((e: unknown) =>
          log("warn", "arming the publish alarm failed", { error: errorText(e) }),
        );
    }
    return { instance: this.instance, seq };
  }

  /** When the pending events are due (the alarm's step), or null. */
  due(): number | null {
    return this.firstAt === null ? null : Math.max(this.firstAt + this.delayMs, this.retryAt);
  }

  /** Publishes what waited long enough on the object's clock (every call into the object runs this first). */
  tick(): void {
    const due = this.due();
    if (due !== null && now() >= due) void this.flush();
  }

  /**
   * Resolves true once the events of the commit left for the queue; false when the ticket is of
   * another instance (a restart lost what it held: hand the change again).
   */
  awaitFlushed(ticket: Ticket): Promise<boolean> {
    if (ticket.instance !== this.instance) return Promise.resolve(false);
    if (ticket.seq <= this.flushedSeq) return Promise.resolve(true);
    return new Promise((resolve) => this.waiters.push({ seq: ticket.seq, resolve }));
  }

  /**
   * Publishes now what is pending (a step that must not move on before its events left); throws
   * when the queue refused them (they stay pending and are tried again).
   */
  async flushNow(): Promise<void> {
    const through = this.commitSeq;
    await this.flush();
    if (this.flushedSeq < through) throw new Error("events could not be queued; they will be tried again");
  }

  /** Publishes everything pending; a failure keeps it pending (with a back-off). Never throws. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => (this.pending.length > 0 ? this.flush() : undefined));
    if (this.pending.length === 0) return Promise.resolve();
    const batch = this.pending;
    const through = this.commitSeq;
    this.pending = [];
    this.pendingIds.clear();
    this.flightIds = new Set(batch.map((e) => e.id));
    this.firstAt = null;
    this.flushing = (async () => {
      try {
        await publishEventPacks(
          this.queue,
          batch.map((event) => ({ key: event.id, event })),
          {
            sent: (ids) => {
              for (const id of ids) this.published.add(id);
            },
            setAside: (id, reason) => log("error", "event set aside: it can never be queued", { eventId: id, reason }),
          },
        );
        this.failures = 0;
        this.retryAt = 0;
        this.settle(through);
      } catch (err) {
        // Back in line, ahead of what came meanwhile; the callers still wait (or time out and hand again).
        this.failures++;
        const left = batch.filter((e) => !this.published.has(e.id));
        this.pending = [...left, ...this.pending.filter((e) => !left.some((l) => l.id === e.id))];
        for (const e of this.pending) this.pendingIds.add(e.id);
        this.firstAt ??= now();
        const wait = RETRY_MS[Math.min(this.failures, RETRY_MS.length) - 1]!;
        this.retryAt = now() + wait;
        log("warn", "publishing events failed; trying again", {
          events: left.length,
          retryInMs: wait,
          error: errorText(err),
        });
        void this.wake(this.retryAt).catch(() => undefined);
      } finally {
        this.flushing = null;
        this.flightIds = new Set();
      }
    })();
    return this.flushing;
  }

  private settle(through: number): void {
    if (through > this.flushedSeq) this.flushedSeq = through;
    // Commits after `through` whose events were all published already are done too, once nothing waits.
    if (this.pending.length === 0) this.flushedSeq = this.commitSeq;
    const done = this.waiters.filter((w) => w.seq <= this.flushedSeq);
    this.waiters = this.waiters.filter((w) => w.seq > this.flushedSeq);
    for (const w of done) w.resolve(true);
  }
}
