import type { NormalizedError } from "../../upstream/adapter";
import { getMeta, setMeta } from "../shared/meta";
import type { NumberStorage } from "./number-storage";

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

  pauseState(): PauseState | null {
    return this.paused;
  }

  throttle(until: number): void {
    if (until <= this.throttledUntil) return;
    this.throttledUntil = until;
    setMeta(this.storage.ensure(), "throttled_until", String(until));
  }

  pause(error: NormalizedError, at: number): void {
    const probes = (this.paused?.probes ?? 0) + 1;
    this.paused = {
      error,
      since: this.paused?.since ?? at,
      probes,
      nextProbeAt: at + Math.min(MAX_PROBE_MS, FIRST_PROBE_MS * 2 ** (probes - 1)),
    };
    setMeta(this.storage.ensure(), "paused", JSON.stringify(this.paused));
  }

  /** A paused number starts one probe call: no other call starts until its answer decides. */
  probing(at: number): void {
    if (!this.paused) return;
    this.paused = { ...this.paused, nextProbeAt: at + FIRST_PROBE_MS };
    setMeta(this.storage.ensure(), "paused", JSON.stringify(this.paused));
  }

  /** A call went through (or the credentials changed): the number sends again. */
  resume(): boolean {
    if (!this.paused) return false;
    this.paused = null;
    setMeta(this.storage.ensure(), "paused", "null");
    return true;
  }
}
