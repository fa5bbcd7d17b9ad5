import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../context";
import { randomBytes, toBase64 } from "../lib/crypto";

export const HSTS = "max-age=31536000; includeSubDomains";

/**
 * Headers every response gets (`nosniff`: a body is never reinterpreted as
 * another type; HSTS), and the policy of every HTML page: a Content-Security-Policy
 * that allows only our own origin plus inline `<script>`/`<style>` elements
 * carrying this response's nonce (`c.get("cspNonce")`), no framing, no referrer.
 * It is decided by the response's Content-Type, so pages added later are
 * covered without registering them here. A page that sets its own, stricter
 * or different policy (the dashboard, the API reference) keeps it.
 */
export const securityHeaders = createMiddleware<AppEnv>(async (c, next) => {
  const nonce = toBase64(randomBytes(16));
  c.set("cspNonce", nonce);
  await next();
  c.res.headers.set("X-Content-Type-Options", "nosniff");
  // Browsers reach us over https only from now on (a year; subdomains too): no downgrade to
  // plain http on a hostile network. Browsers ignore it on http://127.0.0.1 (wrangler dev).
  c.res.headers.set("Strict-Transport-Security", HSTS);
  if (/^text\/html\b/i.test(c.res.headers.get("content-type") ?? "") && !c.res.headers.has("Content-Security-Policy")) {
    c.res.headers.set(
      "Content-Security-Policy",
      [
        "default-src 'none'",
        `script-src 'self' 'nonce-${nonce}'`,
        `style-src 'self' 'nonce-${nonce}'`,
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
      ].join("; "),
    );
  }
  if (/^text\/html\b/i.test(c.res.headers.get("content-type") ?? "")) {
    c.res.headers.set("X-Frame-Options", "DENY");
    if (!c.res.headers.has("Referrer-Policy")) c.res.headers.set("Referrer-Policy", "no-referrer");
  }
});

/**
 * For responses that carry a key, a secret or a sign-in token: no cache may
 * keep them (`Pragma` for HTTP/1.0 proxies).
 */
export const noStore = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  c.res.headers.set("Cache-Control", "no-store");
  c.res.headers.set("Pragma", "no-cache");
});
