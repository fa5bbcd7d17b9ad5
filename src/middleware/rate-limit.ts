import { createMiddleware } from "hono/factory";
import type { Context } from "hono";
import type { AppEnv } from "../context";
import { perKeyBucket, scopes } from "../domain/abuse-limits";
import {
  rateLimitHeaders,
  rateLimited,
  takeToken,
  type BucketSpec,
  type ThrottleDecision,
} from "../lib/throttle-client";
import { isRateLimited, type RateLimited } from "../domain/limit-check";

/**
 * Takes a token from the buckets of `scope`; on success the response carries
 * the RateLimit-* headers of the bucket closest to refusing, else this throws
 * 429 `rate_limit_exceeded` with Retry-After.
 */
export async function enforceLimit(
  c: Context<AppEnv>,
  scope: string,
  buckets: BucketSpec[],
  what: string,
): Promise<void> {
  const decision = await takeToken(c.env, scope, buckets);
  if (!decision.allowed) throw rateLimited(decision, what);
  for (const [name, value] of Object.entries(rateLimitHeaders(decision))) c.header(name, value);
}

/** The API's answer to a domain operation refused by a limit: 429 `rate_limit_exceeded` with Retry-After. */
export function throwIfLimited<T>(outcome: T): asserts outcome is Exclude<T, RateLimited> {
  if (isRateLimited(outcome)) throw rateLimited(outcome.decision, outcome.what);
}

/** The RateLimit-* headers of an admitted request. */
export function limitHeaders(c: Context<AppEnv>, decision: ThrottleDecision): void {
  for (const [name, value] of Object.entries(rateLimitHeaders(decision))) c.header(name, value);
}

/** The per-key limits of ABUSE_LIMITS, after authentication (sends, webhook configuration and webhook triggers are limited by their domain operations). */
export const perKeyLimits = createMiddleware<AppEnv>(async (c, next) => {
  const spec = perKeyBucket(c.req.method, c.req.path.replace(/^\/api\/v[12]/, ""));
  if (spec)
    await enforceLimit(
      c,
      scopes.apiKey(c.get("principal").keyId),
      [spec],
      `${spec.limit} per ${spec.periodSeconds} s per API key for this kind of request`,
    );
  await next();
});
