import { createMiddleware } from "hono/factory";
import type { DashboardEnv } from "./context";

/**
 * Scripts, styles and images come from our own origin only (no inline code,
 * no third party); nothing may frame the dashboard; forms post to ourselves.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "object-src 'none'",
].join("; ");

/** Security headers on every dashboard response, error pages and redirects included. */
export const pageHeaders = createMiddleware<DashboardEnv>(async (c, next) => {
  await next();
  const h = c.res.headers;
  // A response with a policy of its own keeps it: a media file's sandbox is stricter than a page's,
  // and replacing it would let a file run under the dashboard's origin and `script-src 'self'`.
  if (!h.has("Content-Security-Policy")) h.set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
  h.set("X-Content-Type-Options", "nosniff");
  h.set("X-Frame-Options", "DENY");
  // Pages with a token in their URL (invitations) tighten this to no-referrer.
  if (!h.has("Referrer-Policy")) h.set("Referrer-Policy", "same-origin");
  h.set("Cross-Origin-Opener-Policy", "same-origin");
  h.set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()");
  // Pages show secrets once and per-member data: never cache them.
  h.set("Cache-Control", "no-store");
});
