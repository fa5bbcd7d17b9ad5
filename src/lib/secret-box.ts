import { fromBase64, hmacSha256, randomBytes, toBase64, toHex } from "./crypto";

/**
 * Secrets at rest (operator tokens, webhook signing secrets), AES-256-GCM.
 *
 * `v2.<keyId>.<iv>.<ciphertext>`: the AES key is derived with HKDF-SHA256 from
 * the master key for one purpose, and the additional authenticated data binds
 * the value to its version, key id, purpose and row id, so a ciphertext copied
 * into another row or column does not open. `keyId` names the master key (a
 * fingerprint of it), so keys can rotate: CREDENTIALS_ENCRYPTION_KEY seals,
 * and it or any key of CREDENTIALS_ENCRYPTION_KEYS_OLD (comma-separated) opens.
 * `POST /admin/v1/secrets/reseal` rewrites old values under the current key.
 *
 * `v1.<iv>.<ciphertext>` (before rotation existed: the master key itself, no
 * additional data) is still opened with any key of the ring, and re-sealed.
 */
// A purpose is bound into every sealed value (its additional data): renaming one would make stored values unreadable.
export type SealPurpose = "upstream-credentials" | "webhook-secret";

/** The bindings the key ring reads; CREDENTIALS_ENCRYPTION_KEYS_OLD is an optional secret. */
export interface KeyRingEnv {
  CREDENTIALS_ENCRYPTION_KEY: string;
  CREDENTIALS_ENCRYPTION_KEYS_OLD?: string;
}

const encoder = new TextEncoder();
const HKDF_SALT = encoder.encode("messaging-gateway/secret-box/v2");

interface MasterKey {
  id: string;
  raw: Uint8Array;
}

function decodeMaster(base64Key: string, name: string): Uint8Array {
  let raw: Uint8Array;
  try {
    raw = fromBase64(base64Key.trim());
  } catch {
    throw new Error(`${name} is not base64`);
  }
  if (raw.length !== 32) throw new Error(`${name} must be 32 bytes, base64-encoded`);
  return raw;
}

/** A key's public name: the first 8 bytes of HMAC(key, "key-id"), in hex. Reveals nothing of the key. */
async function keyIdOf(raw: Uint8Array): Promise<string> {
  return toHex(new Uint8Array(await hmacSha256(raw, "messaging-gateway/secret-box/key-id")).subarray(0, 8));
}

const rings = new Map<string, Promise<{ current: MasterKey; all: MasterKey[] }>>();

/** The current key first, then the old ones; computed once per configuration. */
export function keyRing(env: KeyRingEnv): Promise<{ current: MasterKey; all: MasterKey[] }> {
  const config = `${env.CREDENTIALS_ENCRYPTION_KEY}|${env.CREDENTIALS_ENCRYPTION_KEYS_OLD ?? ""}`;
  let ring = rings.get(config);
  if (!ring) {
    ring = (async () => {
      const old = (env.CREDENTIALS_ENCRYPTION_KEYS_OLD ?? "")
        .split(",")
        .map((k) => k.trim())
        .filter(Boolean);
      const all = await Promise.all(
        [env.CREDENTIALS_ENCRYPTION_KEY, ...old].map(async (k, i) => {
          const raw = decodeMaster(
            k,
            i === 0 ? "CREDENTIALS_ENCRYPTION_KEY" : "a key of CREDENTIALS_ENCRYPTION_KEYS_OLD",
          );
          return { id: await keyIdOf(raw), raw };
        }),
      );
      return { current: all[0]!, all };
    })();
    ring.catch(() => rings.delete(config));
    rings.set(config, ring);
  }
  return ring;
}

async function purposeKey(master: MasterKey, purpose: SealPurpose): Promise<CryptoKey> {
  const ikm = await crypto.subtle.importKey("raw", master.raw, "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: HKDF_SALT, info: encoder.encode(purpose) },
    ikm,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

const aad = (keyId: string, purpose: SealPurpose, rowId: string) => encoder.encode(`v2.${keyId}.${purpose}.${rowId}`);

export async function seal(env: KeyRingEnv, purpose: SealPurpose, rowId: string, plaintext: string): Promise<string> {
  const { current } = await keyRing(env);
  const iv = randomBytes(12);
  const ct = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: aad(current.id, purpose, rowId) },
    await purposeKey(current, purpose),
    encoder.encode(plaintext),
  );
  return `v2.${current.id}.${toBase64(iv)}.${toBase64(ct)}`;
}

export async function open(env: KeyRingEnv, purpose: SealPurpose, rowId: string, sealed: string): Promise<string> {
  const parts = sealed.split(".");
  const { all } = await keyRing(env);
  if (parts[0] === "v2" && parts.length === 4) {
    const [, keyId, iv, ct] = parts as [string, string, string, string];
    const master = all.find((k) => k.id === keyId);
    if (!master)
      throw new Error(
        `sealed with key ${keyId}, which is neither CREDENTIALS_ENCRYPTION_KEY nor in CREDENTIALS_ENCRYPTION_KEYS_OLD`,
      );
    const pt = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64(iv), additionalData: aad(keyId, purpose, rowId) },
      await purposeKey(master, purpose),
      fromBase64(ct),
    );
    return new TextDecoder().decode(pt);
  }
  if (parts[0] === "v1" && parts.length === 3) return openV1(all, parts[1]!, parts[2]!);
  throw new Error("Unrecognised sealed value");
}

/** v1 carries no key id: each key of the ring is tried (GCM's tag tells the right one). */
async function openV1(all: MasterKey[], iv: string, ct: string): Promise<string> {
  for (const master of all) {
    const key = await crypto.subtle.importKey("raw", master.raw, "AES-GCM", false, ["decrypt"]);
    try {
      const pt = await crypto.subtle.decrypt({ name: "AES-GCM", iv: fromBase64(iv) }, key, fromBase64(ct));
      return new TextDecoder().decode(pt);
    } catch {
      // not this key
    }
  }
  throw new Error("v1 sealed value that no configured key opens");
}

/** The prefix of values sealed under the current key; anything else is due for re-sealing. */
export async function currentPrefix(env: KeyRingEnv): Promise<string> {
  return `v2.${(await keyRing(env)).current.id}.`;
}
