import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent, newRouter, requestIdHeader } from "../lib/openapi";
import { notFound } from "../lib/errors";
import { dayNumber, dayString, listArchives, openArchive } from "../engine/archives";
import { PaginationQuery, decodeCursor, invalidCursor, toPage } from "../lib/pagination";
import { mayCarryV2, v1OfLine, v2OfLine, type ArchivedLine } from "../messages/archive-line";

const MessageArchive = z
  .object({
    day: z
      .string()
      .openapi({ description: "The UTC day (YYYY-MM-DD) of the messages' creation.", example: "2026-10-01" }),
    messages: z.number().int(),
    archivedAt: z.string().datetime(),
  })
  .openapi("MessageArchive");

const MessageArchiveList = z
  .object({ data: z.array(MessageArchive), nextCursor: z.string().nullable() })
  .openapi("MessageArchiveList");

const list = createRoute({
  method: "get",
  path: "/message-archives",
  "x-key-role": "viewer",
  operationId: "listMessageArchives",
  tags: ["Messages"],
  summary: "Days of messages older than the plan's history window, archived",
  description:
    "When a day leaves the history window of `GET /messages`, its messages are written to an archive (one file per day) " +
    "and kept 400 days. Newest first.",
  security: bearerSecurity,
  request: { query: PaginationQuery },
  responses: {
    200: jsonContent(MessageArchiveList, "Archived days, newest first.", {
      data: [{ day: "2026-10-01", messages: 1520, archivedAt: "2026-11-01T00:04:12.000Z" }],
      nextCursor: null,
    }),
    ...errorResponses(400, 401, 429),
  },
});

const download = createRoute({
  method: "get",
  path: "/message-archives/{day}",
  "x-key-role": "viewer",
  operationId: "downloadMessageArchive",
  tags: ["Messages"],
  summary: "Download one archived day (NDJSON)",
  description:
    "One message per line, as `GET /messages/{id}` shows it, oldest first, streamed. Send `Accept-Encoding: gzip` to " +
    "receive it compressed.",
  security: bearerSecurity,
  request: {
    params: z.object({ day: z.string().openapi({ description: "YYYY-MM-DD (UTC).", example: "2026-10-01" }) }),
  },
  responses: {
    200: {
      description: "The day's messages.",
      headers: requestIdHeader,
      content: {
        "application/x-ndjson": {
          schema: z.string().openapi({ format: "binary" }),
          example: '{"id":"42ab2093-bbe3-8710-9a4a-492ccdac721d","direction":"outbound","status":"sent", …}\n',
        },
      },
    },
    ...errorResponses(401, 404, 429),
  },
});

/**
 * Each line of an archived day (messages/archive-line.ts) as `show` turns its text into another.
 * Lines are split wherever chunks end: a message is never cut in two, and a chunk is turned as it
 * comes (one part of the day at most, never the day).
 */
function linesAs(show: (line: string) => string): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let rest = "";
  const lines = (text: string): Uint8Array =>
    encoder.encode(
      text
        .split("\n")
        .filter((line) => line.length > 0)
        .map((line) => `${show(line)}\n`)
        .join(""),
    );
  return new TransformStream({
    transform(chunk, controller) {
      const text = rest + decoder.decode(chunk, { stream: true });
      const end = text.lastIndexOf("\n");
      rest = text.slice(end + 1);
      if (end >= 0) controller.enqueue(lines(text.slice(0, end)));
    },
    flush(controller) {
      const text = rest + decoder.decode();
      if (text.length > 0) controller.enqueue(lines(text));
    },
  });
}

const parsed = (line: string) => JSON.parse(line) as ArchivedLine;

/**
 * v1's line: as written, without v2's key. A line that cannot hold the key (most of them, and every
 * line of a part written before v2's values were kept) is served as it is, byte for byte.
 */
const v1Line = (line: string): string => (mayCarryV2(line) ? JSON.stringify(v1OfLine(parsed(line))) : line);
/** v2's line: v2's statuses derived from v1's view, with the line's own v2 values over them. */
const v2Line = (line: string): string => JSON.stringify(v2OfLine(parsed(line)));

/** The archives' routes of a version: each line of a day shown by `show`. */
const archiveRoutes = (show: (line: string) => string) => {
  const router = newRouter();
  router.openAPIRegistry.registerPath(download);
  return (
    router
      .openapi(list, async (c) => {
        const { limit, cursor } = c.req.valid("query");
        const after = decodeCursor(cursor);
        const before = after === undefined ? null : dayNumber(after.sortKey);
        if (after !== undefined && before === null) throw invalidCursor();
        const rows = await listArchives(c.env, c.get("principal").workspaceId, before, limit + 1);
        return c.json(
          toPage(
            rows,
            limit,
            (r) => ({ sortKey: dayString(r.day), id: "" }),
            (r) => ({
              day: dayString(r.day),
              messages: r.messages,
              archivedAt: new Date(r.archived_at).toISOString(),
            }),
          ),
          200,
        );
      })
      // Typed routes take JSON-like media types for JSON; this one streams NDJSON, so it is
      // a plain route, documented by registering its definition.
      .get("/message-archives/:day", async (c) => {
        const { workspaceId } = c.get("principal");
        const day = dayNumber(c.req.param("day"));
        // Another workspace's day reads as missing: the index is the caller's own.
        const body = day === null ? null : await openArchive(c.env, workspaceId, day);
        if (day === null || !body) throw notFound("Archive");
        c.header("Content-Type", "application/x-ndjson; charset=utf-8");
        c.header("Content-Disposition", `attachment; filename="messages-${dayString(day)}.ndjson"`);
        c.header("Cache-Control", "private, no-store");
        return c.body(body.pipeThrough(linesAs(show)), 200);
      })
  );
};

export const messageArchiveRoutes = archiveRoutes(v1Line);
/** API v2's: each archived message as `GET /api/v2/messages/{id}` showed it. */
export const messageArchiveRoutesV2 = archiveRoutes(v2Line);
