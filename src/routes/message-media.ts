import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bearerSecurity, errorResponses, newRouter, requestIdHeader } from "../lib/openapi";
import { ApiError, foundOr404 } from "../lib/errors";
import { rateLimited } from "../lib/throttle-client";
import { EXAMPLE } from "../lib/openapi-examples";
import { contentDisposition, servedContentType } from "../messages/inbound-media";
import { messageMedia, type MediaDownload, type MessageMedia } from "../engine/media-downloads";

/**
 * Whether an `If-None-Match` header names `etag` (RFC 9110 §13.1.2: weak comparison, so `W/"x"`
 * matches `"x"`; `*` matches any current file).
 */
export function noneMatchHits(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  return header.split(",").some((tag) => tag.trim() === "*" || opaque(tag) === opaque(etag));
}

/**
 * A response that carries a media file: its length and name, and a type a browser never runs as a
 * page or a script of ours (servedContentType: the sender's own for images, audio, video and PDF,
 * `application/octet-stream` otherwise), sandboxed whatever it is (a document without scripts or
 * an origin), not readable by another site's page (`Cross-Origin-Resource-Policy`). Our copy is
 * cached by the caller only, and checked with us on each use (`no-cache` with its ETag, answered
 * 304 while it is the same): a revoked key or a message gone from history stops it at once. Bytes
 * fetched through from the operator are not cached at all.
 */
export function mediaResponse(
  c: Context,
  media: Extract<MediaDownload, { kind: "bytes" }>,
  disposition: "inline" | "attachment",
): Response {
  const headers = new Headers({
    "Content-Type": servedContentType(media.contentType),
    "Content-Disposition": contentDisposition(disposition, media.filename),
    "Content-Security-Policy": MEDIA_CSP,
    "Cross-Origin-Resource-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": media.source === "copy" ? "private, no-cache" : "private, no-store",
  });
  if (media.etag) {
    headers.set("ETag", media.etag);
    if (noneMatchHits(c.req.header("If-None-Match"), media.etag)) {
      // The caller holds these bytes already: none are read from R2.
      void media.body.cancel();
      headers.delete("Content-Type");
      headers.delete("Content-Disposition");
      return c.body(null, 304, Object.fromEntries(headers));
    }
  }
  if (media.size !== null) headers.set("Content-Length", String(media.size));
  return c.body(media.body, 200, Object.fromEntries(headers));
}

/** A media file opened on its own is a document with no scripts, no resources and an origin of its own. */
export const MEDIA_CSP = "default-src 'none'; sandbox";

/** The message's media or a 404 that says why there is none (another workspace's id reads as unknown). */
function mediaOr404(found: MessageMedia | null): MediaDownload & { kind: "bytes" } {
  const { media } = foundOr404(found, "Message");
  if (!media)
    throw new ApiError(
      "not_found",
      "This message has no media (only images, audio, video, documents and stickers have).",
    );
  if (media.kind === "unavailable") throw new ApiError("not_found", media.message);
  if (media.kind === "limited") throw rateLimited(media.refusal.decision, media.refusal.what);
  return media;
}

const download = createRoute({
  method: "get",
  path: "/messages/{id}/media",
  "x-key-role": "viewer",
  operationId: "getMessageMedia",
  tags: ["Messages"],
  summary: "Download an inbound message's media",
  description:
    "The file of an inbound image, audio, video, document or sticker, streamed, with its type (`Content-Type`), " +
    "length and name (`Content-Disposition`: `attachment` with the sender's file name for documents, `inline` otherwise). " +
    "We copy each item when it arrives and keep it as long as the message (the plan's history window); until the copy " +
    "is there, the file is fetched from the operator (which keeps it 7 days). 404 `not_found` for an unknown message, " +
    "one without media, and media we did not keep; the message says which (over the plan's size cap, the copy failed, " +
    "the operator's copy expired, or not copied yet: retry in a few seconds). Images, audio, video and PDF keep their " +
    "type; any other type the sender declared is served as `application/octet-stream`. Our copy carries an `ETag` and " +
    "`Cache-Control: private, no-cache`: send it back in `If-None-Match` to get 304 (no body) while the file is the same.",
  security: bearerSecurity,
  request: {
    params: z.object({
      id: z
        .string()
        .openapi({ description: "An inbound message's id.", format: "uuid", example: EXAMPLE.inboundMessageId }),
    }),
  },
  responses: {
    200: {
      description: "The file's bytes.",
      headers: {
        ...requestIdHeader,
        "Content-Length": {
          description: "The file's size in bytes.",
          schema: { type: "integer", minimum: 0 },
          example: 48213,
        },
        "Content-Disposition": {
          description: "`attachment` with the file name for documents, `inline` for other media.",
          schema: { type: "string" },
          example: "attachment; filename=\"invoice.pdf\"; filename*=UTF-8''invoice.pdf",
        },
      },
      content: {
        "*/*": { schema: z.string().openapi({ format: "binary" }), example: "%PDF-1.7 … (the file's bytes)" },
      },
    },
    304: {
      description: "`If-None-Match` named the file's current `ETag`: the copy the caller holds is still this file.",
      headers: {
        ...requestIdHeader,
        ETag: {
          description: "The file's entity tag.",
          schema: { type: "string" },
          example: '"5d41402abc4b2a76b9719d911017c592"',
        },
      },
    },
    ...errorResponses(401, 404, 429),
  },
});

const router = newRouter();
router.openAPIRegistry.registerPath(download);

// A typed route answers JSON; this one streams the file, so it is a plain route documented by its definition.
export const messageMediaRoutes = router.get("/messages/:id/media", async (c) => {
  const { workspaceId } = c.get("principal");
  const found = await messageMedia(c.env, workspaceId, c.req.param("id"));
  const media = mediaOr404(found);
  return mediaResponse(c, media, found?.type === "document" ? "attachment" : "inline");
});
