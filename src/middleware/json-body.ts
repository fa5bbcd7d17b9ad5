import { createMiddleware } from "hono/factory";
import { bodyLimit } from "hono/body-limit";
import type { AppEnv } from "../context";
import { ApiError } from "../lib/errors";

export const MAX_JSON_BODY_BYTES = 64 * 1024;

const limit = bodyLimit({
  maxSize: MAX_JSON_BODY_BYTES,
  onError: () => {
    throw new ApiError("invalid_request", `The request body is larger than ${MAX_JSON_BODY_BYTES} bytes.`, {
      details: [{ path: "(body)", rule: "max_size", message: `At most ${MAX_JSON_BODY_BYTES} bytes.` }],
    });
  },
});

/** Write endpoints take JSON only, and at most 64 KiB of it. */
export const jsonBody = createMiddleware<AppEnv>(async (c, next) => {
  const type = c.req.header("content-type") ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new ApiError("invalid_request", "The request body must be JSON (Content-Type: application/json).", {
      details: [{ path: "header.content-type", rule: "json", message: "Send Content-Type: application/json." }],
    });
  }
  return limit(c, next);
});
