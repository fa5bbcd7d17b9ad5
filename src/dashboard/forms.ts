import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { Context } from "hono";
import type { DashboardEnv } from "./context";

const FORM_TYPES = /^(application\/x-www-form-urlencoded|multipart\/form-data)\s*(;|$)/i;
const MAX_FORM_BYTES = 16 * 1024;

const limit = bodyLimit({ maxSize: MAX_FORM_BYTES, onError: (c) => c.text("Form too large.", 413) });

/**
 * Dashboard POSTs are HTML form submissions and nothing else: any other body
 * type is refused before the CSRF check, so that check (which only looks at
 * form-like bodies) covers every state change.
 */
export const formsOnly = createMiddleware<DashboardEnv>(async (c, next) => {
  if (c.req.method !== "POST") return next();
  if (!FORM_TYPES.test(c.req.header("content-type") ?? "")) return c.text("Dashboard forms only.", 415);
  return limit(c, next);
});

/** The submitted text fields (files and repeated fields are ignored). */
export async function formFields(c: Context<DashboardEnv>): Promise<Record<string, string>> {
  const body = await c.req.parseBody();
  const fields: Record<string, string> = {};
  for (const [name, value] of Object.entries(body)) if (typeof value === "string") fields[name] = value;
  return fields;
}
