import { monthPeriod, now } from "../../lib/clock";
import { log } from "../../lib/log";
import { deriveJobId, utcDay } from "../../domain/job-id";
import { WORKSPACE_LIMIT, windowState, type WindowState } from "../../domain/rate-window";
import { withSlack, type ScheduledStep } from "../shared/scheduler";
import { channelNumberStub } from "../stubs";
import type { RateInfo, SendCommand, SendOutcome, Usage } from "./contract";
import type { WorkspaceContext } from "./context";
import { acceptedBetween, countOne } from "./daily-counts";
import { bindKey, findBoundKey, nextKeyExpiry, purgeExpiredKeys } from "./idempotency-keys";
import { insertOutbound, oldestQueuedAt, outboundTimesSince, queuedAcceptedBefore, type MessageRow } from "./messages";
import type { Keyset } from "./message-queries";

/** A message still queued after this is handed to its outbox again (idempotent on the jobId). */
export const STRANDED_AFTER_MS = 2 * 60_000;
/** Messages per `readmit` call, and calls per run: a run looks at most at 200 queued messages. */
const STRANDED_BATCH = 50;
const STRANDED_PAGES_PER_RUN = 4;

const toRateInfo = (w: WindowState, scope: RateInfo["scope"]): RateInfo => ({
  scope,
  limit: w.limit,
  remaining: w.remaining,
  resetSeconds: Math.ceil(w.resetMs / 1000),
});

/**
 * Admitting a send: idempotency keys (their table, in idempotency-keys.ts),
 * the 1200-per-minute window, the monthly quota (from the daily counts), the
 * hand-off to the number and the commit of the record. Its steps: the key
 * purge, and the safety net that hands stranded messages to their outbox again.
 */
export class Admission {
  /** Requests in progress per Idempotency-Key: a concurrent retry waits for the first. */
  private readonly inFlight = new Map<string, Promise<SendOutcome>>();
  /** Admissions that passed the checks and wait on their number: they may still be refused there. */
  private readonly pending = new Set<Promise<SendOutcome>>();
  /** Committed acceptance times of the last minute, ascending (rebuilt from the records after a restart). */
  private recent: number[];
  private month: { key: string; used: number } | null = null;
  private lastStrandedCheck = 0;
  /** Where the stranded-message check goes on (a backlog longer than one run), or null: from the oldest. */
  private strandedAfter: Keyset | null = null;

  /** `nextCountsFlush`: when the daily counts next ship (a send wakes the alarm for it). */
  constructor(
    private readonly w: WorkspaceContext,
    private readonly nextCountsFlush: () => number,
  ) {
    this.recent = outboundTimesSince(w.sql, now() - WORKSPACE_LIMIT.windowMs);
  }

  /** Admits one send: replay and conflict checks, number, quota, both limits, then record it. */
  async send(cmd: SendCommand): Promise<SendOutcome> {
    this.w.rememberWorkspace(cmd.workspaceId);
    for (;;) {
      const earlier = this.inFlight.get(cmd.idempotencyKey);
      if (earlier) {
        await earlier.catch(() => undefined);
        continue;
      }
      const bound = findBoundKey(this.w.sql, cmd.idempotencyKey, now());
      if (bound) {
        return bound.fingerprint === cmd.fingerprint
          ? { kind: "duplicate", jobId: bound.job_id }
          : { kind: "conflict", jobId: bound.job_id };
      }
      const attempt = this.admit(cmd);
      this.inFlight.set(cmd.idempotencyKey, attempt);
      try {
        return await attempt;
      } finally {
        this.inFlight.delete(cmd.idempotencyKey);
      }
    }
  }

  usage(at: number): Usage {
    const period = monthPeriod(at);
    return { period: { start: period.start, end: period.end }, messagesUsed: this.usedThisMonth(at) };
  }

  /** Capacity used right now: committed sends in the 60-second window and this month. */
  state(at: number): { windowUsed: number; monthUsed: number } {
    return { windowUsed: WORKSPACE_LIMIT.limit - this.windowAt(at).remaining, monthUsed: this.usedThisMonth(at) };
  }

  steps(): { reHandStranded: ScheduledStep; purgeKeys: ScheduledStep } {
    return {
      reHandStranded: { name: "re-hand-stranded", due: () => this.strandedDue(), run: (at) => this.reHandStranded(at) },
      purgeKeys: {
        name: "idempotency-purge",
        due: () => withSlack(nextKeyExpiry(this.w.sql)),
        run: async (at) => purgeExpiredKeys(this.w.sql, at),
      },
    };
  }

  private async admit(cmd: SendCommand): Promise<SendOutcome> {
    const config = await this.w.loadConfig(cmd.workspaceId);
    if (!config || !config.connectedNumbers.has(cmd.request.channelNumberId)) return { kind: "forbidden" };
    let at: number;
    for (;;) {
      // Only capacity actually used refuses a send; capacity held by admissions still
      // waiting on their number may be given back, so we wait for those instead.
      at = now();
      const used = this.usedThisMonth(at);
      if (used >= config.quota) return { kind: "quota_exceeded", limit: config.quota };
      const committed = this.windowAt(at);
      if (committed.remaining === 0) {
        return {
          kind: "rate_limited",
          scope: "workspace",
          retryAfterMs: committed.retryAfterMs,
          rate: toRateInfo(committed, "workspace"),
        };
      }
      if (
        this.pending.size > 0 &&
        (used + this.pending.size >= config.quota || committed.remaining <= this.pending.size)
      ) {
        await Promise.race(this.pending).catch(() => undefined);
        continue;
      }
      break;
    }
    const handOff = this.handOff(cmd, at);
    this.pending.add(handOff);
    try {
      return await handOff;
    } finally {
      this.pending.delete(handOff);
    }
  }

  private async handOff(cmd: SendCommand, at: number): Promise<SendOutcome> {
    const { sql, env } = this.w;
    const jobId = await deriveJobId(env.JOB_ID_SECRET, cmd.workspaceId, cmd.idempotencyKey, cmd.fingerprint, at);
    const number = channelNumberStub(env, cmd.request.channelNumberId);
    const admitted = await number.admit({
      jobId,
      workspaceId: cmd.workspaceId,
      channelNumberId: cmd.request.channelNumberId,
      to: cmd.request.to,
      body: cmd.request.text.body,
      acceptedAt: at,
    });
    if (!admitted.ok) {
      if (admitted.reason === "conflict") throw new Error(`jobId ${jobId} is in its outbox with another payload`);
      return {
        kind: "rate_limited",
        scope: "number",
        retryAfterMs: admitted.window.retryAfterMs,
        rate: toRateInfo(admitted.window, "number"),
      };
    }
    try {
      this.w.storage.transactionSync(() => {
        bindKey(sql, cmd.idempotencyKey, cmd.fingerprint, jobId, at);
        insertOutbound(sql, {
          id: jobId,
          channelNumberId: cmd.request.channelNumberId,
          to: cmd.request.to,
          body: cmd.request.text.body,
          at,
        });
        countOne(sql, at, cmd.request.channelNumberId, "accepted");
      });
    } catch (err) {
      // Nothing was recorded and the key stays unbound: give the number its slot back. If
      // this fails too, the entry is an orphan the number never sends (see delivery-policy.ts).
      await number
        .release(jobId)
        .catch((e: unknown) => log("warn", "releasing an uncommitted hand-off failed", { jobId, error: String(e) }));
      throw err;
    }
    this.recent = [...this.recent, at].sort((a, b) => a - b);
    this.bumpMonth(at);
    // What this send adds to timed work: a count to ship, and a message to watch for stranding.
    await this.w.wake(Math.min(at + STRANDED_AFTER_MS, this.nextCountsFlush()));
    const workspace = this.windowAt(at);
    // Report whichever limit is closer to refusing the next send.
    const rate =
      admitted.window.remaining <= workspace.remaining
        ? toRateInfo(admitted.window, "number")
        : toRateInfo(workspace, "workspace");
    return { kind: "created", jobId, rate };
  }

  /** The window of committed sends at `at`. */
  private windowAt(at: number): WindowState {
    this.recent = this.recent.filter((t) => t > at - WORKSPACE_LIMIT.windowMs);
    return windowState(WORKSPACE_LIMIT, this.recent, 0, at);
  }

  private usedThisMonth(at: number): number {
    const period = monthPeriod(at);
    if (this.month?.key !== period.key) {
      this.month = {
        key: period.key,
        used: acceptedBetween(this.w.sql, utcDay(Date.parse(period.start)), utcDay(Date.parse(period.end))),
      };
    }
    return this.month.used;
  }

  private bumpMonth(at: number): void {
    if (this.month?.key === monthPeriod(at).key) this.month.used++;
    else this.month = null;
  }

  private strandedDue(): number | null {
    // The rest of a long backlog: the next run goes on where the last one stopped.
    if (this.strandedAfter) return this.lastStrandedCheck + STRANDED_AFTER_MS / 2;
    const oldest = oldestQueuedAt(this.w.sql);
    if (oldest === null) return null;
    // A long backlog keeps old messages queued: look again at most every half period.
    return Math.max(oldest + STRANDED_AFTER_MS, this.lastStrandedCheck + STRANDED_AFTER_MS / 2);
  }

  /**
   * The safety net behind "never lost": messages recorded as queued that have
   * not started after a while are handed to their number's outbox again, in
   * one call per number and page; the number ignores the ones it has. A run
   * looks at a bounded number of them and the next run goes on after the last
   * one, so that a backlog of messages legitimately waiting never hides a
   * stranded one behind it: every queued message is looked at within
   * ceil(backlog / 200) half-periods (one minute each).
   */
  private async reHandStranded(at: number): Promise<void> {
    this.lastStrandedCheck = at;
    const workspaceId = this.w.workspaceId();
    if (!workspaceId) return;
    for (let page = 0; page < STRANDED_PAGES_PER_RUN; page++) {
      const stale = queuedAcceptedBefore(this.w.sql, at - STRANDED_AFTER_MS, STRANDED_BATCH, this.strandedAfter);
      const last = stale[stale.length - 1];
      const byNumber = new Map<string, MessageRow[]>();
      for (const row of stale)
        byNumber.set(row.channel_number_id, [...(byNumber.get(row.channel_number_id) ?? []), row]);
      for (const [numberId, rows] of byNumber) {
        await channelNumberStub(this.w.env, numberId).readmit(
          rows.map((row) => ({
            jobId: row.id,
            workspaceId,
            channelNumberId: numberId,
            to: row.recipient,
            body: row.body,
            acceptedAt: row.created_at,
          })),
        );
      }
      this.strandedAfter = stale.length === STRANDED_BATCH && last ? { createdAt: last.created_at, id: last.id } : null;
      if (!this.strandedAfter) return;
    }
  }
}
