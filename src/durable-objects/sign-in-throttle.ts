import { DurableObject } from "cloudflare:workers";
import { now } from "../lib/clock";

/**
 * A sliding-window attempt counter, one object per key (`idFromName(key)`), for
 * throttling dashboard sign-in per email and per client IP. Self-contained on
 * purpose: `hit(key, limit, periodMs)` is the whole interface, so that it can
 * later be folded into a shared abuse-limit mechanism.
 *
 * Storage: at most `limit` timestamps per key (8 bytes each), deleted by an
 * alarm once the last of them is older than the period, so idle keys cost
 * nothing.
 */
export interface ThrottleResult {
  allowed: boolean;
  /** 0 when allowed; otherwise how long until one more attempt is allowed. */
  retryAfterMs: number;
}

const HITS = "hits";

export class SignInThrottleDurableObject extends DurableObject<Env> {
  /** Counts one attempt if fewer than `limit` happened in the last `periodMs`; refused attempts are not counted. */
  async hit(limit: number, periodMs: number): Promise<ThrottleResult> {
    const at = now();
    const hits = ((await this.ctx.storage.get<number[]>(HITS)) ?? []).filter((t) => t > at - periodMs);
    if (hits.length >= limit) {
      // Sorted oldest first: one more attempt is allowed when the oldest counted one leaves the window.
      const oldest = hits[hits.length - limit] ?? at;
      return { allowed: false, retryAfterMs: Math.max(1, oldest + periodMs - at) };
    }
    hits.push(at);
    await this.ctx.storage.put(HITS, hits);
    await this.ctx.storage.setAlarm(at + periodMs);
    return { allowed: true, retryAfterMs: 0 };
  }

  /** Forgets every counted attempt (a successful sign-in clears its email's count). */
  async reset(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  override async alarm(): Promise<void> {
    await this.ctx.storage.deleteAll();
  }
}

const stub = (env: Env, key: string) => env.SIGN_IN_THROTTLE.get(env.SIGN_IN_THROTTLE.idFromName(key));

/** Counts an attempt against `key`: allowed while fewer than `limit` were counted in the last `periodMs`. */
export const hit = (env: Env, key: string, limit: number, periodMs: number): Promise<ThrottleResult> =>
  stub(env, key).hit(limit, periodMs);

export const resetThrottle = (env: Env, key: string): Promise<void> => stub(env, key).reset();
