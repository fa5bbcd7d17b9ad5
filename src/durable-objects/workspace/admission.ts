import { monthPeriod, now } from "../../lib/clock";
import { log } from "../../lib/log";
import { nextJobId, utcDay } from "../../lib/job-id";
import { recipientOf } from "../../messages/recipient";
import { NUMBER_LIMIT, WORKSPACE_LIMIT, windowState, type WindowState } from "../../domain/rate-window";
import { channelNumberStub } from "../stubs";
import type { Usage } from "./contract";
import type { RateInfo, SendCommand, SendOutcome } from "../../messages/send";
import type { WorkspaceContext } from "./context";
import type { DailyCounts } from "./counts";
import { findKey, insertOutbound, outboundTimesSince } from "./records";
import { findMovedKey } from "./moved-keys";
import type { Tiers } from "./tiers";

/** How long an Idempotency-Key stays bound to its first send (documented: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

const toRateInfo = (w: WindowState, scope: RateInfo["scope"]): RateInfo => ({
  scope,
  limit: w.limit,
  remaining: w.remaining,
  resetSeconds: Math.ceil(w.resetMs / 1000),
});

/**
 * Admitting a send: its Idempotency-Key (a column of the record, unique per day table: today's and
 * yesterday's tables hold every key of the last 24 hours), the 1200-per-minute window, the monthly
 * quota (the month's accepted counts), the hand-off to the number (its 2-per-second window) and
 * the commit of the record, in one insert.
 */
export class Admission {
  /** Requests in progress per Idempotency-Key: a concurrent retry waits for the first. */
  private readonly inFlight = new Map<string, Promise<SendOutcome>>();
  /** Admissions that passed the checks and wait on their number: they may still be refused there. */
  private readonly pending = new Set<Promise<SendOutcome>>();
  /** jobIds handed to their number and not yet committed here: a claim for one waits (status.ts). */
  private readonly handing = new Set<string>();
  /** Committed acceptances of the last minute, ascending, with their numbers (rebuilt from the records after a restart). */
  private recent: { at: number; channelNumberId: string }[];
  private month: { key: string; used: number } | null = null;
  /** The last jobId made here: the next one of the same millisecond sorts after it (acceptance order). */
  private lastJobId: string | null = null;
  /** This instance, for the numbers' windows: what an earlier instance handed and never committed is not counted there. */
  private readonly instance = crypto.randomUUID();

  constructor(
    private readonly w: WorkspaceContext,
    private readonly tiers: Tiers,
    private readonly counts: DailyCounts,
  ) {
    const at = now();
    const since = at - WORKSPACE_LIMIT.windowMs;
    this.recent = outboundTimesSince(tiers.tables, w.sql, since, at);
  }

  /** Whether this send's hand-off is done and its commit still to come. */
  isHanding(jobId: string): boolean {
    return this.handing.has(jobId);
  }

  /** Admits one send: replay and conflict checks, number, quota, both limits, then record it. */
  async send(cmd: SendCommand): Promise<SendOutcome> {
    for (;;) {
      const earlier = this.inFlight.get(cmd.idempotencyKey);
      if (earlier) {
        await earlier.catch(() => undefined);
        continue;
      }
      const bound = this.boundKey(cmd.idempotencyKey, now());
      if (bound)
        return bound.fingerprint === cmd.fingerprint
          ? { kind: "duplicate", jobId: bound.jobId }
          : { kind: "conflict", jobId: bound.jobId };
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

  /** The live binding of a key: a record of the last 24 hours (here, or its key kept when it moved early). */
  private boundKey(key: string, at: number): { jobId: string; fingerprint: string } | undefined {
    const since = at - IDEMPOTENCY_TTL_MS;
    const found = findKey(this.tiers.tables, this.w.sql, key, since, at) ?? findMovedKey(this.w.sql, key, since);
    return found ? { jobId: found.id, fingerprint: found.fingerprint } : undefined;
  }

  private async admit(cmd: SendCommand): Promise<SendOutcome> {
    const config = await this.w.loadConfig(cmd.workspaceId);
    if (!config || !config.connectedNumbers.has(cmd.request.channelNumberId)) return { kind: "forbidden" };
    // Refused by the route (a template send that does not fit the template): after the replay check, before any capacity is used.
    if ("refused" in cmd.content) return { kind: "refused", ...cmd.content.refused };
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
    const { content } = cmd;
    if ("refused" in content) throw new Error("a refused send is never handed off");
    const { sql, env } = this.w;
    const jobId = (this.lastJobId = nextJobId(at, this.lastJobId));
    const numberId = cmd.request.channelNumberId;
    const number = channelNumberStub(env, numberId);
    this.handing.add(jobId);
    try {
      const admitted = await number.admit({
        jobId,
        workspaceId: cmd.workspaceId,
        channelNumberId: numberId,
        to: recipientOf(cmd.request),
        acceptedAt: at,
        // The number keeps its window in memory: after a restart it starts from these.
        recent: this.recent
          .filter((r) => r.channelNumberId === numberId && r.at > at - NUMBER_LIMIT.windowMs)
          .map((r) => r.at),
        instance: this.instance,
      });
      if (!admitted.ok) {
        return {
          kind: "rate_limited",
          scope: "number",
          retryAfterMs: admitted.window.retryAfterMs,
          rate: toRateInfo(admitted.window, "number"),
        };
      }
      try {
        this.w.storage.transactionSync(() => {
          insertOutbound(this.tiers.tables, sql, {
            id: jobId,
            channelNumberId: numberId,
            to: recipientOf(cmd.request),
            type: content.type,
            body: content.body,
            content: content.content,
            details: content.details,
            idemKey: cmd.idempotencyKey,
            fingerprint: cmd.fingerprint,
            at,
          });
          this.counts.note(jobId, numberId, { accepted: 1 });
        });
      } catch (err) {
        this.tiers.tables.resync();
        // Nothing was recorded and the key stays unbound: the number's entry finds no record when
        // it asks, and drops it unsent (its claim answers `never` once this hand-off is over).
        await number
          .release(jobId)
          .catch((e: unknown) => log("warn", "releasing an uncommitted hand-off failed", { jobId, error: String(e) }));
        throw err;
      }
      this.recent = [...this.recent, { at, channelNumberId: numberId }].sort((a, b) => a.at - b.at);
      this.bumpMonth(at);
      // The changed count ships to D1 within a minute: the alarm is armed for it (once; a later send finds it armed).
      await this.w.wake(this.counts.nextFlush());
      const workspace = this.windowAt(at);
      // Report whichever limit is closer to refusing the next send.
      const rate =
        admitted.window.remaining <= workspace.remaining
          ? toRateInfo(admitted.window, "number")
          : toRateInfo(workspace, "workspace");
      return { kind: "created", jobId, rate };
    } finally {
      this.handing.delete(jobId);
    }
  }

  /** The window of committed sends at `at`. */
  private windowAt(at: number): WindowState {
    this.recent = this.recent.filter((r) => r.at > at - WORKSPACE_LIMIT.windowMs);
    return windowState(
      WORKSPACE_LIMIT,
      this.recent.map((r) => r.at),
      0,
      at,
    );
  }

  private usedThisMonth(at: number): number {
    const period = monthPeriod(at);
    if (this.month?.key !== period.key) {
      this.month = {
        key: period.key,
        used: this.counts.acceptedBetween(utcDay(Date.parse(period.start)), utcDay(Date.parse(period.end))),
      };
    }
    return this.month.used;
  }

  private bumpMonth(at: number): void {
    if (this.month?.key === monthPeriod(at).key) this.month.used++;
    else this.month = null;
  }
}
