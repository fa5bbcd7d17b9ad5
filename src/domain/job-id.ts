import { hmacSha256 } from "../lib/crypto";

export const DAY_MS = 24 * 60 * 60 * 1000;

/** The UTC day (days since the epoch) that contains `ms`. */
export const utcDay = (ms: number): number => Math.floor(ms / DAY_MS);

/** Formats 16 bytes as an RFC 9562 UUID of the given version. */
function formatUuid(b: Uint8Array, version: 7 | 8): string {
  b[6] = (b[6]! & 0x0f) | (version << 4);
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A UUIDv7 whose 48-bit timestamp is `ms` and whose other bits are `rest` (at least 10 bytes). */
function uuidV7(ms: number, rest: Uint8Array): string {
  const b = new Uint8Array(16);
  let t = ms;
  for (let i = 5; i >= 0; i--) {
    b[i] = t % 256;
    t = Math.floor(t / 256);
  }
  b.set(rest.subarray(0, 10), 6);
  return formatUuid(b, 7);
}

/**
 * The jobId of a send: a keyed hash of (workspace, UTC day of acceptance,
 * payload fingerprint, Idempotency-Key), shaped as a UUIDv7 whose timestamp is
 * the start of that day.
 *
 * - Every retry of one send (same key, same payload, same day) addresses the
 *   same outbox entry, so a retry after a failure between the hand-off and the
 *   commit converges on one message.
 * - The payload is part of the id: a retry with another payload (which the
 *   workspace accepts while the key is unbound, after a failed commit) gets
 *   another jobId and can never revive, or be confused with, the first
 *   attempt's entry; and since the payload names the number, one jobId belongs
 *   to one number only.
 * - The day is part of the id: a key can be bound at most once in 24 hours, so
 *   it is bound at most once per UTC day, and reusing a key after its 24 hours
 *   never lands on an id already taken. A retry that crosses midnight gets a new
 *   id; the first attempt's entry, never committed, is never sent.
 * - The timestamp tells which day a message belongs to, without a lookup.
 */
export async function deriveJobId(
  secret: string,
  workspaceId: string,
  key: string,
  fingerprint: string,
  acceptedAt: number,
): Promise<string> {
  const day = utcDay(acceptedAt);
  const mac = new Uint8Array(await hmacSha256(secret, `v2\n${workspaceId}\n${day}\n${fingerprint}\n${key}`));
  return uuidV7(day * DAY_MS, mac);
}

/** A fresh random UUIDv7 for `ms` (inbound messages). */
export const newUuidV7 = (ms: number): string => uuidV7(ms, crypto.getRandomValues(new Uint8Array(10)));

/** The millisecond timestamp of a UUIDv7, or null for other versions (ids issued before v7 ids were introduced). */
export function uuidV7Time(id: string): number | null {
  if (!UUID_PATTERN.test(id) || id[14] !== "7") return null;
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * An id from a path or a body in the form we store ids (lower case), or null when it is not a
 * UUID: such an id names nothing, so it is answered without a lookup.
 */
export const storedUuid = (id: string): string | null => (UUID_PATTERN.test(id) ? id.toLowerCase() : null);

/**
 * `lookup` of `id` in its stored form; null, without a lookup, when `id` is not a UUID.
 * `asGiven` skips the lower-casing where ids have always been matched as given (admin paths and
 * GET /channel-numbers/{id}: an upper-case id is not found there); kept, so that no answer changes.
 */
export async function findByUuid<T>(
  id: string,
  lookup: (storedId: string) => Promise<T>,
  { asGiven = false } = {},
): Promise<T | null> {
  if (asGiven) return UUID_PATTERN.test(id) ? lookup(id) : null;
  const stored = storedUuid(id);
  return stored === null ? null : lookup(stored);
}
