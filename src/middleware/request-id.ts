import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../context";
import { resolveRequestId } from "../lib/request-id";

export const requestId = createMiddleware<AppEnv>(async (c, next) => {
  const id = resolveRequestId(c.req.header("x-request-id"));
  c.set("requestId", id);
  c.header("X-Request-Id", id);
  await next();
  // Error responses built by onError are new Response objects; stamp them too.
  c.res.headers.set("X-Request-Id", id);
});
