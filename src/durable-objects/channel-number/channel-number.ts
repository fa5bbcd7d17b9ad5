import { restartObject } from "../shared/dev-restart";
import { refusesToken } from "../../domain/number-binding";
import { tokenRefused } from "../../db/channel-numbers";
import { DurableObject } from "cloudflare:workers";
import { config } from "../../config";
import { now } from "../../lib/clock";
import { log } from "../../lib/log";
import { NUMBER_LIMIT, windowState, type WindowState } from "../../domain/rate-window";
import { OWN_ERRORS } from "../../operator/error-codes";
import { operatorStatusUpdate } from "../../operator/status-report";
import { Scheduler, withSlack } from "../shared/scheduler";
import { workspaceStub } from "../stubs";
import type { AdmitCommand, AdmitResult, ContactWindow, ReadMarkOutcome } from "./contract";
import type { ReadMark } from "../../operator/adapter";
import { adapterFor } from "../../operator/adapter-for";
import type { IdentityMove, InboundContact } from "../../messages/inbound";
import { HELD_BOUND_MS } from "./delivery-policy";
import {
  contactWindow,
  nextContactExpiry,
  noteInbound,
  noteMove,
  noteUserId,
  purgeSilentContacts,
  recipientsKnownAs,
} from "./contact-windows";
import { Drain } from "./drain";
import { HandOff } from "./hand-off";
import { NumberHold, type PauseState } from "./number-hold";
import { loadNumber, type CachedNumber } from "./number-cache";
import { NumberStorage } from "./number-storage";
import { PairPace } from "./pair-pace";
import { dueReports, forgetReports, nextReportDue } from "./sandbox-reports";
import { WorkQueue, type Entry } from "./work-queue";
import type { NumberSendingState } from "../../domain/channel-number-view";
import type { StatusUpdate, NormalizedError } from "../../messages/status";

const EXPIRY_BATCH = 100;
/**
 * The alarm a send arms (when none is) while its drain runs in memory: the durable sign that the
 * number has work (a restarted instance rebuilds its queue when it fires) and the lease its calls
 * need (`Drain.startFull`). One alarm per this much activity instead of one per message.
 */
export const WORK_BACKSTOP_MS = 10_000;
/** Work list entries read per call when the queue is rebuilt from the workspace's records. */
const RELOAD_PAGE = 500;

/**
 * One per channel number: its 2-per-second acceptance window and its queue, drained per
 * conversation at the number's pace (drain.ts). It keeps no row per message: the queue is a view
 * of its workspace's records (their work list), filled by `admit` and rebuilt from the records
 * after a restart; a call is made only on the workspace's grant (its claim), and its answer goes
 * back to the record. What it keeps in storage, created when first needed: a pause or a throttle,
 * the contacts of its inbound messages, the sandbox's scheduled reports.
 */
export class ChannelNumberDurableObject extends DurableObject<Env> {
  protected readonly storage: NumberStorage;
  private number: CachedNumber | null = null;
  protected readonly hold: NumberHold;
  protected readonly queue = new WorkQueue();
  protected readonly pair = new PairPace();
  protected readonly handOff: HandOff;
  protected readonly drain: Drain;
  private readonly scheduler: Scheduler;
  /**
   * Acceptances of the last second (the window), on the workspace's clock, with the workspace
   * instance that handed each: the window is the workspace's committed acceptances plus what its
   * live instance handed and has not committed yet, never a hand-off that died uncommitted.
   */
  private admitted: { at: number; jobId: string; instance: string | undefined }[] = [];
  /** Whether the queue was rebuilt from the workspace since this instance started. */
  private loaded: Promise<void> | null = null;
  private loadedOnce = false;
  /**
   * Whether the alarm ran in this instance. A number that only sends keeps no table, so its storage
   * cannot say that its queue had work when the instance went away; the alarm it left armed does
   * (the queue arms it whenever it holds an entry, and the runtime runs again an alarm whose run
   * was cut short).
   */
  private alarmRan = false;
  /** Whether a send was admitted in this instance (it then did not start for an alarm). */
  private admittedHere = false;
  private readonly startedAt = now();
  /** Whether admit starts the drain in memory (a session may pace calls), the alarm arming only the waits. */
  private readonly drainsInMemory: boolean;
  /** Read marks under way, by the operator's message id: marks of one message at the same time make one call. */
  private readonly marking = new Map<string, Promise<ReadMarkOutcome>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const cfg = config(env);
    this.drainsInMemory = cfg.drainSessionMs > 0;
    // Before anything reads a table: the constructor runs inside the object's input gate.
    this.storage = new NumberStorage(ctx.storage);
    this.hold = new NumberHold(this.storage);
    this.handOff = new HandOff(env, (at) => this.scheduler.wake(at));
    this.drain = new Drain({
      env,
      storage: this.storage,
      queue: this.queue,
      hold: this.hold,
      pair: this.pair,
      handOff: this.handOff,
      number: async () => (this.number = await loadNumber(env.DB, this.numberId(), this.number)).row,
      windowOpen: (to) => contactWindow(this.storage, to, now()).windowOpen,
      sessionMs: cfg.drainSessionMs,
      wake: (at) => this.scheduler.wake(at),
    });
    this.scheduler = new Scheduler(ctx.storage, [
      // After a restart the queue is rebuilt from the workspace's records (its work list): at the
      // first alarm (a number without tables has no other sign of work left), or at start-up when
      // the object keeps tables.
      {
        name: "reload",
        due: (at) => (this.loadedOnce || !(this.storage.exists || this.alarmRan) ? null : at),
        run: () => this.ensureLoaded(),
      },
      // Before the drain: a message past its bound fails instead of being called (a paused number's probe included).
      // Neither runs on a queue not rebuilt yet: an older message only the records know of would be
      // overtaken by a newer one of its conversation, or given up on without its record's claim state.
      {
        name: "held-bound",
        due: () => (this.loadedOnce ? plus(this.queue.oldestQueuedAt(), HELD_BOUND_MS) : null),
        run: (at) => this.expireHeld(at),
      },
      {
        name: "drain",
        due: (at) => (this.loadedOnce ? this.drain.due(at) : null),
        run: () => this.drain.run(),
      },
      // Answers the workspace could not take (unreachable): handed again, with a back-off.
      { name: "hand-off", due: () => this.handOff.due(), run: (at) => this.handOff.retryDue(at) },
      { name: "sandbox-reports", due: () => nextReportDue(this.storage), run: (at) => this.applySandboxReports(at) },
      {
        name: "purge",
        due: () => withSlack(nextContactExpiry(this.storage)),
        run: async (at) => purgeSilentContacts(this.storage, at),
      },
      // The pace's lease: the alarm stays armed while a claim or call is under way or a call is less
      // than a window old, so that an instance started meanwhile finds it and counts that call
      // (Drain.startFull). Only an alarm run clears the alarm, and it runs this step's check first.
      // Never due itself; armed a backstop ahead: steady sending re-arms it once per WORK_BACKSTOP_MS.
      {
        name: "pace-lease",
        due: () => null,
        latest: (at) => (this.drain.leaseHeld(at) ? at + WORK_BACKSTOP_MS : null),
        run: async () => undefined,
      },
    ]);
    ctx.blockConcurrencyWhile(async () => {
      // An alarm armed within a backstop from now: an earlier instance may have called within the
      // last window (while one did, the alarm was never armed further ahead than that). A later one
      // (a contact's expiry, a long hold) says no call is that recent: a quiet number wakes without delay.
      const armed = await ctx.storage.getAlarm();
      if (armed !== null && armed <= this.startedAt + WORK_BACKSTOP_MS) this.drain.startFull(this.startedAt);
      await this.scheduler.ensureArmed();
    });
  }

  /** Local soak runs only: the object ends itself (shared/dev-restart.ts); refused unless DEV_OBJECT_RESTARTS is "true". */
  async restartForSoak(): Promise<void> {
    restartObject(this.ctx, this.env);
  }

  /**
   * A send accepted by the workspace: its slot in the number's 2-in-1-second window (in acceptance
   * times, the workspace's clock), then its place in the queue. Nothing is written: the workspace
   * commits the record right after, and the queue is rebuilt from the records after a restart.
   */
  async admit(cmd: AdmitCommand): Promise<AdmitResult> {
    // Reconciled with the workspace: what another (earlier) instance of it handed counts only as far
    // as it was committed; the workspace's committed acceptances (a restarted number starts from
    // them) are merged as a multiset: two sends accepted in the same millisecond are two slots.
    const recent = cmd.recent ?? [];
    // (A command that names no instance reconciles nothing.)
    const live = cmd.instance === undefined ? this.admitted : this.admitted.filter((a) => a.instance === cmd.instance);
    for (const t of recent)
      if (live.filter((a) => a.at === t).length < recent.filter((r) => r === t).length)
        live.push({ at: t, jobId: "", instance: cmd.instance });
    this.admitted = live;
    const before = this.window(cmd.acceptedAt);
    if (before.remaining === 0) return { ok: false, reason: "rate_limited", window: before };
    this.admitted.push({ at: cmd.acceptedAt, jobId: cmd.jobId, instance: cmd.instance });
    this.queue.add({
      jobId: cmd.jobId,
      workspaceId: cmd.workspaceId,
      recipient: cmd.to,
      acceptedAt: cmd.acceptedAt,
      attempts: 0,
      nextAttemptAt: cmd.acceptedAt,
      state: "queued",
    });
    this.admittedHere = true;
    // The queue of a restarted instance is completed from the records (they stay the authority).
    if (!this.loadedOnce)
      void this.ensureLoaded().catch((e: unknown) =>
        log("warn", "rebuilding the queue failed; the alarm retries", { error: String(e) }),
      );
    const at = now();
    await this.startDrain(Math.max(at, this.drain.due(at) ?? at));
    return { ok: true, window: this.window(cmd.acceptedAt) };
  }

  /**
   * New work in the queue. With sessions, the drain starts in memory and the alarm is only the
   * backstop; never with a message past its bound (the alarm's steps fail it first). With sessions
   * off, the alarm runs at `alarmAt`.
   */
  private async startDrain(alarmAt: number): Promise<void> {
    if (!this.drainsInMemory) return this.scheduler.wake(alarmAt);
    const at = now();
    const oldest = this.queue.oldestQueuedAt();
    if (oldest !== null && oldest + HELD_BOUND_MS <= at) return this.scheduler.wake(at);
    await this.scheduler.wake(at + WORK_BACKSTOP_MS);
    // A queue being rebuilt starts the drain once loaded (ensureLoaded); a failed rebuild, the alarm.
    if (this.loadedOnce) this.drain.runInMemory();
  }

  /** The workspace could not commit a send it handed off: its entry and its window slot go. */
  async release(jobId: string): Promise<void> {
    const e = this.queue.get(jobId);
    if (!e || e.state !== "queued") return;
    this.queue.remove(jobId);
    this.admitted = this.admitted.filter((a) => a.jobId !== jobId);
  }

  /**
   * An account-level error the operator reported by webhook (a `failed` status of one of this
   * number's messages, or its `errors`): the number pauses as for the same answer to a call (sends
   * keep being accepted and wait), see NumberHold.reported.
   */
  async reportAccountError(error: NormalizedError): Promise<void> {
    const at = now();
    if (refusesToken(error.upstreamCode))
      await tokenRefused(
        this.env.DB,
        this.numberId(),
        `The operator reported this token refused (code ${error.upstreamCode}).`,
      );
    if (!this.hold.reported(error, at)) return;
    log("warn", "number paused by the operator's webhook", { upstreamCode: error.upstreamCode, code: error.code });
    await this.scheduler.wake(this.hold.until());
  }

  /** A user wrote to this number: their customer-service window opens (the message itself is recorded by the workspace). */
  async noteInbound(_channelNumberId: string, contacts: InboundContact[]): Promise<void> {
    this.ctx.storage.transactionSync(() => {
      for (const c of contacts) {
        noteInbound(this.storage, c.from, c.at);
        if (c.userId !== undefined) noteUserId(this.storage, c.userId, c.from, c.at);
      }
    });
    await this.scheduler.wake(nextContactExpiry(this.storage) ?? now());
  }

  /** Users changed their phone number or user id (the operator's `system` messages): no window opens; sends to the old id go to the new one. */
  async noteIdentityChanges(_channelNumberId: string, moves: IdentityMove[]): Promise<void> {
    this.ctx.storage.transactionSync(() => {
      for (const m of moves) noteMove(this.storage, m.from, m.to, m.at);
    });
    await this.scheduler.wake(nextContactExpiry(this.storage) ?? now());
  }

  /** For each of the operator's ids of a user, the recipients our sends named them by when they differ (a reverse alias lookup). */
  async recipientsKnownAs(waIds: string[]): Promise<Record<string, string[]>> {
    return Object.fromEntries(waIds.map((id) => [id, recipientsKnownAs(this.storage, id)]));
  }

  /**
   * Marks an inbound message of this number read at the operator, with the number's credentials.
   * Not a message: it takes no slot of the 2-per-second window or of the pace, and waits for no
   * queue (the workspace's bucket limits how often it is asked).
   */
  async markRead(mark: ReadMark): Promise<ReadMarkOutcome> {
    const pending = this.marking.get(mark.upstreamMessageId);
    if (pending) return pending;
    const call = (async (): Promise<ReadMarkOutcome> => {
      const row = await this.drain.numberRow();
      if (!row || row.status !== "connected") return { kind: "disconnected" };
      const adapter = await adapterFor(this.env, row, (to) => contactWindow(this.storage, to, now()).windowOpen);
      const result = await adapter.markRead(mark);
      return result.kind === "marked" ? { kind: "marked", at: now() } : result;
    })().finally(() => this.marking.delete(mark.upstreamMessageId));
    this.marking.set(mark.upstreamMessageId, call);
    return call;
  }

  async contactWindow(phone: string): Promise<ContactWindow> {
    return contactWindow(this.storage, phone, now());
  }

  async sendingState(): Promise<NumberSendingState> {
    const p: PauseState | null = this.hold.pauseState(now());
    return {
      paused: p
        ? {
            code: p.error.code,
            message: p.error.message,
            upstreamCode: p.error.upstreamCode,
            reportedBy: p.reportedBy,
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

  override async alarm(): Promise<void> {
    // Started for this alarm (the runtime may hide an alarm being delivered from the constructor):
    // the earlier instance's calls of the last second count.
    if (!this.alarmRan && !this.admittedHere) this.drain.startFull(this.startedAt);
    this.alarmRan = true;
    await this.scheduler.runDue();
  }

  /** The number this object is: the name it is addressed by. */
  private numberId(): string {
    const name = this.ctx.id.name;
    if (!name) throw new Error("number object without a name");
    return name;
  }

  /** The window at acceptance time `acceptedAt` (the workspace's clock, like every time in `admitted`). */
  private window(acceptedAt: number): WindowState {
    this.admitted = this.admitted.filter((a) => a.at > acceptedAt - NUMBER_LIMIT.windowMs).sort((a, b) => a.at - b.at);
    return windowState(
      NUMBER_LIMIT,
      this.admitted.map((a) => a.at),
      0,
      acceptedAt,
    );
  }

  /** Rebuilds the queue from the workspace's work list for this number (once per instance). */
  private ensureLoaded(): Promise<void> {
    this.loaded ??= (async () => {
      const row = await this.drain.numberRow();
      if (!row) {
        // No such number: no workspace lists work for it (and the reload step is not due again).
        this.loadedOnce = true;
        return;
      }
      const stub = workspaceStub(this.env, row.workspace_id);
      let after = "";
      for (;;) {
        const page = await stub.workOf(row.id, after, RELOAD_PAGE);
        for (const w of page) {
          if (this.queue.has(w.jobId) || this.handOff.holds(w.jobId)) continue;
          const entry: Entry = {
            jobId: w.jobId,
            workspaceId: row.workspace_id,
            recipient: w.recipient,
            acceptedAt: w.acceptedAt,
            attempts: w.attempts,
            nextAttemptAt: w.nextAttemptAt ?? w.acceptedAt,
            state: "queued",
          };
          if (w.firstAttemptAt !== null) entry.firstAttemptAt = w.firstAttemptAt;
          this.queue.add(entry);
        }
        if (page.length < RELOAD_PAGE) break;
        after = page[page.length - 1]!.jobId;
      }
      this.loadedOnce = true;
      await this.startDrain(now());
    })().catch((err: unknown) => {
      this.loaded = null;
      throw err;
    });
    return this.loaded;
  }

  /**
   * Messages that could not leave within HELD_BOUND_MS of their acceptance fail with `held_too_long`
   * (their record gets the failure and its event like any other). Only entries not being called.
   */
  private async expireHeld(at: number): Promise<void> {
    for (const e of this.queue.queuedAcceptedBy(at - HELD_BOUND_MS, EXPIRY_BATCH)) {
      const result = await this.drain.giveUp(e, OWN_ERRORS.heldTooLong());
      // What the record became: a claim left unanswered makes it an unknown outcome instead.
      const fields = { jobId: e.jobId, acceptedAt: e.acceptedAt };
      if (result === null) log("warn", "message held past its bound; its give-up is handed again later", fields);
      else if (result.status === "failed") log("warn", "message held past its bound; failed, not sent", fields);
      else log("warn", "message held past its bound; given up, its record says", { ...fields, status: result.status });
    }
  }

  /** The sandbox's simulated reports that are due, applied like the operator's own (then deleted). */
  private async applySandboxReports(at: number): Promise<void> {
    const due = dueReports(this.storage, at);
    if (due.length === 0) return;
    const row = await this.drain.numberRow();
    if (row)
      await workspaceStub(this.env, row.workspace_id).applyStatuses(
        due.map(operatorStatusUpdate).filter((u): u is StatusUpdate => u !== null),
      );
    forgetReports(
      this.storage,
      due.map((r) => r.seq),
    );
  }
}

const plus = (t: number | null, ms: number): number | null => (t === null ? null : t + ms);
