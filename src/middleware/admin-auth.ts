import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../context";
import { ApiError } from "../lib/errors";
import { timingSafeEqualStrings } from "../lib/crypto";
import { bearerToken, unauthorized } from "../lib/bearer";
import { errorText, log } from "../lib/log";
import { routePath } from "hono/route";
import { sha256Hex } from "../lib/crypto";
import { clientAddress } from "../lib/client-address";
import { isoNow } from "../lib/clock";
import { insertAdminAudit } from "../features/audit/admin-store";

/** Shorter admin tokens are refused: 32 characters of a random alphabet is the floor for a bearer secret. */
export const MIN_ADMIN_TOKEN_LENGTH = 32;

/**
 * `Authorization: Bearer <ADMIN_TOKEN>` on every /admin/v1 endpoint, and every
 * authenticated call recorded in the admin audit log. A Worker
 * has no start-up hook that could refuse to boot, so a missing or short
 * ADMIN_TOKEN makes every admin request answer 500 with a log line saying why;
 * the public API is unaffected.
 */
export const adminAuth = createMiddleware<AppEnv>(async (c, next) => {
  const expected = c.env.ADMIN_TOKEN ?? "";
  if (expected.length < MIN_ADMIN_TOKEN_LENGTH) {
    log(
      "error",
      "admin API disabled: ADMIN_TOKEN is missing or shorter than 32 characters; set a long random one with `wrangler secret put ADMIN_TOKEN`",
      {
        requestId: c.get("requestId"),
        adminTokenLength: expected.length,
      },
    );
    throw new ApiError(
      "internal_error",
      "The admin API is not configured: ADMIN_TOKEN must be at least 32 characters. See the logs.",
    );
  }
  const header = c.req.header("authorization");
  const token = bearerToken(header);
  if (!token || !(await timingSafeEqualStrings(token, expected))) {
    log("warn", "admin authentication failed", {
      requestId: c.get("requestId"),
      clientAddress: clientAddress(c.req.raw),
    });
    throw unauthorized("Missing or invalid admin token.", "admin", header !== undefined);
  }
  const at = isoNow();
  const actor = await adminActor(token);
  c.set("adminActor", actor);
  await next();
  // After the call, with its result. A failed write is logged; the call itself has happened.
  try {
    await insertAdminAudit(c.env.DB, {
      id: crypto.randomUUID(),
      at,
      actor,
      method: c.req.method,
      route: routePath(c, -1),
      path: c.req.path,
      status: c.res.status,
      request_id: c.get("requestId"),
      client_address: c.req.header("cf-connecting-ip") ?? null,
    });
  } catch (err) {
    log("error", "admin audit record could not be written", { requestId: c.get("requestId"), detail: errorText(err) });
  }
});

/** Who made an admin call: a fingerprint of the admin token (12 hex digits of its SHA-256), never the token. */
export const adminActor = async (token: string): Promise<string> =>
  `admin-token:${(await sha256Hex(token)).slice(0, 12)}`;
