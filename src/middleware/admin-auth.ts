import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../context";
import { ApiError } from "../lib/errors";
import { timingSafeEqualStrings } from "../lib/crypto";

/** `Authorization: Bearer <ADMIN_TOKEN>` on every /admin/v1 endpoint. */
export const adminAuth = createMiddleware<AppEnv>(async (c, next) => {
  const header = c.req.header("authorization") ?? "";
  const match = /^Bearer ([^\s]{1,512})$/.exec(header);
  const expected = c.env.ADMIN_TOKEN;
  if (!expected || !match?.[1] || !(await timingSafeEqualStrings(match[1], expected))) {
    throw new ApiError("unauthorized", "Missing or invalid admin token.");
  }
  await next();
});
