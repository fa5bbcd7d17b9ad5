import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../context";
import { resolveRequestId } from "../lib/request-id";
import { log } from "../lib/log";

/** Assigns the request id, stamps it on every response, and writes one access-log line. */
export const requestId = createMiddleware<AppEnv>(async (c, next) => {
  const id = resolveRequestId(c.req.header("x-request-id"));
  const started = Date.now();
  c.set("requestId", id);
  c.header("X-Request-Id", id);
  await next();
  // Error responses built by onError are new Response objects; stamp them too.
  c.res.headers.set("X-Request-Id", id);
  // Method, path and outcome only: headers and bodies (keys, secrets) are never logged.
  log("info", "request", {
    requestId: id,
    method: c.req.method,
    path: new URL(c.req.url).pathname,
    status: c.res.status,
    ms: Date.now() - started,
    workspaceId: c.get("principal")?.workspaceId,
  });
});
