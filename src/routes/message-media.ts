import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { bearerSecurity, errorResponses, newRouter, requestIdHeader } from "../lib/openapi";
import { ApiError, foundOr404 } from "../lib/errors";
import { EXAMPLE } from "../lib/openapi-examples";
import { findByUuid } from "../domain/job-id";
import { contentDisposition } from "../domain/inbound-media";
import { openMedia, type MediaDownload } from "../domain/media-download";
import { workspaceStub } from "../durable-objects/stubs";
import type { MessageRow } from "../durable-objects/workspace/record";

/**
 * A response that carries a media file: its type, length and name, cacheable by the caller only
 * (our copy never changes), and never run as a page of ours if opened in a browser (a sandboxed
 * document without scripts, whatever its type claims).
 */
export function mediaResponse(
  c: Context,
  media: Extract<MediaDownload, { kind: "bytes" }>,
  disposition: "inline" | "attachment",
): Response {
  const headers = new Headers({
    "Content-Type": media.contentType,
    "Content-Disposition": contentDisposition(disposition, media.filename),
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cache-Control": media.source === "copy" ? "private, max-age=3600" : "private, no-store",
  });
  if (media.size !== null) headers.set("Content-Length", String(media.size));
  if (media.etag) headers.set("ETag", media.etag);
  return c.body(media.body, 200, Object.fromEntries(headers));
}

/** The message's media or a 404 that says why there is none (another workspace's id reads as unknown). */
export async function mediaOr404(
  env: Env,
  workspaceId: string,
  row: MessageRow | null,
): Promise<MediaDownload & { kind: "bytes" }> {
  const found = foundOr404(row, "Message");
  const media = await openMedia(env, workspaceId, found);
  if (!media)
    throw new ApiError(
      "not_found",
      "This message has no media (only images, audio, video, documents and stickers have).",
    );
  if (media.kind === "unavailable") throw new ApiError("not_found", media.message);
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
    "the operator's copy expired, or not copied yet: retry in a few seconds).",
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
      description: "The file's bytes, in its own type.",
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
    ...errorResponses(401, 404, 429),
  },
});

const router = newRouter();
router.openAPIRegistry.registerPath(download);

// A typed route answers JSON; this one streams the file, so it is a plain route documented by its definition.
export const messageMediaRoutes = router.get("/messages/:id/media", async (c) => {
  const { workspaceId } = c.get("principal");
  const stub = workspaceStub(c.env, workspaceId);
  const row = await findByUuid(c.req.param("id"), (stored) => stub.getMessage(stored));
  const media = await mediaOr404(c.env, workspaceId, row);
  return mediaResponse(c, media, row?.type === "document" ? "attachment" : "inline");
});
