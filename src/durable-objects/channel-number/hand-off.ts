import { now } from "../../lib/clock";
import { errorText, log } from "../../lib/log";
import { workspaceStub } from "../stubs";
import type { StatusUpdate } from "../workspace/contract";

const RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000, 60_000] as const;

interface Transit {
  workspaceId: string;
  update: StatusUpdate;
  /** When it may be handed again (after a failure). */
  retryAt: number;
  failures: number;
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

  /** Hands one answer; resolves once it is committed (or kept for a retry when the workspace is unreachable). */
  async hand(workspaceId: string, update: StatusUpdate): Promise<void> {
    const t: Transit = { workspaceId, update, retryAt: 0, failures: 0 };
    this.transit.set(update.jobId, t);
    await this.send(t);
  }

  /** Hands one answer and throws if it is not committed (a retry's answer: the next claim needs it). */
  async now(workspaceId: string, update: StatusUpdate): Promise<void> {
    await workspaceStub(this.env, workspaceId).answer([update]);
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

  private async send(t: Transit): Promise<void> {
    const stub = workspaceStub(this.env, t.workspaceId);
    let ticket;
    try {
      ({ ticket } = await stub.answer([t.update]));
    } catch (err) {
      this.failed(t, err);
      return;
    }
    t.retryAt = 0;
    const confirm = stub
      .awaitFlushed(ticket)
      .then(
        (ok) => {
          if (ok) this.transit.delete(t.update.jobId);
          // The workspace restarted before its events left: the answer goes again (applied once, announced again).
          else return this.send(t);
        },
        (err: unknown) => this.failed(t, err),
      )
      .finally(() => this.confirming.delete(confirm));
    this.confirming.add(confirm);
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
