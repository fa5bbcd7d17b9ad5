import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { fromBase64, toBase64Url } from "../lib/crypto";

/**
 * One-time messages across a POST-redirect-GET: the POST seals the message
 * (AES-GCM, key derived from CREDENTIALS_ENCRYPTION_KEY for this purpose only)
 * into a short-lived cookie, and the next page reads it and deletes the
 * cookie. A secret (a new API key, a webhook secret, an invitation link) thus
 * appears in clear in exactly one response: the page after the redirect.
 */
export interface Flash {
  notice: string;
  /** Shown once, with a copy button. */
  secret?: { label: string; value: string };
}

/** Any app with the Worker's bindings (the flash's key); not DashboardEnv, which itself carries a Flash. */
type WithBindings = { Bindings: Env };

const COOKIE = "flash";
const MAX_AGE_SECONDS = 120;
const encoder = new TextEncoder();

async function flashKey(env: Env): Promise<CryptoKey> {
  const base = await crypto.subtle.importKey("raw", fromBase64(env.CREDENTIALS_ENCRYPTION_KEY), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode("dashboard-flash-v1") },
    base,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

const unb64url = (s: string) => fromBase64(s.replaceAll("-", "+").replaceAll("_", "/") + "=".repeat((4 - (s.length % 4)) % 4));

/** Leaves `flash` for the next page of the same session (`binding`: the session's token hash). */
export async function setFlash<E extends WithBindings>(c: Context<E>, flash: Flash, binding: string): Promise<void> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const plaintext = encoder.encode(JSON.stringify({ ...flash, binding }));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await flashKey(c.env), plaintext));
  setCookie(c, COOKIE, `${toBase64Url(iv)}.${toBase64Url(sealed)}`, {
    prefix: "host",
    httpOnly: true,
    secure: true,
    sameSite: "Lax",
    path: "/",
    maxAge: MAX_AGE_SECONDS,
  });
}

/** Takes the flash left for this session, if any, and deletes its cookie either way. */
export async function takeFlash<E extends WithBindings>(c: Context<E>, binding: string): Promise<Flash | undefined> {
  const raw = getCookie(c, COOKIE, "host");
  if (raw === undefined) return undefined;
  deleteCookie(c, COOKIE, { prefix: "host", path: "/", secure: true, httpOnly: true, sameSite: "Lax" });
  const [iv, sealed] = raw.split(".");
  if (!iv || !sealed) return undefined;
  try {
    const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: unb64url(iv) }, await flashKey(c.env), unb64url(sealed));
    const parsed = JSON.parse(new TextDecoder().decode(plain)) as Flash & { binding: string };
    if (parsed.binding !== binding) return undefined;
    return { notice: parsed.notice, ...(parsed.secret ? { secret: parsed.secret } : {}) };
  } catch {
    return undefined;
  }
}
