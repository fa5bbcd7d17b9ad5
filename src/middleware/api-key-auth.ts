import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../context";
import { findActiveKeyByHash } from "../db/api-keys";
import { hashApiKey, isWellFormedKey } from "../domain/api-keys";
import { cachedPrincipal, rememberPrincipal } from "../domain/key-cache";
import { noteKeyUsed } from "../domain/api-key-last-used";
import { ApiError } from "../lib/errors";
import { bucket, scopes } from "../domain/abuse-limits";
import { timingSafeEqualStrings } from "../lib/crypto";
import { bearerToken, unauthorized } from "../lib/bearer";
import { clientAddress } from "../lib/client-address";
import { rateLimited, refundToken, takeToken, type ThrottleDecision } from "../lib/throttle";
import { now } from "../lib/clock";
import { log } from "../lib/log";

const refused = (sent: boolean) =>
  unauthorized("Missing or invalid API key. Send Authorization: Bearer <API key>.", "api", sent);

// Addresses the throttle refused, with the refusal: repeated attempts from them
// are answered here until Retry-After, without another call to the throttle
// object. Bounded; the oldest entry leaves first.
const blocked = new Map<string, { until: number; resetAt: number; limit: number }>();
const MAX_BLOCKED = 10_000;
const TOO_MANY = "too many failed authentications from this address";

function remember(address: string, d: ThrottleDecision): void {
  blocked.delete(address);
  blocked.set(address, { until: now() + d.retryAfterMs, resetAt: now() + d.resetMs, limit: d.limit });
  if (blocked.size > MAX_BLOCKED) blocked.delete(blocked.keys().next().value ?? address);
}

function stillBlocked(address: string): ThrottleDecision | null {
  const b = blocked.get(address);
  if (!b) return null;
  const at = now();
  if (b.until <= at) {
    blocked.delete(address);
    return null;
  }
  return { allowed: false, bucket: "authFailures", limit: b.limit, remaining: 0, resetMs: b.resetAt - at, retryAfterMs: b.until - at };
}

/**
 * `Authorization: Bearer <prefix>live_…` on every /api/v1 endpoint. A key found
 * in the isolate's cache costs nothing more. Otherwise the lookup first spends
 * a token of the caller's failed-authentication budget
 * (ABUSE_LIMITS.authFailures), and only an admitted request reads D1; a key
 * that turns out valid gets its token back. Spending before the lookup (not
 * checking, looking up, then spending) is what holds the budget under
 * concurrency: requests sent at once cannot all pass a check made before any
 * of them spent.
 */
export const apiKeyAuth = createMiddleware<AppEnv>(async (c, next) => {
  const header = c.req.header("authorization");
  const key = bearerToken(header);
  if (!key || !isWellFormedKey(c.env, key)) throw refused(header !== undefined);

  const keyHash = await hashApiKey(key);
  let principal = cachedPrincipal(keyHash);
  if (principal === undefined) {
    const address = clientAddress(c.req.raw);
    const scope = scopes.clientAddress(address);
    const failures = [bucket("authFailures")];
    const memo = stillBlocked(address);
    if (memo) throw rateLimited(memo, TOO_MANY);
    const budget = await takeToken(c.env, scope, failures);
    if (!budget.allowed) {
      remember(address, budget);
      throw rateLimited(budget, TOO_MANY);
    }
    const row = await findActiveKeyByHash(c.env.DB, keyHash);
    // The lookup is by hash; the explicit comparison keeps the final decision constant-time.
    principal =
      row && (await timingSafeEqualStrings(row.key_hash, keyHash))
        ? { workspaceId: row.workspace_id, keyId: row.id }
        : null;
    rememberPrincipal(keyHash, principal);
    // A valid key was no failure: its token goes back, after the response.
    if (principal) {
      c.executionCtx.waitUntil(
        refundToken(c.env, scope, failures).catch((err: unknown) =>
          log("warn", "failed-authentication token not refunded", { requestId: c.get("requestId"), detail: err instanceof Error ? err.message : String(err) }),
        ),
      );
    }
  }
  if (!principal) throw refused(true);
  c.set("principal", principal);
  noteKeyUsed(c.env, c.executionCtx, principal.keyId);
  await next();
});
