import type { NormalizedError } from "../../upstream/adapter";
import { now } from "../../lib/clock";
import { getMeta, setMeta } from "../shared/meta";

/** First probe 15 minutes after a pause, then doubling up to 6 hours. */
const FIRST_PROBE_MS = 15 * 60_000;
const MAX_PROBE_MS = 6 * 60 * 60_000;

export interface PauseState {
  error: NormalizedError;
  since: number;
  probes: number;
  nextProbeAt: number;
}

/**
 * When the whole number must wait: a throughput limit the operator applies to
 * the number (every message waits out the back-off), or a pause after an
 * account-level refusal (bad token, blocked account, unregistered number),
 * which would fail every message alike. A paused number keeps accepting sends;
 * they wait. It tries one message again at growing intervals and resumes when
 * one goes through, or at once when its credentials are reconnected.
 */
export class NumberHold {
  private throttledUntil: number;
  private paused: PauseState | null;
  /** The last pause that ended, [since, until): a message accepted in it could not be claimed then. */
  private lastPause: { since: number; until: number } | null;

  constructor(private readonly sql: SqlStorage) {
    this.throttledUntil = Number(getMeta(sql, "throttled_until") ?? 0);
    const raw = getMeta(sql, "paused");
    this.paused = raw ? (JSON.parse(raw) as PauseState | null) : null;
    const last = getMeta(sql, "last_pause");
    this.lastPause = last ? (JSON.parse(last) as { since: number; until: number }) : null;
  }

  /**
   * Whether the number was paused at some time in [from, to]: a message accepted then could not
   * be claimed within its first seconds, so a record its workspace does not know is no proof that
   * its send was never committed.
   */
  pausedDuring(from: number, to: number): boolean {
    if (this.paused && this.paused.since <= to) return true;
    return this.lastPause !== null && this.lastPause.since <= to && this.lastPause.until >= from;
  }

  /** No call starts before this. */
  until(): number {
    return Math.max(this.throttledUntil, this.paused?.nextProbeAt ?? 0);
  }

  pauseState(): PauseState | null {
    return this.paused;
  }

  throttle(until: number): void {
    if (until <= this.throttledUntil) return;
    this.throttledUntil = until;
    setMeta(this.sql, "throttled_until", String(until));
  }

  pause(error: NormalizedError, at: number): void {
    const probes = (this.paused?.probes ?? 0) + 1;
    this.paused = {
      error,
      since: this.paused?.since ?? at,
      probes,
      nextProbeAt: at + Math.min(MAX_PROBE_MS, FIRST_PROBE_MS * 2 ** (probes - 1)),
    };
    setMeta(this.sql, "paused", JSON.stringify(this.paused));
  }

  /** A paused number starts one probe call: no other call starts until its answer decides. */
  probing(at: number): void {
    if (!this.paused) return;
    this.paused = { ...this.paused, nextProbeAt: at + FIRST_PROBE_MS };
    setMeta(this.sql, "paused", JSON.stringify(this.paused));
  }

  /** A call went through (or the credentials changed): the number sends again. */
  resume(at: number = now()): boolean {
    if (!this.paused) return false;
    this.lastPause = { since: this.paused.since, until: at };
    this.paused = null;
    setMeta(this.sql, "paused", "null");
    setMeta(this.sql, "last_pause", JSON.stringify(this.lastPause));
    return true;
  }
}
