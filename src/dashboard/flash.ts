import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { deleteSealedCookie, readSealedCookie, setSealedCookie } from "./sealed-cookie";

/**
 * One-time messages across a POST-redirect-GET: the POST seals the message
 * (AES-GCM, key derived from CREDENTIALS_ENCRYPTION_KEY for this purpose only)
 * into a short-lived cookie, and the next page reads it and deletes the
 * cookie. A secret (a new API key, a webhook secret, an invitation link) thus
 * appears in clear in exactly one response: the page after the redirect.
 */
export interface Flash {
  notice: string;
  /** A refusal (the action did nothing): shown as an error, not as a confirmation. */
  error?: true;
  /** Shown once, with a copy button. */
  secret?: { label: string; value: string };
}

/** Any app with the Worker's bindings (the flash's key); not DashboardEnv, which itself carries a Flash. */
type WithBindings = { Bindings: Env };

const COOKIE = "flash";
const PURPOSE = "dashboard-flash-v1";
const MAX_AGE_SECONDS = 120;

/** Leaves `flash` for the next page of the same session (`binding`: the session's token hash). */
export async function setFlash<E extends WithBindings>(c: Context<E>, flash: Flash, binding: string): Promise<void> {
  await setSealedCookie(c, COOKIE, PURPOSE, { ...flash, binding }, MAX_AGE_SECONDS);
}

/** Takes the flash left for this session, if any, and deletes its cookie either way. */
export async function takeFlash<E extends WithBindings>(c: Context<E>, binding: string): Promise<Flash | undefined> {
  if (getCookie(c, COOKIE, "host") === undefined) return undefined;
  const parsed = (await readSealedCookie(c, COOKIE, PURPOSE)) as (Flash & { binding: string }) | undefined;
  deleteSealedCookie(c, COOKIE);
  if (!parsed || parsed.binding !== binding) return undefined;
  return {
    notice: parsed.notice,
    ...(parsed.error ? { error: true } : {}),
    ...(parsed.secret ? { secret: parsed.secret } : {}),
  };
}
