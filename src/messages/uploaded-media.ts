import { z } from "@hono/zod-openapi";
import { DAY_MS } from "../lib/job-id";
import { MEDIA_KINDS, type MediaKind } from "./kinds/media";

// The media store's vocabulary: what a file a workspace uploaded is (`POST /api/v2/media`), how
// long it is kept and where its bytes live in R2. The store's routes (features/media/) and the
// operator's delivery of a file (its media upload) both read it.

/**
 * How long an uploaded file is kept: 30 days, as the operator keeps a file uploaded to it ("persist
 * for 30 days"): a file we still hold is one the operator can still be given, once per number.
 */
export const UPLOADED_MEDIA_DAYS = 30;
export const UPLOADED_MEDIA_MS = UPLOADED_MEDIA_DAYS * DAY_MS;

/**
 * Where an upload's bytes live in R2 (the archive bucket, beside `messages/` and `media/`): one
 * object per file, named by its id. Its facts are a D1 row (`uploaded_media`): the row is written
 * once the bytes are stored, so a file is there when its row is.
 */
export const uploadKey = (workspaceId: string, mediaId: string): string => `uploads/${workspaceId}/${mediaId}`;

/** An uploaded file as the store reads it back. */
export interface UploadedMedia {
  id: string;
  kind: MediaKind;
  contentType: string;
  size: number;
  sha256: string;
  filename: string | null;
  createdAt: number;
  expiresAt: number;
}

/** Where an uploaded file's bytes are served (relative to the deployment's host). */
export const uploadedMediaContentUrl = (mediaId: string): string => `/api/v2/media/${mediaId}/content`;

/** An uploaded file as the API shows it. */
export const MediaView = z
  .object({
    id: z.string().openapi({ format: "uuid", example: "0193b4f2-7c1e-7a3b-9d2e-5f6a7b8c9d0f" }),
    kind: z.enum(MEDIA_KINDS).openapi({ description: "What a message can carry it as.", example: "image" }),
    contentType: z.string().openapi({ example: "image/jpeg" }),
    size: z.number().int().openapi({ description: "Bytes.", example: 48213 }),
    sha256: z.string().openapi({
      description: "SHA-256 of the bytes as stored, in hex.",
      example: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    }),
    filename: z
      .string()
      .nullable()
      .openapi({ description: "The name given at upload (documents show it).", example: "invoice.pdf" }),
    createdAt: z.string().openapi({ format: "date-time", example: "2026-11-27T09:30:00.000Z" }),
    expiresAt: z.string().openapi({
      format: "date-time",
      description: `When the file is deleted: ${UPLOADED_MEDIA_DAYS} days after its upload. From then on its id answers 404.`,
      example: "2026-12-27T09:30:00.000Z",
    }),
    url: z.string().openapi({
      description: "`GET` it with your API key for the bytes (relative to the API's host).",
      example: "/api/v2/media/0193b4f2-7c1e-7a3b-9d2e-5f6a7b8c9d0f/content",
    }),
  })
  .openapi("Media", { description: "A file in the workspace's media store, to send by its id." });
export type MediaView = z.infer<typeof MediaView>;

export const mediaViewOf = (m: UploadedMedia): MediaView => ({
  id: m.id,
  kind: m.kind,
  contentType: m.contentType,
  size: m.size,
  sha256: m.sha256,
  filename: m.filename,
  createdAt: new Date(m.createdAt).toISOString(),
  expiresAt: new Date(m.expiresAt).toISOString(),
  url: uploadedMediaContentUrl(m.id),
});
