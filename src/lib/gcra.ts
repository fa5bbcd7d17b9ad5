/**
 * Generic cell rate algorithm (a token bucket kept as one number): `limit`
 * requests per `periodMs`, with bursts of up to `limit`. The whole state of a
 * bucket is its theoretical arrival time (TAT): the moment the bucket would be
 * full again. Exact: admission, remaining, reset and retry-after follow from
 * the TAT and the clock, with no sampling or approximation.
 */
export interface Limit {
  /** Requests admitted in a burst, and per period on average. */
  limit: number;
  periodSeconds: number;
}

export interface BucketState {
  /** Theoretical arrival time in ms (epoch); at or before `now` means a full bucket. */
  tat: number;
}

export interface BucketDecision {
  allowed: boolean;
  limit: number;
  /** Requests that would still be admitted right now, after this one. */
  remaining: number;
  /** Milliseconds until the bucket is entirely full again. */
  resetMs: number;
  /** Milliseconds until one more request would be admitted (0 when admitted now). */
  retryAfterMs: number;
  /** The TAT to store if the request is admitted (unchanged when refused). */
  nextTat: number;
}

/**
 * Decides one request of `cost` tokens against a bucket. A stored TAT further
 * ahead than one period cannot come from this algorithm (the clock went back,
 * for example a machine change): it is treated as a full bucket rather than
 * locking the caller out for the size of the jump. A negative `cost` gives
 * tokens back: the TAT moves earlier, and a TAT in the past is simply a full
 * bucket, so a refund never grants more than the limit.
 */
export function decide(l: Limit, state: BucketState | null, now: number, cost = 1): BucketDecision {
  const periodMs = l.periodSeconds * 1000;
  const interval = periodMs / l.limit;
  let tat = state?.tat ?? now;
  if (tat > now + periodMs) tat = now;
  const base = Math.max(tat, now);
  const candidate = base + interval * cost;
  const allowed = candidate - now <= periodMs + 1e-6;
  const effective = allowed ? candidate : base;
  const remaining = Math.max(0, Math.floor((periodMs - (effective - now)) / interval + 1e-9));
  return {
    allowed,
    limit: l.limit,
    remaining,
    resetMs: Math.max(0, effective - now),
    retryAfterMs: allowed ? 0 : Math.max(0, candidate - now - periodMs),
    nextTat: effective,
  };
}
