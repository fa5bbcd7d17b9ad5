import { now } from "../../lib/clock";
import { errorText, log } from "../../lib/log";
import { workspaceStub } from "../stubs";
import type { StatusUpdate } from "../workspace/contract";

/**
 * Answers wait up to this long on the object's clock before they are handed over, so that the
 * answers of that second reach the workspace in one call, and their events the queue in one
 * message (each queue message is billed): a number calling 2/s hands about two answers at once.
 */
export const HAND_DELAY_MS = 1_000;
const RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000, 60_000] as const;

interface Held {
  workspaceId: string;
  update: StatusUpdate;
}

/**
 * The calls' final answers (sent, failed, outcome unknown) and the messages the number gives up on,
 * on their way to the workspace's records. They are held in memory only: the workspace's record
 * says a call was claimed and not answered, so a restart that loses them finds the message "claimed
 * before" and reports its outcome unknown, which the operator's status report then settles; it is
 * never called again. `answer` returns once the changes are committed and their events queued.
 */
export class HandOff {
  private held: Held[] = [];
  private firstAt: number | null = null;
  private failures = 0;
  private retryAt = 0;
  private running: Promise<void> | null = null;

  /** `delayMs`: HAND_DELAY_MS, or 0 (tests step the drain one alarm at a time and read the records after each). */
  constructor(
    private readonly env: Env,
    private readonly delayMs = HAND_DELAY_MS,
  ) {}

  get size(): number {
    return this.held.length;
  }

  hold(workspaceId: string, update: StatusUpdate): void {
    this.held.push({ workspaceId, update });
    this.firstAt ??= now();
  }

  /** Whether an answer about this message is waiting. */
  holds(jobId: string): boolean {
    return this.held.some((h) => h.update.jobId === jobId);
  }

  /** When the held answers are due, or null. */
  due(): number | null {
    return this.firstAt === null ? null : Math.max(this.firstAt + this.delayMs, this.retryAt);
  }

  /** Hands everything held (one call per workspace); on failure it stays held and backs off. Never throws. */
  flush(): Promise<void> {
    if (this.running) return this.running;
    this.running = this.handAll().finally(() => (this.running = null));
    return this.running;
  }

  /** Hands one change at once (a retry's answer: its next claim needs it committed first). Throws on failure. */
  async now(workspaceId: string, update: StatusUpdate): Promise<void> {
    await workspaceStub(this.env, workspaceId).answer([update]);
  }

  private async handAll(): Promise<void> {
    const batch = this.held;
    if (batch.length === 0) return;
    this.held = [];
    this.firstAt = null;
    const byWorkspace = Map.groupBy(batch, (h) => h.workspaceId);
    for (const [workspaceId, items] of byWorkspace) {
      try {
        await workspaceStub(this.env, workspaceId).answer(items.map((i) => i.update));
        this.failures = 0;
        this.retryAt = 0;
      } catch (err) {
        this.failures++;
        const wait = RETRY_MS[Math.min(this.failures, RETRY_MS.length) - 1]!;
        log("warn", "answers could not be handed to the workspace; held and tried again", {
          workspaceId,
          answers: items.length,
          retryInMs: wait,
          error: errorText(err),
        });
        this.held = [...items, ...this.held];
        this.firstAt ??= now();
        this.retryAt = now() + wait;
      }
    }
  }
}
