import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { utf8ToBytes } from "@noble/hashes/utils.js";

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
 * The jobId of an accepted send: a UUIDv7 whose timestamp is the acceptance time (ms) and whose
 * other 74 bits are random. Ids therefore sort by acceptance time: a day's messages are one range
 * of keys, lists read newest first in key order, and the id alone names the day (and the table)
 * a message lives in. A retry after a send whose commit failed gets a new id; the number drops the
 * first attempt's entry unsent (its claim finds no record: see workspace/work.ts).
 */
export const newJobId = (acceptedAt: number): string => uuidV7(acceptedAt, crypto.getRandomValues(new Uint8Array(10)));

/** A fresh random UUIDv7 for `ms`. */
export const newUuidV7 = newJobId;

/**
 * The jobId of the next send one workspace object accepts: `newJobId`, except that within the
 * millisecond of `previous` (its last one) it is `previous`'s random bits plus one. A number calls
 * each conversation in jobId order, so ids of the same millisecond must follow the order in which
 * the sends were accepted too (two random tails would sort at random).
 */
export function nextJobId(acceptedAt: number, previous: string | null): string {
  if (previous === null || uuidV7Time(previous) !== acceptedAt) return newJobId(acceptedAt);
  const hex = previous.replaceAll("-", "");
  // 74 random bits: 12 after the version digit, 62 after the variant's 2 bits.
  const randA = BigInt(parseInt(hex.slice(13, 16), 16));
  const randB = (BigInt(parseInt(hex.slice(16, 17), 16) & 0x3) << 60n) | BigInt(`0x${hex.slice(17)}`);
  const next = ((randA << 62n) | randB) + 1n;
  // All 74 bits set (2^-74 of all ids): the next millisecond's first id still sorts after it.
  if (next >> 74n !== 0n) return newJobId(acceptedAt + 1);
  const rest = new Uint8Array(10);
  const a = next >> 62n;
  const b = next & ((1n << 62n) - 1n);
  rest[0] = Number(a >> 8n);
  rest[1] = Number(a & 0xffn);
  for (let i = 0; i < 8; i++) rest[2 + i] = Number((b >> BigInt(8 * (7 - i))) & 0xffn);
  return uuidV7(acceptedAt, rest);
}

/**
 * Our id for an inbound message: a UUIDv7 whose timestamp is the operator's time of the message
 * (whole seconds, as the operator gives it) and whose other bits are a keyed hash of the
 * workspace, the number and the operator's message id. The operator redelivers a webhook for up
 * to 7 days with the same id and time: the redelivery derives the same id, so a record already
 * there (in the workspace object or in a history shard) is found by its key, with no index.
 */
export function inboundMessageId(
  secret: string,
  workspaceId: string,
  channelNumberId: string,
  upstreamMessageId: string,
  operatorAtMs: number,
): string {
  const mac = hmac(
    sha256,
    utf8ToBytes(secret),
    utf8ToBytes(`inbound\n${workspaceId}\n${channelNumberId}\n${upstreamMessageId}`),
  );
  return uuidV7(operatorAtMs, mac);
}

/** The millisecond timestamp of a UUIDv7, or null for other versions (ids issued before v7 ids were introduced). */
export function uuidV7Time(id: string): number | null {
  if (!UUID_PATTERN.test(id) || id[14] !== "7") return null;
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** The smallest UUIDv7 of `ms` (a key range bound: every id of that millisecond or later sorts at or after it). */
export const uuidV7Floor = (ms: number): string => {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
};

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
