import { createMiddleware } from "hono/factory";
import type { Context } from "hono";
import type { AppEnv, Principal } from "../context";
import { findActiveKeyByHash } from "../features/api-keys/store";
import { hashApiKey, isWellFormedKey } from "../domain/api-keys";
import { cachedPrincipal, knownBefore, rememberPrincipal } from "../domain/key-cache";
import { noteKeyUsed } from "../features/api-keys/record-use";
import { bucket, scopes } from "../domain/abuse-limits";
import { timingSafeEqualStrings } from "../lib/crypto";
import { bearerToken, unauthorized } from "../lib/bearer";
import { clientAddress } from "../lib/client-address";
import { rateLimited, refundToken, takeToken, type ThrottleDecision } from "../lib/throttle-client";
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
  return {
    allowed: false,
    bucket: "authFailures",
    limit: b.limit,
    remaining: 0,
    resetMs: b.resetAt - at,
    retryAfterMs: b.until - at,
  };
}

type Lookup = { principal: Principal | null } | { refused: ThrottleDecision };

// Lookups under way in this isolate, by client address and key hash: requests
// that arrive together with the same key share one lookup (one token spent and
// refunded, one D1 read) instead of each spending from the address's budget,
// which a burst of a valid key's first requests would otherwise exhaust.
const inFlight = new Map<string, Promise<Lookup>>();

/**
 * Spends a token of the address's budget, then reads D1; a valid key's token goes back after the
 * response. A key this isolate found valid before (its cache entry expired) reads D1 at once.
 */
async function lookUp(c: Context<AppEnv>, address: string, keyHash: string): Promise<Lookup> {
  const scope = scopes.clientAddress(address);
  const failures = [bucket("authFailures")];
  const refresh = knownBefore(keyHash);
  if (!refresh) {
    const budget = await takeToken(c.env, scope, failures);
    if (!budget.allowed) {
      remember(address, budget);
      return { refused: budget };
    }
  }
  const row = await findActiveKeyByHash(c.env.DB, keyHash);
  // The lookup is by hash; the explicit comparison keeps the final decision constant-time.
  const principal =
    row && (await timingSafeEqualStrings(row.key_hash, keyHash))
      ? { workspaceId: row.workspace_id, keyId: row.id, role: row.role }
      : null;
  rememberPrincipal(keyHash, principal);
  if (principal && !refresh) {
    c.executionCtx.waitUntil(
      refundToken(c.env, scope, failures).catch((err: unknown) =>
        log("warn", "failed-authentication token not refunded", {
          requestId: c.get("requestId"),
          detail: err instanceof Error ? err.message : String(err),
        }),
      ),
    );
  }
  return { principal };
}

/**
 * `Authorization: Bearer <prefix>live_…` on every /api/v1 endpoint. A key found
 * in the isolate's cache costs nothing more, and one whose entry expired is
 * read again from D1 without a token (it was valid: no guess). Otherwise the
 * lookup first spends a token of the caller's failed-authentication budget
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
    const memo = knownBefore(keyHash) ? null : stillBlocked(address);
    if (memo) throw rateLimited(memo, TOO_MANY);
    const id = `${address} ${keyHash}`;
    let pending = inFlight.get(id);
    if (!pending) {
      pending = lookUp(c, address, keyHash).finally(() => inFlight.delete(id));
      inFlight.set(id, pending);
    }
    const outcome = await pending;
    if ("refused" in outcome) throw rateLimited(outcome.refused, TOO_MANY);
    principal = outcome.principal;
  }
  if (!principal) throw refused(true);
  c.set("principal", principal);
  noteKeyUsed(c.env, c.executionCtx, principal.keyId);
  await next();
});
