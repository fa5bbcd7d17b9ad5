import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../context";
import { ApiError } from "../lib/errors";
import { timingSafeEqualStrings } from "../lib/crypto";
import { bearerToken, unauthorized } from "../lib/bearer";
import { log } from "../lib/log";

/** Shorter admin tokens are refused: 32 characters of a random alphabet is the floor for a bearer secret. */
export const MIN_ADMIN_TOKEN_LENGTH = 32;

/**
 * `Authorization: Bearer <ADMIN_TOKEN>` on every /admin/v1 endpoint. A Worker
 * has no start-up hook that could refuse to boot, so a missing or short
 * ADMIN_TOKEN makes every admin request answer 500 with a log line saying why;
 * the public API is unaffected.
 */
export const adminAuth = createMiddleware<AppEnv>(async (c, next) => {
  const expected = c.env.ADMIN_TOKEN ?? "";
  if (expected.length < MIN_ADMIN_TOKEN_LENGTH) {
    log("error", "admin API disabled: ADMIN_TOKEN is missing or shorter than 32 characters; set a long random one with `wrangler secret put ADMIN_TOKEN`", {
      requestId: c.get("requestId"),
      adminTokenLength: expected.length,
    });
    throw new ApiError("internal_error", "The admin API is not configured: ADMIN_TOKEN must be at least 32 characters. See the logs.");
  }
  const header = c.req.header("authorization");
  const token = bearerToken(header);
  if (!token || !(await timingSafeEqualStrings(token, expected))) {
    throw unauthorized("Missing or invalid admin token.", "admin", header !== undefined);
  }
  await next();
});
