import type { SendResult } from "../../operator/adapter";

/**
 * Calls of one number waiting on the operator at once. Cloudflare lets one invocation wait on at
 * most 6 responses (headers) and queues a seventh request until one arrives; the drain never makes
 * one wait there. With an operator answering in L seconds a number drains at most 6/L calls/s.
 */
export const MAX_CALLS_IN_FLIGHT = 6;

/**
 * The number's pace at the operator: no window of PACE_WINDOW_MS ever holds
 * more than PACE_CALLS call starts. The window is the number's 1 s plus a 10 ms
 * guard, so that jitter between our clock and the operator's cannot make one of
 * its seconds see three calls; the sustained pace is 2 calls per 1.01 s.
 *
 * Calls are also spaced by PACE_SPACING_MS (half the window) instead of leaving
 * in pairs: a call started right behind another can hold the first one's request
 * until its own commit (measured with `npm run soak`: pairs reached the operator
 * in the same millisecond, and the next pair less than a second after the first
 * one's real departure). Spaced, the sustained pace is the same.
 */
export const PACE_CALLS = 2;
export const PACE_WINDOW_MS = 1_010;
export const PACE_SPACING_MS = PACE_WINDOW_MS / PACE_CALLS;

/** When a call may start at the earliest, given the start times of the latest calls (ascending). */
export function nextCallAt(recentCalls: readonly number[], at: number): number {
  const last = recentCalls[recentCalls.length - 1];
  const spaced = last === undefined ? at : Math.max(at, last + PACE_SPACING_MS);
  if (recentCalls.length < PACE_CALLS) return spaced;
  return Math.max(spaced, recentCalls[recentCalls.length - PACE_CALLS]! + PACE_WINDOW_MS);
}

/**
 * Retries of calls that certainly did not reach the operator (see
 * operator/error-codes.ts for the classification). Delays grow with each
 * attempt, honour the operator's Retry-After, and are capped; the whole run is
 * bounded by attempts and by time, after which the message fails with
 * `upstream_retries_exhausted`. A message waiting on a retry never holds up
 * messages to other recipients.
 */
export const RETRY_POLICY = {
  maxAttempts: 6,
  delaysMs: [1_000, 5_000, 15_000, 30_000, 60_000],
  maxDelayMs: 15 * 60_000,
  budgetMs: 60 * 60_000,
} as const;

export type RetryDecision = { retryAt: number } | { exhausted: true };

export function retryDecision(
  attempts: number,
  firstAttemptAt: number,
  result: Extract<SendResult, { kind: "retryable" }>,
  at: number,
): RetryDecision {
  if (attempts >= (result.maxAttempts ?? RETRY_POLICY.maxAttempts)) return { exhausted: true };
  const scheduled = RETRY_POLICY.delaysMs[attempts - 1] ?? RETRY_POLICY.delaysMs[RETRY_POLICY.delaysMs.length - 1]!;
  const delay = Math.min(
    RETRY_POLICY.maxDelayMs,
    Math.max(result.retryAfterMs ?? 0, result.minDelayMs ?? 0, scheduled),
  );
  const retryAt = at + delay;
  if (retryAt - firstAttemptAt > RETRY_POLICY.budgetMs) return { exhausted: true };
  return { retryAt };
}

/**
 * An entry the workspace does not know yet is asked about again shortly (the
 * workspace records a message microseconds after its hand-off); an older one
 * belongs to a send whose commit failed: it steps out of line as an orphan, is
 * revived if the client retries the very same send (same jobId), and is
 * dropped after ORPHAN_GRACE_MS otherwise, never sent.
 */
export const UNCONFIRMED_WAIT_MS = 5_000;
export const UNCONFIRMED_RECHECK_MS = 100;
export const ORPHAN_GRACE_MS = 60_000;

/**
 * A message whose call got no usable answer may have reached the operator; it
 * is never sent again. The operator's status webhook settles it (the operator
 * retries webhooks for up to 7 days); without one, it fails with
 * `upstream_outcome_unknown` when that window ends.
 */
export const UNKNOWN_OUTCOME_WINDOW_MS = 7 * 24 * 60 * 60_000;

/**
 * A message that has not left this long after its acceptance (its number paused, or held back by
 * the operator's limits: a number-wide throttle, one user's pair rate) fails with `held_too_long`
 * instead of waiting for ever. 24 hours: well inside the hot window (48 h) and the shortest history
 * window (7 days), so its record is always there to fail; and what the operator itself allows for a
 * free-form text (its customer-service window is 24 h after the user's last message), past which a
 * late send would mostly be refused anyway.
 */
export const HELD_BOUND_MS = 24 * 60 * 60_000;

/** Finished entries are kept this long (operator statuses match them by the operator's id), then purged. */
export const KEEP_FINISHED_MS = 8 * 24 * 60 * 60_000;
