import { DurableObject } from "cloudflare:workers";
import { config } from "../../config";
import { now } from "../../lib/clock";
import { log } from "../../lib/log";
import { NUMBER_LIMIT, windowState, type WindowState } from "../../domain/rate-window";
import { OWN_ERRORS, permanentError } from "../../upstream/error-codes";
import { Scheduler, withSlack } from "../shared/scheduler";
import { getMeta, setMeta } from "../shared/meta";
import { ensureSchema } from "../shared/schema-version";
import { CHANNEL_NUMBER_SCHEMA } from "./schema";
import type { StatusUpdate } from "../workspace/contract";
import type { AdmitCommand, AdmitResult, ContactWindow, OperatorStatus, OutboxEntry } from "./contract";
import { HELD_BOUND_MS, KEEP_FINISHED_MS, ORPHAN_GRACE_MS, UNKNOWN_OUTCOME_WINDOW_MS } from "./delivery-policy";
import { contactWindow, nextContactExpiry, noteInbound, purgeSilentContacts } from "./contacts";
import { Drain, readPace, writePace } from "./drain";
import { drainLegacyEvents, hasLegacyEvents } from "./legacy-events";
import { NumberHold, type PauseState } from "./number-hold";
import { loadNumber, type CachedNumber } from "./number-cache";
import {
  acceptedSince,
  deleteUnclaimed,
  findByJobId,
  findBySeq,
  finishedFrom,
  unknownFrom,
  insertEntry,
  listEntries,
  oldestFinishedAt,
  oldestOrphanAcceptedAt,
  oldestQueuedEntryAt,
  oldestUnknownSince,
  orphansAcceptedBefore,
  promoteHead,
  purgeFinished,
  queuedEntriesAcceptedBy,
  samePayload,
  transition,
  unknownSince,
  type OutboxRow,
} from "./outbox";
import { nextReportDue, takeDueReports } from "./sandbox-reports";
import { SWEEP_EVERY_MS, hasPairs, sweepIdlePairs } from "./pair-pace";
import { StatusRelay, deliverOwed, hasOwed, owe } from "./status-relay";
import type { NumberSendingState } from "../../domain/channel-number-view";

const EXPIRY_BATCH = 100;
const PURGE_BATCH = 500;

/**
 * One per channel number: its 2-per-second acceptance window and its outbox,
 * drained per conversation at the number's pace. See drain.ts for how a call is
 * made exactly once and outbox.ts for the order it keeps.
 */
export class ChannelNumberDurableObject extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private number: CachedNumber | null = null;
  private readonly hold: NumberHold;
  private readonly drain: Drain;
  private readonly scheduler: Scheduler;
  private readonly statusRelay: StatusRelay;
  /** Acceptance times of the last second (the window), rebuilt from the outbox after a restart. */
  private admitted: number[];
  private relay: Promise<void> | null = null;
  /** Where the pair-pace sweep goes on (in memory: a restart starts it over), and when it runs next. */
  private pairSweep = "";
  private pairSweepAt = now() + SWEEP_EVERY_MS;
  private relayAgain = false;
  /** The number this object is (its `meta` row): written once, not on every admission (each write is a billed row). */
  private name: string | null;
  /** UNKNOWN_OUTCOME_WINDOW_MS shortens the operator's 7-day window for local soak runs; production uses the default. */
  private readonly unknownWindowMs: number;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.unknownWindowMs = config(env).unknownOutcomeWindowMs ?? UNKNOWN_OUTCOME_WINDOW_MS;
    // Before anything reads a table: the constructor runs inside the object's input gate.
    ensureSchema(ctx.storage, CHANNEL_NUMBER_SCHEMA);
    this.name = getMeta(this.sql, "channel_number_id") ?? null;
    // An entry still `sending` belongs to a call a crash or restart cut short: it may
    // have reached the operator, so it is never sent again.
    const t = now();
    this.statusRelay = new StatusRelay(
      env,
      ctx.storage,
      () => void this.scheduler.wake(now() + 1_000).catch(() => undefined),
    );
    // Changes written since the checkpoint may not have reached the workspace (a crash between a
    // commit and its hand-off): the status-relay step hands them again. A first start (or one after
    // the release that relayed every change through a row) has nothing to recover before now.
    const pace = readPace(this.sql);
    if (pace.relayAfter === null) writePace(this.sql, pace.calls, t, pace.sending);
    const relayAfter = pace.relayAfter ?? t;
    // The entries in flight are listed in the pace's row (a few keys; an earlier release's through its index).
    for (const seq of new Set(pace.sending)) {
      const row = findBySeq(this.sql, seq);
      // Their `unknown` change is handed by the recovery (unknown_since = now, after the checkpoint).
      if (row && transition(this.sql, row, ["sending"], "unknown", t, { unknown_since: t }))
        promoteHead(this.sql, row.recipient);
    }
    // Recovery only when the outbox holds a change from the checkpoint on (one index row read each way).
    if (finishedFrom(this.sql, relayAfter, -1, 1).length > 0 || unknownFrom(this.sql, relayAfter, -1, 1).length > 0)
      this.statusRelay.startRecovery(relayAfter);
    this.admitted = acceptedSince(this.sql, t - NUMBER_LIMIT.windowMs);
    this.hold = new NumberHold(this.sql);
    this.drain = new Drain({
      ctx,
      env,
      sql: this.sql,
      hold: this.hold,
      number: async () => (this.number = await loadNumber(env.DB, this.channelNumberId(), this.number)).row,
      relay: this.statusRelay,
      sessionMs: config(env).drainSessionMs,
    });
    this.scheduler = new Scheduler(ctx.storage, [
      // First after a restart: changes written since the checkpoint are handed again (the
      // checkpoint then moves past them, one row), before new changes are made.
      {
        name: "relay-recovery",
        due: (at) => (this.statusRelay.recovering ? at : null),
        run: async () => {
          if (await this.statusRelay.recover(this.sql)) this.drain.notePace(now());
        },
      },
      // Before the drain: a message past its bound fails instead of being called (a paused number's probe included).
      {
        name: "held-bound",
        due: () => plus(oldestQueuedEntryAt(this.sql), HELD_BOUND_MS),
        run: (at) => this.expireHeld(at),
      },
      { name: "drain", due: (at) => this.drain.due(at), run: () => this.drain.run() },
      {
        name: "status-relay",
        due: (at) => (hasOwed(this.sql) ? at : null),
        run: (at) => deliverOwed(env, this.sql, at),
      },
      { name: "sandbox-reports", due: () => nextReportDue(this.sql), run: (at) => this.applyOperatorStatuses([], at) },
      {
        name: "unknown-outcomes",
        due: () => plus(oldestUnknownSince(this.sql), this.unknownWindowMs),
        run: (at) => this.expireUnknown(at),
      },
      {
        name: "orphans",
        due: () => plus(oldestOrphanAcceptedAt(this.sql), ORPHAN_GRACE_MS),
        run: (at) => this.dropOrphans(at),
      },
      {
        name: "purge",
        // Idle pair-rate buckets are swept hourly while there are any (a few bytes each: no hurry).
        due: () =>
          withSlack(
            earliest(
              plus(oldestFinishedAt(this.sql), KEEP_FINISHED_MS),
              nextContactExpiry(this.sql),
              hasPairs(this.sql) ? this.pairSweepAt : null,
            ),
          ),
        run: (at) => this.purge(at),
      },
      {
        name: "legacy-events",
        due: (at) => (hasLegacyEvents(this.sql) ? at : null),
        run: () => drainLegacyEvents(this.sql, env.WEBHOOK_QUEUE),
      },
    ]);
    ctx.blockConcurrencyWhile(async () => {
      await this.scheduler.ensureArmed();
      // An alarm set for later (a purge days away) must not hold back the changes a crash left unhanded.
      if (this.statusRelay.recovering) await this.scheduler.wake(now());
    });
  }

  async admit(cmd: AdmitCommand): Promise<AdmitResult> {
    const at = now();
    const existing = findByJobId(this.sql, cmd.jobId);
    if (existing) {
      if (!samePayload(existing, cmd)) return { ok: false, reason: "conflict" };
      // A retried hand-off of the very same send brings an entry set aside after a failed commit back into line.
      this.revive(existing, cmd.acceptedAt, at);
      await this.scheduler.wake(at);
      return { ok: true, window: this.window(cmd.acceptedAt) };
    }
    // The window is kept in acceptance times, the workspace's clock (the outbox rebuilds it from
    // them after a restart): the hand-off can reach this object well after the acceptance.
    const before = this.window(cmd.acceptedAt);
    if (before.remaining === 0) return { ok: false, reason: "rate_limited", window: before };
    this.ctx.storage.transactionSync(() => {
      this.writeName(cmd.channelNumberId);
      insertEntry(this.sql, cmd, at);
    });
    this.name = cmd.channelNumberId;
    this.admitted.push(cmd.acceptedAt);
    await this.scheduler.wake(Math.max(at, this.drain.due(at) ?? at));
    return { ok: true, window: this.window(cmd.acceptedAt) };
  }

  /**
   * The workspace could not commit a send it handed off: forget its entry (and
   * the window slot it held) unless it is already being called.
   */
  async release(jobId: string): Promise<void> {
    const row = findByJobId(this.sql, jobId);
    if (!row || row.state !== "queued") return;
    const removed = deleteUnclaimed(this.sql, jobId);
    if (!removed) return;
    promoteHead(this.sql, removed.recipient);
    const i = this.admitted.indexOf(removed.accepted_at);
    if (i >= 0) this.admitted.splice(i, 1);
  }

  /** Entries of messages the workspace recorded as queued long ago: make sure each is in the outbox (no window slot: they were accepted already). */
  async readmit(cmds: AdmitCommand[]): Promise<void> {
    const at = now();
    this.ctx.storage.transactionSync(() => {
      for (const cmd of cmds) {
        const existing = findByJobId(this.sql, cmd.jobId);
        if (existing) this.revive(existing, cmd.acceptedAt, at);
        else insertEntry(this.sql, cmd, at);
      }
    });
    await this.scheduler.wake(at);
  }

  /**
   * The operator's status reports (its webhooks, or the sandbox's simulation).
   * They settle what a lost answer left unknown and stop pending retries; they
   * never cause a call. Duplicates and reports that arrive out of order change nothing.
   */
  async applyOperatorStatuses(statuses: OperatorStatus[], at: number = now()): Promise<void> {
    const handed = this.ctx.storage.transactionSync(() => {
      // Simulated reports leave their table in this transaction: their changes are owed in it too.
      for (const s of takeDueReports(this.sql, at)) {
        const change = this.applyOperatorStatus(s);
        if (change) owe(this.sql, change.workspaceId, change.update);
      }
      return statuses.map((s) => this.applyOperatorStatus(s));
    });
    // The operator's own reports are handed to the workspace directly: a crash before this leaves
    // the caller's request failed, and the webhook route (or its queue) applies the report again.
    for (const change of handed) if (change) this.statusRelay.hand(change.workspaceId, change.update, change.at);
    await this.statusRelay.idle();
    if (hasOwed(this.sql)) await this.flushRelay();
    await this.scheduler.wake(now());
  }

  private applyOperatorStatus(s: OperatorStatus): { workspaceId: string; update: StatusUpdate; at: number } | null {
    // Routed by our jobId (biz_opaque_callback_data, on every call we ever made): no index by the operator's id.
    const row = s.jobId ? findByJobId(this.sql, s.jobId) : undefined;
    if (!row) {
      log("info", "operator status for a message this number does not know", {
        upstreamMessageId: s.upstreamMessageId,
      });
      return null;
    }
    const t = now();
    const update: StatusUpdate = { jobId: row.job_id, at: s.at, upstreamMessageId: s.upstreamMessageId };
    if (s.status === "sent") update.status = "sent";
    if (s.status === "delivered") update.deliveredAt = s.at;
    if (s.status === "read") update.readAt = s.at;
    if (s.status === "failed") {
      update.status = "failed";
      update.error = permanentError(s.errorCode, s.errorMessage ?? undefined, s.errorDetails ?? undefined);
    }
    // Only an entry that was called can have reached the operator.
    const called = row.attempts > 0 ? (["queued", "sending", "unknown"] as const) : (["sending", "unknown"] as const);
    const target = s.status === "failed" ? "failed" : "sent";
    const from = target === "failed" ? ([...called, "sent"] as const) : called;
    const fields = {
      upstream_message_id: s.upstreamMessageId,
      ...(update.error ? { error: JSON.stringify(update.error) } : {}),
    };
    if (transition(this.sql, row.seq, from, target, t, fields)) {
      promoteHead(this.sql, row.recipient);
      if (row.state === "unknown")
        log("info", "operator status settled an unknown outcome", { jobId: row.job_id, status: s.status });
    }
    return { workspaceId: row.workspace_id, update, at: t };
  }

  /** A user wrote to this number: their customer-service window opens (the message itself is recorded by the workspace). */
  async noteInbound(channelNumberId: string, contacts: { from: string; at: number }[]): Promise<void> {
    this.ctx.storage.transactionSync(() => {
      this.writeName(channelNumberId);
      for (const c of contacts) noteInbound(this.sql, c.from, c.at);
    });
    this.name = channelNumberId;
    await this.scheduler.wake(nextContactExpiry(this.sql) ?? now());
  }

  async contactWindow(phone: string): Promise<ContactWindow> {
    return contactWindow(this.sql, phone, now());
  }

  async sendingState(): Promise<NumberSendingState> {
    const p: PauseState | null = this.hold.pauseState();
    return {
      paused: p
        ? {
            code: p.error.code,
            message: p.error.message,
            upstreamCode: p.error.upstreamCode,
            since: new Date(p.since).toISOString(),
            nextAttemptAt: new Date(p.nextProbeAt).toISOString(),
          }
        : null,
    };
  }

  /** Forget the cached number row (a disconnect, or reconnected credentials: a paused number tries again at once). */
  async invalidateNumber(): Promise<void> {
    this.number = null;
    this.hold.resume();
    await this.scheduler.wake(now());
  }

  /** The outbox in acceptance order with each entry's state (operator view and tests). */
  async outbox(): Promise<OutboxEntry[]> {
    return listEntries(this.sql);
  }

  async outboxJobIds(): Promise<string[]> {
    return listEntries(this.sql).map((e) => e.jobId);
  }

  /** Start times of the latest upstream calls (operator view and tests). */
  async recentCalls(): Promise<number[]> {
    return this.drain.recentCalls();
  }

  override async alarm(): Promise<void> {
    await this.scheduler.runDue();
  }

  /** The window at acceptance time `acceptedAt` (the workspace's clock, like every time in `admitted`). */
  private window(acceptedAt: number): WindowState {
    this.admitted = this.admitted.filter((t) => t > acceptedAt - NUMBER_LIMIT.windowMs).sort((a, b) => a - b);
    return windowState(NUMBER_LIMIT, this.admitted, 0, acceptedAt);
  }

  /**
   * Brings a set-aside entry back into line. Its acceptance time becomes that of the hand-off that
   * revives it, so that it gets a fresh grace: the retry's record is committed just after this
   * call, and a claim in between must not find it "unconfirmed for 5 s" and drop it at once.
   */
  private revive(row: OutboxRow, acceptedAt: number, at: number): void {
    if (row.state !== "orphan" && row.state !== "dropped") return;
    this.ctx.storage.transactionSync(() => {
      transition(this.sql, row.seq, ["orphan", "dropped"], "queued", at, {
        next_attempt_at: at,
        accepted_at: Math.max(row.accepted_at, acceptedAt),
      });
      promoteHead(this.sql, row.recipient);
    });
  }

  /** Hands owed changes to the workspaces; concurrent callers share one run. Never throws. */
  private flushRelay(): Promise<void> {
    if (this.relay) {
      this.relayAgain = true;
      return this.relay;
    }
    this.relay = (async () => {
      do {
        this.relayAgain = false;
        try {
          await deliverOwed(this.env, this.sql, now());
        } catch (err) {
          log("warn", "status relay failed; the alarm retries it", { error: String(err) });
          await this.scheduler.wake(now() + 1_000);
          return;
        }
      } while (this.relayAgain);
    })().finally(() => {
      this.relay = null;
    });
    return this.relay;
  }

  private async expireUnknown(at: number): Promise<void> {
    const rows = unknownSince(this.sql, at - this.unknownWindowMs, EXPIRY_BATCH);
    for (const row of rows) {
      this.drain.finish(row, "failed", { error: OWN_ERRORS.outcomeUnknown() });
    }
    if (rows.length > 0) await this.afterBatch();
  }

  /**
   * Messages that could not leave within HELD_BOUND_MS of their acceptance fail with `held_too_long`,
   * through the status relay like any other failure (the workspace records it and its event). An
   * entry the drain is claiming right now is still `queued`: failing it here makes the drain's
   * compare-and-set refuse the call.
   */
  private async expireHeld(at: number): Promise<void> {
    const rows = queuedEntriesAcceptedBy(this.sql, at - HELD_BOUND_MS, EXPIRY_BATCH);
    for (const row of rows) {
      log("warn", "message held past its bound; failed, not sent", { jobId: row.job_id, acceptedAt: row.accepted_at });
      this.drain.finish(row, "failed", { error: OWN_ERRORS.heldTooLong() });
    }
    if (rows.length > 0) await this.afterBatch();
  }

  /** After a batch of expiries: their changes handed, the checkpoint moves past them (one row per batch). */
  private async afterBatch(): Promise<void> {
    await this.statusRelay.idle();
    this.drain.notePace(now());
  }

  private async dropOrphans(at: number): Promise<void> {
    // Due at exactly `oldest + grace`: the filter includes that instant, so the run that is due drops it.
    for (const row of orphansAcceptedBefore(this.sql, at - ORPHAN_GRACE_MS, EXPIRY_BATCH)) {
      if (transition(this.sql, row.seq, ["orphan"], "dropped", at))
        log("warn", "orphan outbox entry dropped unsent: its workspace never recorded it", { jobId: row.job_id });
    }
  }

  private async purge(at: number): Promise<void> {
    purgeFinished(this.sql, at - KEEP_FINISHED_MS, PURGE_BATCH);
    purgeSilentContacts(this.sql, at);
    this.pairSweep = sweepIdlePairs(this.sql, at, this.pairSweep);
    this.pairSweepAt = at + SWEEP_EVERY_MS;
  }

  /** Inside the caller's transaction; the caller remembers the name once it committed. */
  private writeName(channelNumberId: string): void {
    if (this.name !== channelNumberId) setMeta(this.sql, "channel_number_id", channelNumberId);
  }

  private channelNumberId(): string {
    if (!this.name) throw new Error("number object used before its first admit");
    return this.name;
  }
}

const plus = (t: number | null, ms: number): number | null => (t === null ? null : t + ms);
const earliest = (...times: (number | null)[]): number | null => {
  const known = times.filter((t): t is number => t !== null);
  return known.length === 0 ? null : Math.min(...known);
};
