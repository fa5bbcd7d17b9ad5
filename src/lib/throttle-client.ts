import type { Limit } from "./gcra";
import { ApiError } from "./errors";

/** One bucket of a scope: its name (unique within the scope) and its limit. */
export interface BucketSpec extends Limit {
  name: string;
}

/** What the throttle object answers for a scope's buckets. */
export interface ThrottleDecision {
  allowed: boolean;
  /** The bucket that refused, or the one closest to refusing. */
  bucket: string;
  limit: number;
  remaining: number;
  resetMs: number;
  retryAfterMs: number;
}

/**
 * General-purpose exact rate limiting: a scope (any string: "key:<id>",
 * "ip:<address>", "signin-email:<hash>" …) names one Durable Object; each
 * bucket in it is a name, a limit and a period. Pass hashed values, not raw
 * personal data (emails), in scope names.
 */
const stub = (env: Pick<Env, "THROTTLE">, scope: string) => env.THROTTLE.get(env.THROTTLE.idFromName(scope));

/** Takes one token from every bucket of the scope, or none if any bucket refuses. */
export function takeToken(
  env: Pick<Env, "THROTTLE">,
  scope: string,
  buckets: BucketSpec[],
  cost = 1,
): Promise<ThrottleDecision> {
  return stub(env, scope).take(buckets, cost);
}

/**
 * Gives one token back to every bucket of the scope (a request that spent it
 * turned out not to count). Never fills a bucket beyond full: see `decide`.
 */
export async function refundToken(env: Pick<Env, "THROTTLE">, scope: string, buckets: BucketSpec[]): Promise<void> {
  await stub(env, scope).take(buckets, -1);
}

/** Whether `takeToken` would admit a request now, without taking anything. */
export function peekToken(
  env: Pick<Env, "THROTTLE">,
  scope: string,
  buckets: BucketSpec[],
  cost = 1,
): Promise<ThrottleDecision> {
  return stub(env, scope).peek(buckets, cost);
}

/** `Retry-After` and `RateLimit-Reset` are whole seconds; Retry-After is at least 1. */
const seconds = (ms: number): number => Math.ceil(ms / 1000);

/** The same rate headers `POST /messages` sends. */
export function rateLimitHeaders(d: ThrottleDecision): Record<string, string> {
  return {
    "RateLimit-Limit": String(d.limit),
    "RateLimit-Remaining": String(d.remaining),
    "RateLimit-Reset": String(seconds(d.resetMs)),
  };
}

/** 429 `rate_limit_exceeded` with Retry-After and the rate headers. */
export function rateLimited(d: ThrottleDecision, what: string): ApiError {
  const retryAfter = Math.max(1, seconds(d.retryAfterMs));
  return new ApiError("rate_limit_exceeded", `Rate limit exceeded (${what}). Retry after ${retryAfter} second(s).`, {
    headers: { "Retry-After": String(retryAfter), ...rateLimitHeaders(d) },
  });
}
