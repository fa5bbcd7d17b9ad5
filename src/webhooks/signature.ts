import { fromBase64, hmacSha256, randomBytes, toBase64 } from "../lib/crypto";

const SECRET_PREFIX = "whsec_";

/** A new signing secret: `whsec_` + base64 of 32 random bytes (Standard Webhooks format). */
export const newWebhookSecret = (): string => `${SECRET_PREFIX}${toBase64(randomBytes(32))}`;

/**
 * Standard Webhooks headers for one attempt: the HMAC-SHA256 of
 * `{id}.{timestamp}.{body}` keyed with the base64-decoded part of the secret
 * after `whsec_`, exactly what the `standardwebhooks` libraries verify.
 */
export async function signatureHeaders(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): Promise<Record<string, string>> {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error("webhook secret without the whsec_ prefix");
  const mac = await hmacSha256(fromBase64(secret.slice(SECRET_PREFIX.length)), `${id}.${timestampSeconds}.${body}`);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": `v1,${toBase64(mac)}`,
  };
}
