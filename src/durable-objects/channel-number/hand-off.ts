import { now } from "../../lib/clock";
import { errorText, log } from "../../lib/log";
import { workspaceStub } from "../stubs";
import type { StatusResult, StatusUpdate } from "../../messages/status";

const RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000, 60_000] as const;

interface Transit {
  workspaceId: string;
  update: StatusUpdate;
  /** When it may be handed again (after a failure). */
  retryAt: number;
  failures: number;
  /** Whether the workspace committed it (it then leaves this list). */
  committed: boolean;
}

/**
 * The calls' answers (and the messages the number gives up on) on their way to the workspace's
 * records. Each is handed at once and its commit awaited (the record is current when the drain
 * moves on); an answer the workspace could not take is kept and handed again. Once committed it is
 * the workspace's: the obligation to announce its events is committed with it (event-publisher.ts), so
 * nothing waits for them here. Kept in memory only: the
 * record says a call was claimed and not answered, so a restart of this object that loses an
 * answer finds the message "claimed before" and reports its outcome unknown, which the operator's
 * status report then settles; it is never called again.
 */
export class HandOff {
  private readonly transit = new Map<string, Transit>();

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

  private async send(t: Transit): Promise<StatusResult | null> {
    let results: StatusResult[];
    try {
      ({ results } = await workspaceStub(this.env, t.workspaceId).answer([t.update]));
    } catch (err) {
      this.failed(t, err);
      return null;
    }
    t.retryAt = 0;
    t.committed = true;
    // A later answer about the same message (the next attempt's) took its place: that one is kept.
    if (this.transit.get(t.update.jobId) === t) this.transit.delete(t.update.jobId);
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
