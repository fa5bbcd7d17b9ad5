import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { createMiddleware } from "hono/factory";
import { hashSessionToken, resolveSession, SESSION_ABSOLUTE_MS } from "../features/sign-in/sessions";
import type { DashboardEnv } from "./context";
import { setFlash, takeFlash } from "./flash";

/** `__Host-session`: Secure, HttpOnly, SameSite=Lax, Path=/, no Domain (the prefix enforces the last three). */
const COOKIE = "session";

export const readSessionCookie = (c: Context<DashboardEnv>): string | undefined => getCookie(c, COOKIE, "host");

export function setSessionCookie(c: Context<DashboardEnv>, token: string): void {
  setCookie(c, COOKIE, token, {
    prefix: "host",
    httpOnly: true,
    secure: true,
    sameSite: "Lax",
    path: "/",
    // The browser may drop it earlier; the server enforces idle and absolute expiry either way.
    maxAge: SESSION_ABSOLUTE_MS / 1000,
  });
}

export const clearSessionCookie = (c: Context<DashboardEnv>): void => {
  deleteCookie(c, COOKIE, { prefix: "host", path: "/", secure: true, httpOnly: true, sameSite: "Lax" });
};

const SAFE_NEXT = /^\/dashboard(\/[A-Za-z0-9/_-]*)?$/;

/** Where to go after sign-in: a dashboard path only (never another site). */
export const safeNext = (raw: string | undefined): string => (raw && SAFE_NEXT.test(raw) ? raw : "/dashboard");

/** Every page behind sign-in: loads the session (or sends the browser to sign in) and the one-time flash. */
export const requireSession = createMiddleware<DashboardEnv>(async (c, next) => {
  const token = readSessionCookie(c);
  const session = await resolveSession(c.env.DB, token);
  if (!session || !token) {
    if (token) clearSessionCookie(c);
    const path = new URL(c.req.url).pathname;
    const next = c.req.method === "GET" && path !== "/dashboard" ? `?next=${encodeURIComponent(path)}` : "";
    return c.redirect(`/dashboard/sign-in${next}`, 303);
  }
  c.set("session", session);
  c.set("sessionToken", token);
  c.set("flash", c.req.method === "GET" ? await takeFlash(c, session.token_hash) : undefined);
  await next();
});

/** Signs the browser in with a fresh session token and leaves a notice for the next page. */
export async function startSession(c: Context<DashboardEnv>, token: string, notice: string): Promise<void> {
  setSessionCookie(c, token);
  await setFlash(c, { notice }, await hashSessionToken(token));
}
