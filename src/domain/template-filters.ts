import { z } from "@hono/zod-openapi";
import { decodeCursor, encodeCursor, invalidCursor } from "../lib/pagination";
import { TEMPLATE_CATEGORIES, TEMPLATE_STATUSES, type StoredTemplate } from "./template";

// The filters of a template list: GET /api/v2/templates and the dashboard's Templates page accept
// and refuse the same values.

export const TemplateFilterFields = {
  status: z
    .enum(TEMPLATE_STATUSES)
    .optional()
    .openapi({ description: "Only templates in this review state.", example: "APPROVED" }),
  category: z.enum(TEMPLATE_CATEGORIES).optional().openapi({ example: "UTILITY" }),
  language: z
    .string()
    .regex(/^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?$/, { error: "language is the operator's code, e.g. en_US." })
    .optional()
    .openapi({ example: "en_US" }),
};

export const TemplateFilters = z.object(TemplateFilterFields);
export type TemplateFilters = z.infer<typeof TemplateFilters>;

/** Whether a template passes the filters (for templates held in memory: the sandbox's built-in ones). */
export const matchesTemplate = (
  t: StoredTemplate,
  f: {
    status?: string | undefined;
    category?: string | undefined;
    language?: string | undefined;
    name?: string | undefined;
  },
): boolean =>
  (f.status === undefined || t.status === f.status) &&
  (f.category === undefined || t.category === f.category) &&
  (f.language === undefined || t.language === f.language) &&
  (f.name === undefined || t.name === f.name);

/** Where a template list stands: the last template's name and language, and its account. */
export type TemplatePosition = { name: string; language: string; account: string };

/** The `nextCursor` after template `t`: its [name, language] and its account. */
export const templateCursor = (t: TemplatePosition): string =>
  encodeCursor({ sortKey: JSON.stringify([t.name, t.language]), id: t.account });

/**
 * The position a template list's cursor names, or null without one. A cursor this API did not
 * return (not base64, not JSON, or not [name, language]) throws the uniform `invalidCursor`: the
 * caller's input, never a server error.
 */
export function templatePosition(raw: string | undefined): TemplatePosition | null {
  const c = decodeCursor(raw);
  if (!c) return null;
  let key: unknown;
  try {
    key = JSON.parse(c.sortKey);
  } catch {
    throw invalidCursor();
  }
  if (!Array.isArray(key) || key.length !== 2 || typeof key[0] !== "string" || typeof key[1] !== "string")
    throw invalidCursor();
  return { name: key[0], language: key[1], account: c.id };
}
