import { z } from "@hono/zod-openapi";
import { ApiError } from "./errors";
import { fromBase64, toBase64Url } from "./crypto";

export const PaginationQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50).openapi({ description: "Page size, 1–100.", example: 50 }),
  cursor: z.string().max(512).optional().openapi({
    description: "`nextCursor` of the previous page, unchanged.",
    example: "WyIyMDI2LTExLTIyVDE4OjM1OjQ3LjI4N1oiLCI2ZjFjMmM0ZSJd",
  }),
});

/**
 * The `limit` of a list that names its bounds in its errors (GET /messages, GET /api/v2/templates):
 * 1–100, `defaultSize` when absent.
 */
export const pageLimit = (defaultSize: number, description: string) =>
  z.coerce
    .number({ error: "limit must be a whole number from 1 to 100." })
    .int({ error: "limit must be a whole number from 1 to 100." })
    .min(1, { error: "limit must be at least 1." })
    .max(100, { error: "limit must be at most 100." })
    .default(defaultSize)
    .openapi({ description, example: defaultSize });

/** Opaque keyset cursor: the sort key and id of the last row of a page. */
export interface Cursor {
  sortKey: string;
  id: string;
}

export function encodeCursor(c: Cursor): string {
  return toBase64Url(new TextEncoder().encode(JSON.stringify([c.sortKey, c.id])));
}

export function decodeCursor(raw: string | undefined): Cursor | undefined {
  if (raw === undefined) return undefined;
  try {
    const b64 = raw.replaceAll("-", "+").replaceAll("_", "/");
    const parsed: unknown = JSON.parse(new TextDecoder().decode(fromBase64(b64)));
    if (
      Array.isArray(parsed) &&
      parsed.length === 2 &&
      typeof parsed[0] === "string" &&
      typeof parsed[1] === "string"
    ) {
      return { sortKey: parsed[0], id: parsed[1] };
    }
  } catch {
    // fall through to the uniform error
  }
  throw invalidCursor();
}

export const invalidCursor = (): ApiError =>
  new ApiError("invalid_request", "The cursor is not one this API returned.", {
    details: [{ path: "cursor", rule: "format", message: "Pass the nextCursor value of a previous page unchanged." }],
  });

/** Turns `limit + 1` fetched rows into a page and the cursor of the next one. */
export function toPage<Row, Item>(
  rows: Row[],
  limit: number,
  cursorOf: (row: Row) => Cursor,
  map: (row: Row) => Item,
): { data: Item[]; nextCursor: string | null } {
  const hasMore = rows.length > limit;
  const page = hasMore ? rows.slice(0, limit) : rows;
  const last = page.at(-1);
  return { data: page.map(map), nextCursor: hasMore && last ? encodeCursor(cursorOf(last)) : null };
}
