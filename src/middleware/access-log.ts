import { createMiddleware } from "hono/factory";
import { matchedRoutes } from "hono/route";
import type { AppEnv } from "../context";
import { resolveRequestId } from "../lib/request-id";
import { log } from "../lib/log";

// Query parameters whose values are never logged: the operator's handshake token, and
// anything named like a credential.
const SECRET_PARAM = /token|secret|password|passwd|key|signature|code|challenge/i;
// Query parameters that carry a phone number (the message filters of the API and the
// dashboard): personal data of our customers' customers, kept out of logs like credentials.
const PHONE_PARAM = /^(to|from)$/i;

// The dashboard's page to return to after sign-in: a path (and query) of its own, which can hold
// a phone number or a link's token, redacted like a logged path with no route to go by.
const RETURN_PARAM = /^next$/i;

/** The query string with every secret-looking or phone-number value replaced by "[redacted]"; undefined when there is none. */
export function redactedQuery(url: URL): string | undefined {
  if (url.search === "") return undefined;
  const params = new URLSearchParams();
  for (const [name, value] of url.searchParams)
    params.append(
      name,
      SECRET_PARAM.test(name) || PHONE_PARAM.test(name)
        ? "[redacted]"
        : RETURN_PARAM.test(name)
          ? redactedReturnPath(value)
          : value,
    );
  return params.toString();
}

function redactedReturnPath(value: string): string {
  const inner = new URL(value, "https://return.invalid");
  const query = redactedQuery(inner);
  return `${redactedPath(inner.pathname, [])}${query === undefined ? "" : `?${query}`}`;
}

/**
 * Route parameters never logged, by name: a dashboard invitation link's `token`, and a contact's
 * `phone` (contacts of a number, sandbox test contacts, the dashboard's remove form). A route that
 * names a phone or a credential in its path calls its parameter one of these; the access-log test
 * reads every route from the app and fails for a parameter name it does not know.
 */
export const REDACTED_PARAMS: ReadonlySet<string> = new Set(["phone", "token"]);

// A path that no route matched (a typo, a wrong method) has no template to go by: a segment that
// looks like a phone number (E.164 digits, with or without "+") or an invitation token is redacted.
const LOOSE_SECRET = /^(\+?\d{6,15}|[A-Za-z0-9_-]{43})$/;

const paramName = (segment: string): string | null =>
  segment.startsWith(":") ? segment.slice(1).replace(/\{.*$/, "").replace(/\?$/, "") : null;

/**
 * The path with every segment that a matched route's template names as a redacted parameter
 * replaced by "[redacted]" (`templates`: the route paths that matched the request, wildcards
 * included); with no concrete template, every phone- or token-like segment instead.
 */
export function redactedPath(pathname: string, templates: readonly string[]): string {
  const segments = pathname.split("/");
  const concrete = templates.filter((t) => !t.includes("*") && t.split("/").length === segments.length);
  if (concrete.length === 0)
    return segments.map((s) => (LOOSE_SECRET.test(s.replace(/^%2B/i, "+")) ? "[redacted]" : s)).join("/");
  return segments
    .map((s, i) =>
      concrete.some((t) => {
        const name = paramName(t.split("/")[i] ?? "");
        return name !== null && REDACTED_PARAMS.has(name);
      })
        ? "[redacted]"
        : s,
    )
    .join("/");
}

/** Assigns the request id, stamps it on every response, and writes one access-log line. */
export const requestId = createMiddleware<AppEnv>(async (c, next) => {
  const id = resolveRequestId(c.req.header("x-request-id"));
  const started = Date.now();
  c.set("requestId", id);
  c.header("X-Request-Id", id);
  await next();
  // Error responses built by onError are new Response objects; stamp them too.
  c.res.headers.set("X-Request-Id", id);
  // Method, path and query (secrets redacted) and outcome: headers and bodies (keys, secrets) are never logged.
  const url = new URL(c.req.url);
  log("info", "request", {
    requestId: id,
    method: c.req.method,
    path: redactedPath(
      url.pathname,
      matchedRoutes(c).map((r) => r.path),
    ),
    query: redactedQuery(url),
    status: c.res.status,
    ms: Date.now() - started,
    workspaceId: c.get("principal")?.workspaceId,
  });
});
