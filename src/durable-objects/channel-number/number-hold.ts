import type { NormalizedError } from "../../messages/status";
import { getMeta, setMeta } from "../shared/meta";
import type { NumberStorage } from "./number-storage";

/** First probe 15 minutes after a pause, then doubling up to 6 hours. */
const FIRST_PROBE_MS = 15 * 60_000;
const MAX_PROBE_MS = 6 * 60 * 60_000;
/**
 * A number paused by a webhook report resumes this long after the operator accepted its probe,
 * unless a failure with an account-level code is reported meanwhile. The operator accepts the calls
 * of such an account and fails them by webhook, within seconds; accepting the call proves nothing.
 */
export const CONFIRM_PROBE_MS = 5 * 60_000;

/** How the operator told of an account-level problem: its answer to one of our calls, or a webhook. */
export type PauseSource = "answer" | "webhook";

export interface PauseState {
  error: NormalizedError;
  since: number;
  probes: number;
  nextProbeAt: number;
  reportedBy: PauseSource;
  /** The message called as the pause's probe (the one call a paused number makes at a time). */
  probe?: string;
  /** A webhook pause whose probe the operator accepted: it resumes at `nextProbeAt` unless a failure is reported first. */
  confirming?: boolean;
}

const delayAfter = (probes: number): number => Math.min(MAX_PROBE_MS, FIRST_PROBE_MS * 2 ** (probes - 1));

/**
 * When the whole number must wait: a throughput limit the operator applies to
 * the number (every message waits out the back-off), or a pause after an
 * account-level refusal (bad token, blocked account, unregistered number),
 * which would fail every message alike. A paused number keeps accepting sends;
 * they wait. It tries one message again at growing intervals and resumes when
 * one goes through, or at once when its credentials are reconnected.
 *
 * The refusal comes in the operator's answer to a call, or by webhook (a `failed` status or the
 * `errors` of a `messages` change, with an account-level code). After a webhook the operator
 * accepts calls it will fail later, so a probe it accepts only resumes the number once
 * CONFIRM_PROBE_MS passed without another such report.
 *
 * Kept in `meta` (`throttled_until`, `paused`): written only when the hold changes.
 */
export class NumberHold {
  private throttledUntil: number;
  private paused: PauseState | null;

  constructor(private readonly storage: NumberStorage) {
    const sql = storage.exists ? storage.sql : null;
    this.throttledUntil = Number((sql && getMeta(sql, "throttled_until")) ?? 0);
    const raw = sql ? getMeta(sql, "paused") : undefined;
    this.paused = raw ? (JSON.parse(raw) as PauseState | null) : null;
  }

  /** No call starts before this. */
  until(): number {
    return Math.max(this.throttledUntil, this.paused?.nextProbeAt ?? 0);
  }

  /** The pause as of `at` (a confirmed probe's pause has ended by then). */
  pauseState(at: number): PauseState | null {
    this.confirmIfDue(at);
    return this.paused;
  }

  throttle(until: number): void {
    if (until <= this.throttledUntil) return;
    this.throttledUntil = until;
    setMeta(this.storage.ensure(), "throttled_until", String(until));
  }

  /** The operator refused a call with an account-level code (its answer). */
  pause(error: NormalizedError, at: number): void {
    const probes = (this.paused?.probes ?? 0) + 1;
    this.write({
      error,
      since: this.paused?.since ?? at,
      probes,
      nextProbeAt: at + delayAfter(probes),
      reportedBy: "answer",
    });
  }

  /**
   * The operator reported an account-level failure by webhook. A number not paused pauses; one
   * waiting to confirm its probe learns that the probe (or a message just before it) failed, and
   * waits longer. Otherwise nothing changes: reports about messages called before the pause keep
   * arriving after it, and must not stretch its back-off. Whether the pause changed.
   */
  reported(error: NormalizedError, at: number): boolean {
    const p = this.paused;
    if (p && !p.confirming) return false;
    const probes = (p?.probes ?? 0) + 1;
    this.write({ error, since: p?.since ?? at, probes, nextProbeAt: at + delayAfter(probes), reportedBy: "webhook" });
    return true;
  }

  /** A paused number starts one probe call: no other call starts until its answer decides. */
  probing(at: number, jobId: string): void {
    if (!this.paused) return;
    this.write({ ...this.paused, nextProbeAt: at + FIRST_PROBE_MS, probe: jobId, confirming: false });
  }

  /**
   * The operator accepted a call. Paused by an answer: the number sends again. Paused by a webhook:
   * only its probe counts, and it resumes the number CONFIRM_PROBE_MS later unless a failure is
   * reported meanwhile (a call that started before the pause says nothing about it).
   */
  accepted(jobId: string, at: number): void {
    const p = this.paused;
    if (!p) return;
    if (p.reportedBy !== "webhook") {
      this.resume();
      return;
    }
    if (p.probe === jobId) this.write({ ...p, nextProbeAt: at + CONFIRM_PROBE_MS, confirming: true });
  }

  /**
   * The operator refused a call for a reason of that message alone. Paused by an answer: the
   * account answered, the number sends again. Paused by a webhook: the refusal came before the
   * account's own checks, so it says nothing; if it was the probe, another message is tried at once.
   */
  refused(jobId: string, at: number): void {
    const p = this.paused;
    if (!p) return;
    if (p.reportedBy !== "webhook") {
      this.resume();
      return;
    }
    if (p.probe === jobId) this.write({ ...p, nextProbeAt: at, confirming: false });
  }

  /** A probe the operator accepted, with no failure reported since: the number sends again. */
  confirmIfDue(at: number): void {
    if (this.paused?.confirming && this.paused.nextProbeAt <= at) this.resume();
  }

  /** A call went through (or the credentials changed): the number sends again. */
  resume(): boolean {
    if (!this.paused) return false;
    this.paused = null;
    setMeta(this.storage.ensure(), "paused", "null");
    return true;
  }

  private write(p: PauseState): void {
    this.paused = p;
    setMeta(this.storage.ensure(), "paused", JSON.stringify(p));
  }
}
