import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { fromBase64, toBase64Url } from "../lib/crypto";

/**
 * Short-lived `__Host-` cookies whose value only the server can read or make:
 * JSON sealed with AES-GCM under a key derived from CREDENTIALS_ENCRYPTION_KEY
 * for one purpose (a cookie of one purpose never opens as another).
 */
const encoder = new TextEncoder();

/** Any app with the Worker's bindings (the sealing key): generic, so that the dashboard's context can import what uses this. */
type WithBindings = { Bindings: Env };

async function keyFor(env: Env, purpose: string): Promise<CryptoKey> {
  const base = await crypto.subtle.importKey("raw", fromBase64(env.CREDENTIALS_ENCRYPTION_KEY), "HKDF", false, [
    "deriveKey",
  ]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode(purpose) },
    base,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

const unb64url = (s: string) =>
  fromBase64(s.replaceAll("-", "+").replaceAll("_", "/") + "=".repeat((4 - (s.length % 4)) % 4));

export async function setSealedCookie<E extends WithBindings>(
  c: Context<E>,
  name: string,
  purpose: string,
  value: unknown,
  maxAgeSeconds: number,
): Promise<void> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(
    await crypto.subtle.encrypt(
      { name: "AES-GCM", iv },
      await keyFor(c.env, purpose),
      encoder.encode(JSON.stringify(value)),
    ),
  );
  setCookie(c, name, `${toBase64Url(iv)}.${toBase64Url(sealed)}`, {
    prefix: "host",
    httpOnly: true,
    secure: true,
    sameSite: "Lax",
    path: "/",
    maxAge: maxAgeSeconds,
  });
}

/** The cookie's value, or undefined (absent, tampered with, or of another purpose). */
export async function readSealedCookie<E extends WithBindings>(
  c: Context<E>,
  name: string,
  purpose: string,
): Promise<unknown> {
  const raw = getCookie(c, name, "host");
  const [iv, sealed] = raw?.split(".") ?? [];
  if (!iv || !sealed) return undefined;
  try {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: unb64url(iv) },
      await keyFor(c.env, purpose),
      unb64url(sealed),
    );
    return JSON.parse(new TextDecoder().decode(plain)) as unknown;
  } catch {
    return undefined;
  }
}

export function deleteSealedCookie<E extends WithBindings>(c: Context<E>, name: string): void {
  deleteCookie(c, name, { prefix: "host", path: "/", secure: true, httpOnly: true, sameSite: "Lax" });
}
