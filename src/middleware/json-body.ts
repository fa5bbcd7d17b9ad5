import { createMiddleware } from "hono/factory";
import { bodyLimit } from "hono/body-limit";
import type { AppEnv } from "../context";
import { ApiError } from "../lib/errors";
import { jsonSyntaxError } from "../lib/json-syntax";
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
    // Read as text first (Hono caches it; the route's validator parses the same bytes) so that
    // a syntax error can say where it is, not only that there is one.
    const text = await c.req.text();
    const syntax = jsonSyntaxError(text);
    if (syntax) {
      const where =
        syntax.line === null ? "" : ` at line ${syntax.line}, column ${syntax.column} (character ${syntax.position})`;
      throw new ApiError("invalid_request", `The request body is not valid JSON: ${syntax.reason}${where}.`, {
        details: [{ path: "(body)", rule: "json_syntax", message: `${syntax.reason}${where}.` }],
      });
    }
    const parsed: unknown = JSON.parse(text);
    const path = illFormedStringPath(parsed);
    if (path !== null) {
      throw new ApiError("invalid_request", `The request is invalid: ${path} is not well-formed Unicode.`, {
        details: [
          {
            path,
            rule: "well_formed_unicode",
            message:
              "Contains a lone UTF-16 surrogate (for example an unpaired \\uD800 escape). Send well-formed Unicode text.",
          },
        ],
      });
    }
    await next();
  });
});
