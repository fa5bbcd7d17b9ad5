import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../context";
import { resolveRequestId } from "../lib/request-id";
import { log } from "../lib/log";

// Query parameters whose values are never logged: the operator's handshake token, and
// anything named like a credential.
const SECRET_PARAM = /token|secret|password|passwd|key|signature|code|challenge/i;
// Query parameters that carry a phone number (the message filters of the API and the
// dashboard): personal data of our customers' customers, kept out of logs like credentials.
const PHONE_PARAM = /^(to|from)$/i;

/** The query string with every secret-looking or phone-number value replaced by "[redacted]"; undefined when there is none. */
export function redactedQuery(url: URL): string | undefined {
  if (url.search === "") return undefined;
  const params = new URLSearchParams();
  for (const [name, value] of url.searchParams)
    params.append(name, SECRET_PARAM.test(name) || PHONE_PARAM.test(name) ? "[redacted]" : value);
  return params.toString();
}

// Path segments never logged: a dashboard invitation link's token, and the contact's phone
// number of GET /api/v1/channel-numbers/{id}/contacts/{phone}.
const SECRET_PATHS = [/^(\/dashboard\/invitations\/)[^/]+/, /^(\/api\/v1\/channel-numbers\/[^/]+\/contacts\/)[^/]+/];

/** The path with a credential or phone-number segment replaced by "[redacted]". */
export const redactedPath = (pathname: string): string =>
  SECRET_PATHS.reduce((path, pattern) => path.replace(pattern, "$1[redacted]"), pathname);

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
    path: redactedPath(url.pathname),
    query: redactedQuery(url),
    status: c.res.status,
    ms: Date.now() - started,
    workspaceId: c.get("principal")?.workspaceId,
  });
});
