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

  /** The value while it is fresh; an expired one stays (for `expired`) until pushed out or replaced. */
  get(key: string): T | undefined {
    const entry = this.entries.get(key);
    if (!entry || entry.expiresAt <= now()) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Whether the key is held but past its TTL. */
  expired(key: string): boolean {
    const entry = this.entries.get(key);
    return entry !== undefined && entry.expiresAt <= now();
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

/**
 * Whether this isolate found the key valid before and its entry only expired: its refresh is no
 * guess (whoever sends it held a valid key), so it spends nothing of the address's failed-
 * authentication budget. A key found revoked leaves this list (`rememberPrincipal(…, null)`).
 */
export function knownBefore(keyHash: string): boolean {
  return known.expired(keyHash);
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
