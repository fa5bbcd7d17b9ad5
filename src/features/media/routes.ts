import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../context";
import { bearerSecurity, errorResponses, jsonContent, newRouter, requestIdHeader } from "../../lib/openapi";
import { ApiError } from "../../lib/errors";
import { now } from "../../lib/clock";
import { decodeCursor, pageLimit, PaginationQuery, toPage } from "../../lib/pagination";
import { storedUuid } from "../../lib/job-id";
import { ACCEPTED_MEDIA_TYPES, MEDIA_SIZE_LIMITS } from "../../domain/media-rules";
import { listUploadedMedia } from "../../db/uploaded-media";
import { mediaViewOf, MediaView, UPLOADED_MEDIA_DAYS, type UploadedMedia } from "../../messages/uploaded-media";
import { limitHeaders, throwIfLimited } from "../../middleware/rate-limit";
import { mediaResponse } from "../../routes/message-media";
import { deleteMedia } from "./delete-media";
import { keptFile, MEDIA_NOT_FOUND, openKeptFile } from "./stored-file";
import { MAX_FILENAME_CHARS, uploadMedia } from "./upload-media";

// The workspace's media store (API v2): files uploaded once, sent by id (template media headers),
// kept 30 days. The upload's body is the file itself, streamed to R2; the other routes are JSON.

const MB = 1024 * 1024;
const EXAMPLE_MEDIA: MediaView = {
  id: "0193b4f2-7c1e-7a3b-9d2e-5f6a7b8c9d0f",
  kind: "image",
  contentType: "image/jpeg",
  size: 48213,
  sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
  filename: "parcel.jpg",
  createdAt: "2026-11-27T09:30:00.000Z",
  expiresAt: "2026-12-27T09:30:00.000Z",
  url: "/api/v2/media/0193b4f2-7c1e-7a3b-9d2e-5f6a7b8c9d0f/content",
};

const MediaId = z
  .string()
  .openapi({ description: "A file's id, as its upload answered.", format: "uuid", example: EXAMPLE_MEDIA.id });

const MediaList = z.object({ data: z.array(MediaView), nextCursor: z.string().nullable() }).openapi("MediaList");

const RULES =
  `Accepted types and sizes (the operator's limits): image/jpeg and image/png up to ${MEDIA_SIZE_LIMITS.image / MB} MB (kind image); ` +
  `video/mp4 and video/3gpp up to ${MEDIA_SIZE_LIMITS.video / MB} MB (video); audio/aac, audio/amr, audio/mpeg, audio/mp4 and ` +
  `audio/ogg (Opus only) up to ${MEDIA_SIZE_LIMITS.audio / MB} MB (audio); text/plain, application/pdf and the Word, Excel and ` +
  `PowerPoint types up to ${MEDIA_SIZE_LIMITS.document / MB} MB (document); image/webp up to 100 KB static, 500 KB animated ` +
  `(sticker). The declared type must match the file's first bytes (a PNG declared as image/jpeg is refused).`;

const upload = createRoute({
  method: "post",
  path: "/media",
  "x-key-role": "developer",
  operationId: "uploadMedia",
  tags: ["Media"],
  summary: "Upload a file to the workspace's media store",
  description:
    "The request's body is the file itself, its `Content-Type` its type and its `Content-Length` its size " +
    "(`curl --data-binary @file` sends both); `?filename=` names it (a document shows the name). The file is streamed to " +
    `storage as it arrives and kept ${UPLOADED_MEDIA_DAYS} days (\`expiresAt\`); send it by its \`id\`. ${RULES} ` +
    "Every refusal is 400 `invalid_request` naming its rule in `details[].rule` (`media_type`, `length_required`, " +
    "`media_size`, `media_signature`, `media_empty`, `media_length` for a body longer or shorter than its " +
    "`Content-Length`, `filename`), and nothing is stored. Uploads and deletions: 60 a minute per workspace.",
  security: bearerSecurity,
  request: {
    query: z.object({
      filename: z
        .string()
        .max(MAX_FILENAME_CHARS)
        .optional()
        .openapi({ description: "The file's name, as a document shows it.", example: "invoice.pdf" }),
    }),
    headers: z.object({
      "content-type": z
        .string()
        .openapi({ description: `One of: ${ACCEPTED_MEDIA_TYPES.join(", ")}.`, example: "image/jpeg" }),
      "content-length": z.string().openapi({ description: "The file's size in bytes.", example: "48213" }),
    }),
    body: {
      required: true,
      content: {
        "application/octet-stream": {
          schema: z.string().openapi({ format: "binary" }),
          example: "(the file's bytes)",
        },
      },
    },
  },
  responses: {
    201: jsonContent(MediaView, "Stored.", EXAMPLE_MEDIA),
    ...errorResponses(400, 401, 403, 429),
  },
});

const get = createRoute({
  method: "get",
  path: "/media/{id}",
  "x-key-role": "viewer",
  operationId: "getMedia",
  tags: ["Media"],
  summary: "A file's facts",
  description: `404 \`not_found\` for an unknown id, another workspace's, a deleted file and one past its \`expiresAt\`.`,
  security: bearerSecurity,
  request: { params: z.object({ id: MediaId }) },
  responses: { 200: jsonContent(MediaView, "The file.", EXAMPLE_MEDIA), ...errorResponses(401, 404, 429) },
});

const content = createRoute({
  method: "get",
  path: "/media/{id}/content",
  "x-key-role": "viewer",
  operationId: "getMediaContent",
  tags: ["Media"],
  summary: "Download a file's bytes",
  description:
    "Streamed, with the headers of an inbound message's media: its `Content-Type` (images, audio, video and PDF keep " +
    "theirs; any other type is served as `application/octet-stream`), `Content-Length`, `Content-Disposition` " +
    "(`attachment` for documents), a sandboxing `Content-Security-Policy`, `ETag` and `Cache-Control: private, no-cache` " +
    "(send the ETag back in `If-None-Match` for a 304).",
  security: bearerSecurity,
  request: { params: z.object({ id: MediaId }) },
  responses: {
    200: {
      description: "The file's bytes.",
      headers: requestIdHeader,
      content: { "*/*": { schema: z.string().openapi({ format: "binary" }), example: "(the file's bytes)" } },
    },
    304: { description: "`If-None-Match` named the file's `ETag`.", headers: requestIdHeader },
    ...errorResponses(401, 404, 429),
  },
});

const list = createRoute({
  method: "get",
  path: "/media",
  "x-key-role": "viewer",
  operationId: "listMedia",
  tags: ["Media"],
  summary: "List the workspace's files, oldest first",
  description: "Files not expired, in upload order; follow `nextCursor` until it is null.",
  security: bearerSecurity,
  request: {
    query: z.object({
      limit: pageLimit(50, "Page size, 1–100."),
      cursor: PaginationQuery.shape.cursor,
    }),
  },
  responses: {
    200: jsonContent(MediaList, "Files, oldest first.", { data: [EXAMPLE_MEDIA], nextCursor: null }),
    ...errorResponses(400, 401, 429),
  },
});

const remove = createRoute({
  method: "delete",
  path: "/media/{id}",
  "x-key-role": "developer",
  operationId: "deleteMedia",
  tags: ["Media"],
  summary: "Delete a file",
  description:
    "Its bytes and its facts go at once; a message already accepted with it fails if it has not reached the operator " +
    "yet. 404 for an unknown id (or one already deleted). Uploads and deletions: 60 a minute per workspace.",
  security: bearerSecurity,
  request: { params: z.object({ id: MediaId }) },
  responses: { 204: { description: "Deleted.", headers: requestIdHeader }, ...errorResponses(401, 403, 404, 429) },
});

/** The workspace's file, still kept: a 404 otherwise (an expired one says so). */
async function keptMedia(c: Context<AppEnv>, rawId: string): Promise<UploadedMedia> {
  const file = await keptFile(c.env, c.get("principal").workspaceId, rawId);
  if (!file.kept) throw new ApiError("not_found", file.message);
  return file.media;
}

const router = newRouter();
router.openAPIRegistry.registerPath(upload);
router.openAPIRegistry.registerPath(content);

// The upload's body is a file (not JSON) and the download streams one: plain routes documented by
// their definitions; the others are typed.
export const mediaRoutes = router
  .openapi(get, async (c) => c.json(mediaViewOf(await keptMedia(c, c.req.valid("param").id)), 200))
  .openapi(list, async (c) => {
    const { limit, cursor } = c.req.valid("query");
    const after = decodeCursor(cursor);
    const rows = await listUploadedMedia(c.env.DB, c.get("principal").workspaceId, now(), after?.id ?? null, limit + 1);
    return c.json(
      toPage(
        rows,
        limit,
        (m) => ({ sortKey: m.id, id: m.id }),
        (m) => mediaViewOf(m),
      ),
      200,
    );
  })
  .openapi(remove, async (c) => {
    const id = storedUuid(c.req.valid("param").id);
    const outcome = await deleteMedia(c.env, c.get("principal").workspaceId, id);
    throwIfLimited(outcome);
    if (!outcome.deleted) throw new ApiError("not_found", MEDIA_NOT_FOUND);
    limitHeaders(c, outcome.limit);
    return c.body(null, 204);
  })
  .post("/media", async (c) => {
    const filename = c.req.query("filename") ?? null;
    const outcome = await uploadMedia(c.env, c.get("principal").workspaceId, {
      body: c.req.raw.body,
      contentType: c.req.header("content-type") ?? null,
      contentLength: c.req.header("content-length") ?? null,
      filename,
    });
    throwIfLimited(outcome);
    if (outcome.kind === "refused")
      throw new ApiError("invalid_request", outcome.detail.message, { details: [outcome.detail] });
    limitHeaders(c, outcome.limit);
    return c.json(mediaViewOf(outcome.media), 201);
  })
  .get("/media/:id/content", async (c) => {
    const media = await keptMedia(c, c.req.param("id"));
    const bytes = await openKeptFile(c.env, c.get("principal").workspaceId, media);
    if (!bytes) throw new ApiError("not_found", MEDIA_NOT_FOUND);
    return mediaResponse(c, bytes, media.kind === "document" ? "attachment" : "inline");
  });
