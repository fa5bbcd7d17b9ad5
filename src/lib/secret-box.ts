import { fromBase64, randomBytes, toBase64 } from "./crypto";

// AES-GCM with a 96-bit random IV per value; stored as "v1.<iv>.<ciphertext>"
// so that the key can be rotated later by adding a v2.
async function importKey(base64Key: string): Promise<CryptoKey> {
  const raw = fromBase64(base64Key);
  if (raw.length !== 32) throw new Error("CREDENTIALS_ENCRYPTION_KEY must be 32 bytes, base64-encoded");
  return crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
}

export async function seal(base64Key: string, plaintext: string): Promise<string> {
  const iv = randomBytes(12);
  const ct = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv },
    await importKey(base64Key),
    new TextEncoder().encode(plaintext),
  );
  return `v1.${toBase64(iv)}.${toBase64(ct)}`;
}

export async function open(base64Key: string, sealed: string): Promise<string> {
  const [version, iv, ct] = sealed.split(".");
  if (version !== "v1" || !iv || !ct) throw new Error("Unrecognised sealed value");
  const pt = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64(iv) },
    await importKey(base64Key),
    fromBase64(ct),
  );
  return new TextDecoder().decode(pt);
}
