import { now } from "../lib/clock";
import type { Principal } from "../context";

// Per-isolate cache of key hash → principal, so that the steady state of the API
// never reads D1 to authenticate. The TTL is what bounds how long a key revoked
// through another isolate keeps working ("within seconds").
export const KEY_CACHE_TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

interface Entry {
  principal: Principal | null;
  expiresAt: number;
}

const cache = new Map<string, Entry>();

export function cachedPrincipal(keyHash: string): Principal | null | undefined {
  const entry = cache.get(keyHash);
  if (!entry) return undefined;
  if (entry.expiresAt <= now()) {
    cache.delete(keyHash);
    return undefined;
  }
  return entry.principal;
}

export function rememberPrincipal(keyHash: string, principal: Principal | null): void {
  if (cache.size >= MAX_ENTRIES) cache.clear();
  cache.set(keyHash, { principal, expiresAt: now() + KEY_CACHE_TTL_MS });
}

export function forgetKey(keyHash: string): void {
  cache.delete(keyHash);
}
