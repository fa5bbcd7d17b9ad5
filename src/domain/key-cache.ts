import { now } from "../lib/clock";
import type { Principal } from "../context";

// Per-isolate cache of key hash → principal, so that the steady state of the API
// never reads D1 to authenticate. The TTL is what bounds how long a key revoked
// through another isolate keeps working ("within seconds").
export const KEY_CACHE_TTL_MS = 5_000;
/** Each map holds at most this many entries; the least recently used one leaves first. */
export const KEY_CACHE_MAX_ENTRIES = 10_000;

interface Entry<T> {
  value: T;
  expiresAt: number;
}

/** A Map kept in recency order (re-inserted on read), trimmed from its oldest end. */
export class LruTtl<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(
    private readonly ttlMs = KEY_CACHE_TTL_MS,
    private readonly maxEntries = KEY_CACHE_MAX_ENTRIES,
  ) {}

  get(key: string): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (entry.expiresAt <= now()) return undefined;
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: T): void {
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: now() + this.ttlMs });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  delete(key: string): void {
    this.entries.delete(key);
  }
}

// Known keys and unknown ones live apart: a flood of unknown keys can only push
// out other unknown keys, never the keys of paying customers.
const known = new LruTtl<Principal>();
const unknown = new LruTtl<true>();

/** The cached principal, null for a cached unknown key, undefined when not cached. */
export function cachedPrincipal(keyHash: string): Principal | null | undefined {
  const principal = known.get(keyHash);
  if (principal) return principal;
  return unknown.get(keyHash) ? null : undefined;
}

export function rememberPrincipal(keyHash: string, principal: Principal | null): void {
  if (principal) {
    unknown.delete(keyHash);
    known.set(keyHash, principal);
  } else {
    known.delete(keyHash);
    unknown.set(keyHash, true);
  }
}

export function forgetKey(keyHash: string): void {
  known.delete(keyHash);
  unknown.delete(keyHash);
}
