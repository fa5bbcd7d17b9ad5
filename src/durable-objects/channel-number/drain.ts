import type { ChannelNumberRow } from "../../db/channel-numbers";
import { now } from "../../lib/clock";
import { log } from "../../lib/log";
import type { SendResult, UpstreamAdapter } from "../../upstream/adapter";
import { adapterFor } from "../../upstream/adapter-for";
import { OWN_ERRORS, pairRateDelayMs } from "../../upstream/error-codes";
import { getMeta, setMeta } from "../shared/meta";
import { workspaceStub } from "../stubs";
import type { StatusUpdate } from "../workspace/contract";
import {
  MAX_CALLS_IN_FLIGHT,
  PACE_CALLS,
  UNCONFIRMED_RECHECK_MS,
  UNCONFIRMED_WAIT_MS,
  nextCallAt,
  retryDecision,
} from "./delivery-policy";
import { findBySeq, nextReady, nextReadyAt, promoteHead, transition, type OutboxRow } from "./outbox";
import { scheduleReports } from "./sandbox-reports";
import { nextMove } from "./next-move";
import type { StatusRelay } from "./status-relay";
import { notePairCall, pairReadyAt } from "./pair-pace";
import { contactWindow, noteAlias } from "./contacts";
import type { NumberHold } from "./number-hold";

export interface DrainDeps {
  ctx: DurableObjectState;
  env: Env;
  sql: SqlStorage;
  /** The number's D1 row (cached). */
  number(): Promise<ChannelNumberRow | null>;
  hold: NumberHold;
  /** Hands each settled entry's change to its workspace right after the commit. */
  relay: StatusRelay;
  /** How long one drain session may keep the alarm, pacing calls (0: start what the pace allows now, then return). */
  sessionMs: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Takes due conversation heads to the operator at the number's pace. Each call
 * is persisted as `sending` before it starts (the output gate holds the request
 * until that write is durable), and its start time is taken in the same
 * synchronous step as the fetch, so the pace holds at the operator. Calls
 * overlap: a session keeps starting calls at the pace while earlier ones wait
 * for their answers, so a slow operator does not slow the number down.
 */
export class Drain {
  private readonly claimed = new Set<number>();
  private calls: number[];
  /** Keys of the entries this object has put in `sending` (as of its latest call), kept in the pace's row. */
  private sending: number[];
  private session: Promise<void> | null = null;

  constructor(private readonly d: DrainDeps) {
    const pace = readPace(d.sql);
    this.calls = pace.calls;
    this.sending = pace.sending;
  }

  /** Writes the pace (and the status relay's checkpoint with it, one row) outside a call, e.g. after a batch of expiries. */
  notePace(at: number): void {
    writePace(this.d.sql, this.calls, this.d.relay.checkpoint(at), this.sending);
  }

  /** When the drain next has a call to start, or null. */
  due(at: number): number | null {
    const ready = nextReadyAt(this.d.sql);
    if (ready === null) return null;
    return Math.max(ready, nextCallAt(this.calls, at), this.d.hold.until());
  }

  /** Start times of the latest calls (operator view and tests). */
  recentCalls(): number[] {
    return [...this.calls];
  }

  /**
   * One session at a time: a second alarm run (or any other caller) while a session is active
   * joins it instead of starting another loop over the same outbox and pace.
   */
  run(): Promise<void> {
    // The session ends once the changes its calls settled are handed to the workspace.
    this.session ??= this.runSession()
      .then(() => this.d.relay.idle())
      .finally(() => {
        this.session = null;
      });
    return this.session;
  }

  private async runSession(): Promise<void> {
    const started = now();
    let slept = 0;
    const inFlight = new Set<Promise<void>>();
    try {
      for (;;) {
        const t = now();
        const heldUntil = this.d.hold.until();
        const row = heldUntil > t ? undefined : nextReady(this.d.sql, t, this.claimed);
        const move = nextMove(
          {
            heldUntil,
            hasDueHead: row !== undefined,
            slot: nextCallAt(this.calls, t),
            nextHeadAt: heldUntil > t || row ? null : nextReadyAt(this.d.sql),
            callsInFlight: inFlight.size,
            maxCallsInFlight: MAX_CALLS_IN_FLIGHT,
            startedAt: started,
            slept,
            sessionMs: this.d.sessionMs,
          },
          t,
        );
        if (move.kind === "start" && row) {
          const begun = await this.start(row);
          if (begun) {
            const { call } = begun;
            inFlight.add(call);
            void call.finally(() => inFlight.delete(call));
          }
          continue;
        }
        if (move.kind === "await-answer") {
          await Promise.race(inFlight);
          continue;
        }
        if (move.kind === "sleep") {
          slept += move.ms;
          await sleep(move.ms);
          continue;
        }
        // `end`: the session's time is up with work still due (or there is none); the alarm starts the next one.
        return;
      }
    } finally {
      await Promise.allSettled([...inFlight]);
    }
  }

  /** Claims the entry and starts its call; returns the running call (wrapped, so that it is not awaited here), or null. */
  private async start(row: OutboxRow): Promise<{ call: Promise<void> } | null> {
    this.claimed.add(row.seq);
    let started = false;
    try {
      // The operator's pair rate: this conversation waits (still queued, nothing asked of anyone); the others go on.
      const pairAt = pairReadyAt(this.d.sql, row.recipient, now());
      if (pairAt > now()) {
        transition(this.d.sql, row, ["queued"], "queued", now(), { next_attempt_at: pairAt });
        return null;
      }
      const number = await this.d.number();
      if (!number || number.status !== "connected") {
        this.finish(row, "failed", { error: OWN_ERRORS.numberDisconnected() });
        return null;
      }
      // The workspace must know the message (its send may have failed after the hand-off) and learns it is processing.
      const claim = await workspaceStub(this.d.env, row.workspace_id).applyStatus({
        jobId: row.job_id,
        status: "processing",
        at: now(),
      });
      const t = now();
      if (!claim.known) {
        if (
          row.accepted_at < t - UNCONFIRMED_WAIT_MS &&
          this.d.hold.pausedDuring(row.accepted_at, row.accepted_at + UNCONFIRMED_WAIT_MS)
        ) {
          // Held by a pause since its acceptance, it was never asked about in its first seconds: a
          // missing record may be one the workspace lost. Never dropped in silence: it fails, and the
          // failure stays owed to the workspace (a retry of the same send that commits it learns it).
          log("error", "held message whose workspace record cannot be found; failed, not sent", { jobId: row.job_id });
          this.finish(row, "failed", { error: OWN_ERRORS.recordMissing() });
          return null;
        }
        if (row.accepted_at < t - UNCONFIRMED_WAIT_MS) {
          log("warn", "outbox entry its workspace never recorded steps out of line", { jobId: row.job_id });
          if (transition(this.d.sql, row, ["queued"], "orphan", t)) promoteHead(this.d.sql, row.recipient);
        } else {
          transition(this.d.sql, row, ["queued"], "queued", t, { next_attempt_at: t + UNCONFIRMED_RECHECK_MS });
        }
        return null;
      }
      if (claim.status === "sent" || claim.status === "failed") {
        // Settled meanwhile (an operator status): never called again.
        if (transition(this.d.sql, row, ["queued"], claim.status, t)) promoteHead(this.d.sql, row.recipient);
        return null;
      }
      const adapter = await adapterFor(this.d.env, number, (to) => contactWindow(this.d.sql, to, now()).windowOpen);
      const slotAt = now();
      if (nextCallAt(this.calls, slotAt) > slotAt || this.d.hold.until() > slotAt) return null;
      const attempt = row.attempts + 1;
      const calls = [...this.calls, slotAt].slice(-PACE_CALLS);
      // The compare-and-set that makes the call ours: an operator status may have settled the entry
      // during the awaits above (the claim, the number's row, the adapter), and then it never leaves.
      let sending: number[] = [];
      const claimed = this.d.ctx.storage.transactionSync(() => {
        if (
          !transition(this.d.sql, row, ["queued"], "sending", slotAt, { attempts: attempt, first_attempt_at: slotAt })
        )
          return false;
        // The relay's checkpoint and the entries in flight (a restart marks them unknown) ride on
        // the pace's row, written with every call anyway: no index row per call.
        sending = [...stillSending(this.d.sql, this.sending), row.seq];
        writePace(this.d.sql, calls, this.d.relay.checkpoint(slotAt), sending);
        notePairCall(this.d.sql, row.recipient, slotAt);
        this.d.hold.probing(slotAt);
        return true;
      });
      if (!claimed) {
        log("info", "outbox entry settled while its call was being prepared; not called", { jobId: row.job_id });
        return null;
      }
      this.calls = calls;
      this.sending = sending;
      const holdAtSlot = this.d.hold.until();
      // The output gate holds the request until these writes are durable, and a commit can take
      // longer than the pace's margin: a call held that long would reach the operator less than
      // a second before the call after next. So wait for durability here and count the pace from
      // when the request really leaves.
      await this.d.ctx.storage.sync();
      const callAt = now();
      if (this.d.hold.until() > holdAtSlot) {
        // Another call's answer paused the number meanwhile: this one does not go out.
        transition(this.d.sql, row, ["sending"], "queued", callAt, { attempts: row.attempts });
        return null;
      }
      // An operator status about an earlier attempt can also settle a `sending` entry during that
      // wait. Compared here, in the same synchronous step as the request's start (a read, no write).
      const current = findBySeq(this.d.sql, row.seq);
      if (current?.state !== "sending" || current.job_id !== row.job_id) {
        log("info", "outbox entry settled while its `sending` state was made durable; not called", {
          jobId: row.job_id,
        });
        return null;
      }
      // This call's slot is still the latest (one session, one start at a time): it moves to the real time.
      this.calls = [...this.calls.slice(0, -1), callAt];
      started = true;
      // No await between taking the call's time and starting the request.
      return { call: this.call(adapter, row, attempt).finally(() => this.claimed.delete(row.seq)) };
    } finally {
      if (!started) this.claimed.delete(row.seq);
    }
  }

  private async call(adapter: UpstreamAdapter, row: OutboxRow, attempt: number): Promise<void> {
    let result: SendResult;
    try {
      result = await adapter.send({ jobId: row.job_id, to: row.recipient, body: row.body, attempt });
    } catch (err) {
      log("error", "upstream adapter threw", { jobId: row.job_id, error: String(err) });
      result = { kind: "unknown", message: "The adapter failed during the call." };
    }
    try {
      this.settle(row, attempt, result);
    } catch (err) {
      // The entry stays `sending`: a restart marks it unknown; it is never sent twice.
      log("error", "settling an upstream call failed", { jobId: row.job_id, error: String(err) });
    }
    await this.d.relay.idle();
  }

  private settle(row: OutboxRow, attempt: number, result: SendResult): void {
    const t = now();
    switch (result.kind) {
      case "accepted":
        this.d.hold.resume();
        this.finish(row, "sent", {
          upstreamMessageId: result.upstreamMessageId,
          ...(result.recipientId ? { recipientId: result.recipientId } : {}),
        });
        if (result.later) scheduleReports(this.d.sql, row.job_id, result.upstreamMessageId, t, result.later);
        return;
      case "permanent":
        this.d.hold.resume();
        this.finish(row, "failed", { error: result.error });
        return;
      case "number_blocked":
        // Nothing was sent: the message waits at the head of its conversation while the number pauses.
        this.d.ctx.storage.transactionSync(() => {
          transition(this.d.sql, row, ["sending"], "queued", t, { attempts: attempt - 1 });
          this.d.hold.pause(result.error, t);
        });
        return;
      case "retryable": {
        const decision = retryDecision(
          attempt,
          row.first_attempt_at ?? t,
          result.pairRate ? { ...result, minDelayMs: pairRateDelayMs(attempt) } : result,
          t,
        );
        if ("exhausted" in decision) {
          this.finish(row, "failed", { error: OWN_ERRORS.retriesExhausted(result.upstreamCode ?? result.message) });
          return;
        }
        this.d.ctx.storage.transactionSync(() => {
          transition(this.d.sql, row, ["sending"], "queued", t, { next_attempt_at: decision.retryAt });
          if (result.scope === "number") this.d.hold.throttle(decision.retryAt);
        });
        return;
      }
      case "unknown":
        if (
          this.d.ctx.storage.transactionSync(() => {
            if (!transition(this.d.sql, row, ["sending"], "unknown", t, { unknown_since: t })) return false;
            promoteHead(this.d.sql, row.recipient);
            return true;
          })
        ) {
          this.d.relay.hand(row.workspace_id, { jobId: row.job_id, at: t, outcomeUnknown: true }, t);
        }
        log("warn", "upstream outcome unknown; waiting for the operator's status", {
          jobId: row.job_id,
          reason: result.message,
        });
        if (result.later) scheduleReports(this.d.sql, row.job_id, `sandbox.${row.job_id}`, t, result.later);
        return;
    }
  }

  /**
   * Final state of an entry; the change is handed to the workspace's record right after the
   * commit (the entry's state and `error` are its durable record: see StatusRelay).
   */
  finish(
    row: OutboxRow,
    state: "sent" | "failed",
    detail: Pick<StatusUpdate, "upstreamMessageId" | "error"> & { recipientId?: string },
  ): void {
    const t = now();
    const moved = this.d.ctx.storage.transactionSync(() => {
      const moved = transition(this.d.sql, row, ["queued", "sending", "unknown"], state, t, {
        upstream_message_id: detail.upstreamMessageId ?? null,
        recipient_id: detail.recipientId ?? null,
        ...(detail.error ? { error: JSON.stringify(detail.error) } : {}),
      });
      if (!moved) return false;
      promoteHead(this.d.sql, row.recipient);
      if (detail.recipientId) noteAlias(this.d.sql, row.recipient, detail.recipientId, t);
      return true;
    });
    if (!moved) return;
    const update: StatusUpdate = { jobId: row.job_id, at: t, status: state };
    if (detail.upstreamMessageId) update.upstreamMessageId = detail.upstreamMessageId;
    if (detail.error) update.error = detail.error;
    this.d.relay.hand(row.workspace_id, update, t);
  }
}

/**
 * The pace's `meta` row: the latest call times, the status relay's checkpoint (StatusRelay) and
 * the keys of the entries put in `sending` by the latest calls (a restart marks those still
 * `sending` unknown; the list is pruned at each call, so it holds at most the calls in flight).
 */
export function readPace(sql: SqlStorage): { calls: number[]; relayAfter: number | null; sending: number[] } {
  const v = JSON.parse(getMeta(sql, "recent_calls") ?? "[]") as
    number[] | { calls: number[]; relayAfter: number; sending?: number[] };
  // Earlier releases stored the call times alone (and relayed every change through a row).
  return Array.isArray(v) ? { calls: v, relayAfter: null, sending: [] } : { ...v, sending: v.sending ?? [] };
}

export function writePace(sql: SqlStorage, calls: number[], relayAfter: number, sending: number[]): void {
  setMeta(sql, "recent_calls", JSON.stringify({ calls, relayAfter, sending }));
}

/** Which of `seqs` are still `sending` (a handful of key lookups). */
function stillSending(sql: SqlStorage, seqs: number[]): number[] {
  if (seqs.length === 0) return [];
  return sql
    .exec<{ seq: number }>(
      `SELECT seq FROM outbox WHERE seq IN (${seqs.map(() => "?").join(", ")}) AND state = 'sending'`,
      ...seqs,
    )
    .toArray()
    .map((r) => r.seq);
}
