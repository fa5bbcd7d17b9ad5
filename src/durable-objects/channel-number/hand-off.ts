import { now } from "../../lib/clock";
import { errorText, log } from "../../lib/log";
import { workspaceStub } from "../stubs";
import type { StatusResult, StatusUpdate } from "../workspace/contract";

const RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000, 60_000] as const;

interface Transit {
  workspaceId: string;
  update: StatusUpdate;
  /** When it may be handed again (after a failure). */
  retryAt: number;
  failures: number;
  /** Whether the workspace committed it (what is left is to learn that its events left). */
  committed: boolean;
}

/**
 * The calls' answers (and the messages the number gives up on) on their way to the workspace's
 * records. Each is handed at once and its commit awaited (the record is current when the drain
 * moves on); then, without holding the drain, the number waits for the workspace to say that the
 * change's events left (its publisher packs a second's worth of events in one queue message), and
 * hands the answer again if the workspace lost them (it restarted). Kept in memory only: the
 * record says a call was claimed and not answered, so a restart of this object that loses an
 * answer finds the message "claimed before" and reports its outcome unknown, which the operator's
 * status report then settles; it is never called again.
 */
export class HandOff {
  private readonly transit = new Map<string, Transit>();
  private readonly confirming = new Set<Promise<void>>();

  constructor(
    private readonly env: Env,
    /** Arms the object's alarm (a hand-off that failed is tried again then). */
    private readonly wake: (at: number) => Promise<void>,
  ) {}

  get size(): number {
    return this.transit.size;
  }

  /** Whether an answer about this message is on its way. */
  holds(jobId: string): boolean {
    return this.transit.has(jobId);
  }

  /**
   * Whether an answer about this message is on its way and not committed yet: the record still says
   * its claim is unanswered, so the message is not claimed again before (a retry's answer, an
   * attempt given back: a claim now would find "claimed before" and end it as an unknown outcome).
   */
  uncommitted(jobId: string): boolean {
    const t = this.transit.get(jobId);
    return t !== undefined && !t.committed;
  }

  /**
   * Hands one answer; resolves once it is committed, with what the workspace made of it, or with
   * null when the workspace could not take it (it is kept and handed again).
   */
  async hand(workspaceId: string, update: StatusUpdate): Promise<StatusResult | null> {
    const t: Transit = { workspaceId, update, retryAt: 0, failures: 0, committed: false };
    this.transit.set(update.jobId, t);
    return this.send(t);
  }

  /** When an answer kept after a failure is due again, or null. */
  due(): number | null {
    let at: number | null = null;
    for (const t of this.transit.values()) if (t.retryAt > 0 && (at === null || t.retryAt < at)) at = t.retryAt;
    return at;
  }

  /** Hands again the answers whose retry is due. */
  async retryDue(at: number): Promise<void> {
    for (const t of [...this.transit.values()]) if (t.retryAt > 0 && t.retryAt <= at) await this.send(t);
  }

  /** Settles when every confirmation in progress has (tests and the end of a drain session need nothing more). */
  async idle(): Promise<void> {
    while (this.confirming.size > 0) await Promise.allSettled([...this.confirming]);
  }

  private async send(t: Transit): Promise<StatusResult | null> {
    const stub = workspaceStub(this.env, t.workspaceId);
    let ticket;
    let results: StatusResult[];
    try {
      ({ results, ticket } = await stub.answer([t.update]));
    } catch (err) {
      this.failed(t, err);
      return null;
    }
    t.retryAt = 0;
    t.committed = true;
    const confirm = stub
      .awaitFlushed(ticket)
      .then(
        async (ok) => {
          // A later answer about the same message (the next attempt's) took its place: that one is kept.
          if (ok) {
            if (this.transit.get(t.update.jobId) === t) this.transit.delete(t.update.jobId);
          }
          // The workspace restarted before its events left: the answer goes again (applied once, announced again).
          else await this.send(t);
        },
        (err: unknown) => this.failed(t, err),
      )
      .finally(() => this.confirming.delete(confirm));
    this.confirming.add(confirm);
    return results[0] ?? null;
  }

  private failed(t: Transit, err: unknown): void {
    t.failures++;
    const wait = RETRY_MS[Math.min(t.failures, RETRY_MS.length) - 1]!;
    t.retryAt = now() + wait;
    log("warn", "an answer could not be handed to the workspace; kept and tried again", {
      jobId: t.update.jobId,
      retryInMs: wait,
      error: errorText(err),
    });
    void this.wake(t.retryAt).catch(() => undefined);
  }
}
