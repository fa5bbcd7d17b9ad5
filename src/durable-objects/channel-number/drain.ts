import type { ChannelNumberRow } from "../../db/channel-numbers";
import { operatorPayloadOf } from "../../messages/content";
import { refusesToken } from "../../domain/number-binding";
import { tokenRefused } from "../../db/channel-numbers";
import { now } from "../../lib/clock";
import { log } from "../../lib/log";
import type { BeforeMessageCall, SendResult, OperatorAdapter } from "../../operator/adapter";
import { adapterFor } from "../../operator/adapter-for";
import { OWN_ERRORS, pairRateDelayMs } from "../../operator/error-codes";
import { workspaceStub } from "../stubs";
import type { ClaimPayload } from "../workspace/contract";
import type { StatusResult, StatusUpdate } from "../../messages/status";
import {
  MAX_CALLS_IN_FLIGHT,
  PACE_CALLS,
  PACE_WINDOW_MS,
  UNCONFIRMED_RECHECK_MS,
  nextCallAt,
  retryDecision,
} from "./delivery-policy";
import type { HandOff } from "./hand-off";
import { nextMove } from "./next-move";
import type { NumberHold } from "./number-hold";
import type { PairPace } from "./pair-pace";
import { scheduleReports } from "./sandbox-reports";
import type { NumberStorage } from "./number-storage";
import { currentIdOf, noteAlias } from "./contact-windows";
import type { Entry, WorkQueue } from "./work-queue";

export interface DrainDeps {
  env: Env;
  storage: NumberStorage;
  queue: WorkQueue;
  hold: NumberHold;
  pair: PairPace;
  handOff: HandOff;
  /** The number's D1 row (cached). */
  number(): Promise<ChannelNumberRow | null>;
  /** Whether the recipient wrote in the last 24 hours (the sandbox enforces the window as the operator does). */
  windowOpen(to: string): boolean;
  /** How long one drain session may keep the alarm, pacing calls (0: start what the pace allows now, then return). */
  sessionMs: number;
  /** Arms the object's alarm no later than a time (what a session started in memory leaves for later). */
  wake(at: number): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Takes due conversation heads to the operator at the number's pace. A call is this number's to
 * make once its workspace granted the claim (work.ts: a compare-and-set on the record, one grant
 * per attempt, none while an earlier one is unanswered): the record, not this object, is what makes
 * a call happen at most once. The call carries the record's payload, as the claim returned it.
 * Calls overlap: a session keeps starting calls at the pace while earlier ones wait for their
 * answers, so a slow operator does not slow the number down.
 */
export class Drain {
  /**
   * Start times of the latest calls, in memory. An instance that may follow calls of an earlier one
   * made within the last second starts full (`startFull`): no window of the pace ever holds more
   * than its calls across a restart, without a row written per call.
   */
  private calls: number[] = [];
  /** This instance's latest call (what `startFull` counts is an earlier instance's). */
  private lastOwnCall: number | null = null;
  private session: Promise<void> | null = null;
  /** Calls waiting on the operator's answer, whichever session started them. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Wakes a session that waits (on an answer or a slot) when new work arrives. */
  private nudge: (() => void) | null = null;
  private readonly claiming = new Set<string>();

  constructor(private readonly d: DrainDeps) {}

  /** When the drain next has a call to start, or null. */
  due(at: number): number | null {
    const head = this.nextHeadAt();
    return head === null ? null : Math.max(head, nextCallAt(this.calls, at), this.d.hold.until());
  }

  /** The number's D1 row (cached). */
  numberRow(): Promise<ChannelNumberRow | null> {
    return this.d.number();
  }

  /**
   * The instance may follow an earlier one that called within the second before `at` (it found
   * the alarm armed or running, which `leaseHeld` keeps so while that can be):
   * its pace counts two calls at `at`, so its first call starts a whole window later. Nothing to
   * do once this instance called itself.
   */
  startFull(at: number): void {
    if (this.calls.length === 0) this.calls = Array.from({ length: PACE_CALLS }, () => at);
  }

  /**
   * Whether the alarm must stay armed for the pace's sake: a claim or call of this instance is under
   * way, or its latest call is less than a window old (an instance started meanwhile must find the
   * alarm and count it, see `startFull`).
   */
  leaseHeld(at: number): boolean {
    return this.claiming.size > 0 || (this.lastOwnCall !== null && this.lastOwnCall + PACE_WINDOW_MS > at);
  }

  /** Start times of the latest calls, a copy (the pace reads the field; the suite's number reads this). */
  recentCalls(): number[] {
    return [...this.calls];
  }

  /**
   * One session at a time: a second alarm run (or a send) while a session is active joins it
   * instead of starting another loop over the same queue and pace. Resolves once the session
   * ended and every call it started was answered; a session that ended lets the next one start at
   * once, while its calls are still waiting (they count against the limit of calls in flight,
   * which is the drain's, not a session's).
   */
  run(): Promise<void> {
    // New work for a session that waits: it looks at the queue again now.
    this.nudge?.();
    this.session ??= this.runSession().finally(() => {
      this.session = null;
    });
    return this.session.then(async () => {
      await Promise.allSettled([...this.inFlight]);
    });
  }

  private nextHeadAt(): number | null {
    return this.d.queue.nextDueAt((e) =>
      this.claiming.has(e.jobId) || this.d.handOff.uncommitted(e.jobId)
        ? Infinity
        : Math.max(e.nextAttemptAt, this.d.pair.readyAt(e.recipient, e.nextAttemptAt)),
    );
  }

  private async runSession(): Promise<void> {
    const started = now();
    let slept = 0;
    const inFlight = this.inFlight;
    for (;;) {
      const t = now();
      this.d.hold.confirmIfDue(t);
      const heldUntil = this.d.hold.until();
      const entry =
        heldUntil > t
          ? undefined
          : this.d.queue.nextDue(
              t,
              (e) =>
                !this.claiming.has(e.jobId) &&
                !this.d.handOff.uncommitted(e.jobId) &&
                this.d.pair.readyAt(e.recipient, t) <= t,
            );
      const move = nextMove(
        {
          heldUntil,
          hasDueHead: entry !== undefined,
          slot: nextCallAt(this.calls, t),
          nextHeadAt: heldUntil > t || entry ? null : this.nextHeadAt(),
          callsInFlight: inFlight.size,
          maxCallsInFlight: MAX_CALLS_IN_FLIGHT,
          startedAt: started,
          slept,
          sessionMs: this.d.sessionMs,
        },
        t,
      );
      if (move.kind === "start" && entry) {
        const begun = await this.start(entry);
        if (begun) {
          const { call } = begun;
          inFlight.add(call);
          void call.finally(() => inFlight.delete(call));
        }
        continue;
      }
      if (move.kind === "await-answer") {
        await Promise.race([...inFlight, this.nudged()]);
        continue;
      }
      if (move.kind === "sleep") {
        slept += move.ms;
        await Promise.race([sleep(move.ms), this.nudged()]);
        continue;
      }
      // `end`: the session's time is up with work still due (or there is none); the alarm starts the next one.
      return;
    }
  }

  /**
   * A call was answered: with sessions in memory, one starts if none runs (a session that ended
   * while its calls waited leaves the work the answer makes due to the next one, not to the alarm).
   */
  private answered(): void {
    if (this.d.sessionMs === 0 || this.session !== null) return;
    this.runInMemory();
  }

  /**
   * A session started outside the alarm (by a send, a rebuilt queue or an answer): what it leaves
   * for later (a wait longer than the session, a retry) arms the alarm once it ended.
   */
  runInMemory(): void {
    this.run()
      .then(async () => {
        const due = this.due(now());
        if (due !== null) await this.d.wake(due);
      })
      .catch((err: unknown) => log("warn", "a drain session failed; the alarm retries", { error: String(err) }));
  }

  /** Resolves when `run` is called again (new work); one waiter at a time: the session. */
  private nudged(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.nudge = () => {
        this.nudge = null;
        resolve();
      };
    });
  }

  /** Claims the entry and starts its call; returns the running call (wrapped, so that it is not awaited here), or null. */
  private async start(e: Entry): Promise<{ call: Promise<void> } | null> {
    this.claiming.add(e.jobId);
    let started = false;
    try {
      const number = await this.d.number();
      if (!number || number.status !== "connected") {
        await this.giveUp(e, OWN_ERRORS.numberDisconnected());
        return null;
      }
      const attempt = e.attempts + 1;
      e.state = "calling";
      const claim = await workspaceStub(this.d.env, e.workspaceId).claim(e.jobId, attempt);
      const t = now();
      switch (claim.kind) {
        case "wait":
          // Its send is still committing in the workspace (ask again shortly), or the record's retry
          // time is later than this number knew (another instance stored the operator's Retry-After).
          e.state = "queued";
          e.nextAttemptAt = Math.max(claim.until ?? 0, t + UNCONFIRMED_RECHECK_MS);
          return null;
        case "never":
          log("warn", "queued entry its workspace never recorded; dropped unsent", { jobId: e.jobId });
          this.d.queue.remove(e.jobId);
          return null;
        case "settled":
          // Sent or failed meanwhile (an operator report, an expiry): never called again.
          this.d.queue.remove(e.jobId);
          return null;
        case "claimed_before":
          // A claim for this attempt (or later) was granted and never answered: its call may have
          // left (a restart lost the answer). Never called again; the operator's report settles it.
          log("warn", "entry claimed before and never answered; outcome unknown", { jobId: e.jobId });
          this.d.queue.remove(e.jobId);
          await this.d.handOff.hand(e.workspaceId, {
            jobId: e.jobId,
            at: t,
            attempt: claim.attempts,
            outcomeUnknown: true,
          });
          return null;
        case "go":
          break;
      }
      const adapter = await adapterFor(this.d.env, number, (to) => this.d.windowOpen(to));
      let slotAt = now();
      // The pace can have moved during the claim only by the message call of a send that uploaded
      // its file first (`messageCall`): this call waits for the next slot.
      for (let free = nextCallAt(this.calls, slotAt); free > slotAt; free = nextCallAt(this.calls, slotAt)) {
        await sleep(free - slotAt);
        slotAt = now();
      }
      // A hold can have moved during the claim (another call's answer paused or throttled the number).
      if (this.d.hold.until() > slotAt) {
        // The attempt is given back; the entry is claimed again once that answer is committed.
        e.state = "queued";
        await this.d.handOff.hand(e.workspaceId, { jobId: e.jobId, at: slotAt, attempt, notSent: true });
        return null;
      }
      this.calls = [...this.calls, slotAt].slice(-PACE_CALLS);
      this.lastOwnCall = slotAt;
      this.d.pair.noteCall(e.recipient, slotAt);
      this.d.hold.probing(slotAt, e.jobId);
      e.attempts = attempt;
      started = true;
      // No await between taking the call's time and starting the request.
      return {
        call: this.call(adapter, e, attempt, claim.payload, () => this.messageCall(slotAt, e.recipient)).finally(() => {
          this.claiming.delete(e.jobId);
          this.answered();
        }),
      };
    } catch (err) {
      // The claim or the adapter failed: nothing left; the entry waits and is claimed again
      // (a grant that did happen is then "claimed before": outcome unknown, never a second call).
      log("warn", "starting a call failed; the entry waits", { jobId: e.jobId, error: String(err) });
      e.state = "queued";
      e.nextAttemptAt = now() + UNCONFIRMED_RECHECK_MS * 10;
      return null;
    } finally {
      if (!started) this.claiming.delete(e.jobId);
    }
  }

  /**
   * The message call of a send whose file went to the operator first (api-adapter.ts): its slot was
   * taken when the call started, at `startedAt`, and the upload then took up to minutes while other
   * recipients' calls went on at the pace, so the message call takes a slot of its own when it is
   * made. While its own slot is still the latest call, that slot moves to now instead (a later
   * latest start keeps every window: nothing follows it yet), so a file the operator already holds
   * costs no slot more. Resolves when the call may start; the adapter starts it in the same
   * synchronous step. A hold that began meanwhile does not stop it, as it stops no call already
   * started (the operator's answer decides, as for the others): a paused number's probe that
   * uploads would otherwise wait on its own probe's time.
   */
  private async messageCall(startedAt: number, recipient: string): Promise<void> {
    for (;;) {
      const t = now();
      if (this.calls[this.calls.length - 1] === startedAt) {
        this.calls = [...this.calls.slice(0, -1), t];
      } else {
        const free = nextCallAt(this.calls, t);
        if (free > t) {
          await sleep(free - t);
          continue;
        }
        this.calls = [...this.calls, t].slice(-PACE_CALLS);
      }
      // No await between taking the call's time and returning to the adapter, which starts it.
      this.lastOwnCall = t;
      this.d.pair.noteCall(recipient, t);
      return;
    }
  }

  private async call(
    adapter: OperatorAdapter,
    e: Entry,
    attempt: number,
    payload: ClaimPayload,
    beforeMessageCall: BeforeMessageCall,
  ): Promise<void> {
    let result: SendResult;
    try {
      // A recipient who changed number or user id since (the operator told us) is reached at the new one.
      const to = currentIdOf(this.d.storage, payload.to);
      const sent = operatorPayloadOf(payload);
      // A record whose payload cannot be read is never sent as something else.
      result = sent
        ? await adapter.send({ jobId: e.jobId, to, attempt, type: sent.type, payload: sent.payload }, beforeMessageCall)
        : { kind: "permanent", error: OWN_ERRORS.unreadableContent(payload.type) };
    } catch (err) {
      log("error", "operator adapter threw", { jobId: e.jobId, error: String(err) });
      result = { kind: "unknown", message: "The adapter failed during the call." };
    }
    try {
      await this.settle(e, attempt, result);
    } catch (err) {
      // The answer is lost: the record still says "claimed, not answered", so the next claim finds
      // it claimed before and its outcome is reported unknown; it is never sent twice.
      log("error", "settling an operator call failed", { jobId: e.jobId, error: String(err) });
      e.state = "queued";
    }
  }

  /** The operator refused the number's token to a send: its binding is unverified (number-binding.ts); the pause stands either way. */
  private async tokenRefused(code: string | null): Promise<void> {
    try {
      const number = await this.d.number();
      if (number)
        await tokenRefused(this.d.env.DB, number.id, `The operator refused this token to a send (code ${code}).`);
    } catch (err) {
      log("warn", "a refused token could not be recorded on the number; the next refusal records it", {
        error: String(err),
      });
    }
  }

  private async settle(e: Entry, attempt: number, result: SendResult): Promise<void> {
    const t = now();
    const final = async (update: StatusUpdate): Promise<void> => {
      this.d.queue.remove(e.jobId);
      await this.d.handOff.hand(e.workspaceId, update);
    };
    switch (result.kind) {
      case "accepted":
        this.d.hold.accepted(e.jobId, t);
        if (result.recipientId) noteAlias(this.d.storage, e.recipient, result.recipientId, t);
        if (result.later) scheduleReports(this.d.storage, e.jobId, result.upstreamMessageId, t, result.later);
        await final({ jobId: e.jobId, at: t, attempt, status: "sent", upstreamMessageId: result.upstreamMessageId });
        return;
      case "permanent":
        this.d.hold.refused(e.jobId, t);
        await final({ jobId: e.jobId, at: t, attempt, status: "failed", error: result.error });
        return;
      case "number_blocked":
        // Nothing was sent: the message waits at the head of its conversation while the number pauses.
        this.d.hold.pause(result.error, t);
        e.state = "queued";
        e.attempts = attempt - 1;
        // Kept and handed until committed, like a final answer; the entry waits for that.
        await this.d.handOff.hand(e.workspaceId, { jobId: e.jobId, at: t, attempt, notSent: true });
        if (refusesToken(result.error.upstreamCode)) await this.tokenRefused(result.error.upstreamCode);
        return;
      case "retryable": {
        const first = e.firstAttemptAt ?? t;
        e.firstAttemptAt = first;
        const decision = retryDecision(
          attempt,
          first,
          result.pairRate ? { ...result, minDelayMs: pairRateDelayMs(attempt) } : result,
          t,
        );
        if ("exhausted" in decision) {
          await final({
            jobId: e.jobId,
            at: t,
            attempt,
            status: "failed",
            error: OWN_ERRORS.retriesExhausted(result.operatorCode ?? result.message),
          });
          return;
        }
        if (result.scope === "number") this.d.hold.throttle(decision.retryAt);
        e.state = "queued";
        e.nextAttemptAt = decision.retryAt;
        // Kept and handed until committed, like a final answer: the next claim of this entry needs
        // this attempt answered, so the entry is not claimed before (HandOff.uncommitted).
        await this.d.handOff.hand(e.workspaceId, { jobId: e.jobId, at: t, attempt, retryAt: decision.retryAt });
        return;
      }
      case "unknown":
        log("warn", "operator outcome unknown; waiting for the operator's status", {
          jobId: e.jobId,
          reason: result.message,
        });
        if (result.later) scheduleReports(this.d.storage, e.jobId, `sandbox.${e.jobId}`, t, result.later);
        await final({ jobId: e.jobId, at: t, attempt, outcomeUnknown: true });
        return;
    }
  }

  /**
   * A message the number gives up on without a call (disconnected, held too long). The workspace
   * applies it by the claim's rules: a record whose claim is unanswered becomes an unknown outcome
   * instead (its call may have left), one settled meanwhile stays as it is. Resolves with what the
   * record became, or null when the give-up is kept to be handed again.
   */
  async giveUp(e: Entry, error: StatusUpdate["error"]): Promise<StatusResult | null> {
    this.d.queue.remove(e.jobId);
    return this.d.handOff.hand(e.workspaceId, { jobId: e.jobId, at: now(), status: "failed", error });
  }
}
