import { argon2idAsync } from "@noble/hashes/argon2.js";
import { fromBase64, randomBytes, toBase64 } from "./crypto";

/**
 * Password hashing: argon2id at the OWASP Password Storage Cheat Sheet minimum
 * (m = 19 MiB, t = 2, p = 1), pure JavaScript (@noble/hashes), so no WASM module
 * is needed. Hashes are PHC strings that carry their parameters
 * (`$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`, the reference
 * implementation's format), so the parameters can be raised later: a stored
 * hash with weaker ones still verifies and `needsRehash` says to replace it.
 *
 * Cost: one hash is about 200 ms of CPU (see `npm run bench`), above the
 * Workers Free plan's 10 ms CPU limit per request; the dashboard's sign-in and
 * set-password need Workers Paid (30 s default).
 */
export interface Argon2Params {
  /** Memory in KiB. */
  m: number;
  t: number;
  p: number;
}

export const PASSWORD_PARAMS: Argon2Params = { m: 19_456, t: 2, p: 1 };

const SALT_BYTES = 16;
const HASH_BYTES = 32;
const VERSION = 0x13;
const PHC = /^\$argon2id\$v=19\$m=(\d{1,7}),t=(\d{1,3}),p=(\d{1,2})\$([A-Za-z0-9+/]{16,88})\$([A-Za-z0-9+/]{16,88})$/;
// Parameters a stored hash may ask for: a corrupted row must not make us allocate gigabytes.
const MAX_M = 262_144;
const MAX_T = 10;

/**
 * The key derivation, as an object so that tests can observe how many times it
 * runs and with what cost (the sign-in test proves an unknown email costs one
 * derivation too). Never replaced in tests, only watched.
 */
export const passwordKdf = {
  derive(password: string, salt: Uint8Array, params: Argon2Params): Promise<Uint8Array> {
    return argon2idAsync(password, salt, { ...params, version: VERSION, dkLen: HASH_BYTES });
  },
};

// PHC strings use standard base64 without padding.
const b64 = (bytes: Uint8Array): string => toBase64(bytes).replace(/=+$/, "");
const unb64 = (text: string): Uint8Array => fromBase64(text + "=".repeat((4 - (text.length % 4)) % 4));

export async function hashPassword(password: string, params: Argon2Params = PASSWORD_PARAMS): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await passwordKdf.derive(password, salt, params);
  return `$argon2id$v=19$m=${params.m},t=${params.t},p=${params.p}$${b64(salt)}$${b64(hash)}`;
}

interface Parsed {
  params: Argon2Params;
  salt: Uint8Array;
  hash: Uint8Array;
}

function parse(phc: string): Parsed | null {
  const match = PHC.exec(phc);
  if (!match) return null;
  const params = { m: Number(match[1]), t: Number(match[2]), p: Number(match[3]) };
  if (params.m < 8 * params.p || params.m > MAX_M || params.t < 1 || params.t > MAX_T || params.p < 1) return null;
  return { params, salt: unb64(match[4]!), hash: unb64(match[5]!) };
}

/**
 * A fixed hash of a random password, verified when there is no real one (an
 * unknown email, a member who has not set a password yet) so that those
 * attempts cost the same derivation as a real one.
 */
export const DUMMY_PASSWORD_HASH =
  "$argon2id$v=19$m=19456,t=2,p=1$eDdGVFBkZWJYd3BDUjRWMQ$FeYsHKZJq53AnDi7Z0c6Vp7neMUjQqcHY7nFbWsK0x0";

/** True when `password` matches the PHC string; false for a wrong password or a malformed hash. */
export async function verifyPassword(password: string, phc: string | null): Promise<boolean> {
  const parsed = parse(phc ?? DUMMY_PASSWORD_HASH) ?? parse(DUMMY_PASSWORD_HASH)!;
  const actual = await passwordKdf.derive(password, parsed.salt, parsed.params);
  const equal = actual.length === parsed.hash.length && crypto.subtle.timingSafeEqual(actual, parsed.hash);
  return phc !== null && equal;
}

/** True when the stored hash is weaker than today's parameters (replace it at the next sign-in). */
export function needsRehash(phc: string): boolean {
  const parsed = parse(phc);
  return (
    !parsed ||
    parsed.params.m < PASSWORD_PARAMS.m ||
    parsed.params.t < PASSWORD_PARAMS.t ||
    parsed.params.p !== PASSWORD_PARAMS.p
  );
}
