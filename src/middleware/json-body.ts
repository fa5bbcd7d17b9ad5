import { createMiddleware } from "hono/factory";
import { bodyLimit } from "hono/body-limit";
import type { AppEnv } from "../context";
import { ApiError } from "../lib/errors";
import { illFormedStringPath } from "../lib/well-formed";

export const MAX_JSON_BODY_BYTES = 64 * 1024;

const limit = bodyLimit({
  maxSize: MAX_JSON_BODY_BYTES,
  onError: () => {
    throw new ApiError("invalid_request", `The request body is larger than ${MAX_JSON_BODY_BYTES} bytes.`, {
      details: [{ path: "(body)", rule: "max_size", message: `At most ${MAX_JSON_BODY_BYTES} bytes.` }],
    });
  },
});

/**
 * Write endpoints take JSON only, at most 64 KiB of it, and only well-formed
 * Unicode: a lone surrogate in any string (value or field name) of the body is
 * refused with a 400 naming the field, before any route-specific validation.
 */
export const jsonBody = createMiddleware<AppEnv>(async (c, next) => {
  const type = c.req.header("content-type") ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new ApiError("invalid_request", "The request body must be JSON (Content-Type: application/json).", {
      details: [{ path: "header.content-type", rule: "json", message: "Send Content-Type: application/json." }],
    });
  }
  return limit(c, async () => {
    let parsed: unknown;
    try {
      // Hono caches the parsed body: the route's validator reads this same value.
      parsed = await c.req.json();
    } catch {
      // Malformed JSON: the validator answers it, as it always has.
      return next();
    }
    const path = illFormedStringPath(parsed);
    if (path !== null) {
      throw new ApiError("invalid_request", `The request is invalid: ${path} is not well-formed Unicode.`, {
        details: [
          {
            path,
            rule: "well_formed_unicode",
            message: "Contains a lone UTF-16 surrogate (for example an unpaired \\uD800 escape). Send well-formed Unicode text.",
          },
        ],
      });
    }
    await next();
  });
});
