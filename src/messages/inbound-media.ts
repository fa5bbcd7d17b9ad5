import { z } from "@hono/zod-openapi";

/** Inbound types whose content is a file the operator holds (by a media id that expires after 7 days). */
export const MEDIA_TYPES = ["image", "audio", "video", "document", "sticker"] as const;
export type MediaType = (typeof MEDIA_TYPES)[number];
export const isMediaType = (type: string): type is MediaType => (MEDIA_TYPES as readonly string[]).includes(type);

/** How long the operator keeps a media id of an inbound message (its documentation: 7 days). */
export const OPERATOR_MEDIA_DAYS = 7;

/** A plan's bounds on copies: the largest item, and the bytes copied per UTC day of the messages (the plans table). */
export interface MediaCaps {
  maxItemBytes: number;
  dailyBytes: number;
}

/**
 * Where the copy of an item stands (the record's `details.media.copy`):
 * - `pending`: recorded, not copied yet (the copy job is queued);
 * - `copying`: its size is known and counted against the day's bytes; the bytes are on their way to R2;
 * - `stored`: in R2 (media-keys.ts), `size` bytes of `contentType`;
 * - `over_cap`: not copied: larger than the plan's item cap, or past the day's bytes;
 * - `failed`: not copied: the operator no longer had it, or every attempt failed.
 */
export const MediaCopy = z.discriminatedUnion("state", [
  z.object({ state: z.literal("pending") }),
  z.object({ state: z.literal("copying"), size: z.number().int().nonnegative(), contentType: z.string() }),
  z.object({
    state: z.literal("stored"),
    size: z.number().int().nonnegative(),
    contentType: z.string(),
    at: z.number(),
  }),
  z.object({
    state: z.literal("over_cap"),
    size: z.number().int().nonnegative(),
    cap: z.enum(["item", "day"]),
    capBytes: z.number().int().nonnegative(),
  }),
  z.object({ state: z.literal("failed"), reason: z.string() }),
]);
export type MediaCopy = z.infer<typeof MediaCopy>;

/**
 * An inbound item as the record keeps it (`details.media`): what the operator's webhook said of it
 * (its media id, type, hash, caption, filename, size when given) and where our copy stands.
 */
export const StoredMedia = z.object({
  id: z.string().min(1),
  mimeType: z.string().nullable(),
  sha256: z.string().nullable(),
  caption: z.string().nullable(),
  filename: z.string().nullable(),
  size: z.number().int().nonnegative().nullable(),
  copy: MediaCopy,
});
export type StoredMedia = z.infer<typeof StoredMedia>;

/** The media of a record's `details` JSON, or null (none, or a shape this release does not read). */
export function storedMediaOf(details: string | null | undefined): StoredMedia | null {
  if (!details) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(details);
  } catch {
    return null;
  }
  if (typeof parsed !== "object" || parsed === null || !("media" in parsed)) return null;
  const media = StoredMedia.safeParse(parsed.media);
  return media.success ? media.data : null;
}

/** The record's `details` JSON with its media replaced (every other key kept as is). */
export function withStoredMedia(details: string | null, media: StoredMedia): string {
  const parsed: unknown = details ? JSON.parse(details) : {};
  const rest = typeof parsed === "object" && parsed !== null ? parsed : {};
  return JSON.stringify({ ...rest, media });
}

/** Where a message's media is served (relative to the deployment's host). */
export const mediaUrl = (messageId: string): string => `/api/v1/messages/${messageId}/media`;

const MEDIA_FACTS = {
  mimeType: z
    .string()
    .nullable()
    .openapi({ description: "The operator's MIME type of the file.", example: "image/jpeg" }),
  caption: z.string().nullable().openapi({ description: "The sender's caption (images, videos, documents)." }),
  filename: z.string().nullable().openapi({ description: "The document's file name, as the sender named it." }),
  sha256: z.string().nullable().openapi({ description: "The operator's SHA-256 of the file, when it gives one." }),
  url: z.string().openapi({
    description: "`GET` it with your API key for the bytes (relative to the API's host).",
    example: "/api/v1/messages/0193b4f2-7c1e-7a3b-9d2e-5f6a7b8c9d0e/media",
  }),
};

/** The media facts of a `message.received` event: what was known on receipt (a replay shows the same). */
export const ReceivedMedia = z
  .object({
    ...MEDIA_FACTS,
    size: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "Bytes, when the operator's webhook gave it; `GET /messages/{id}` has it once copied." }),
  })
  .openapi("ReceivedMedia", {
    description:
      "The file of an image, audio, video, document or sticker, as known on receipt (null for other types; a replay " +
      "shows the same). `GET` its `url` for the bytes; `GET /messages/{id}` says whether our copy is there.",
  });
export type ReceivedMedia = z.infer<typeof ReceivedMedia>;

export const MEDIA_STATUSES = ["pending", "stored", "over_cap", "failed"] as const;

/** The media of an inbound message as `GET /messages` shows it: the facts, and where our copy stands. */
export const InboundMedia = z
  .object({
    ...MEDIA_FACTS,
    size: z.number().int().nullable().openapi({ description: "Bytes (known once the copy started)." }),
    available: z.boolean().openapi({ description: "Whether our copy is there: `url` serves it." }),
    status: z.enum(MEDIA_STATUSES).openapi({
      description:
        "`pending`: not copied yet (`url` fetches it from the operator meanwhile, for 7 days after receipt); `stored`: copied, " +
        "kept as long as the message; `over_cap`: not kept, larger than the plan allows (per item or per day); " +
        "`failed`: not kept, the operator no longer had it or kept failing.",
    }),
  })
  .openapi("InboundMedia", {
    description:
      "The file of an image, audio, video, document or sticker (null for other types): `url` serves it, and " +
      "`status` says whether we kept a copy.",
  });
export type InboundMedia = z.infer<typeof InboundMedia>;

export function receivedMediaOf(messageId: string, m: StoredMedia): ReceivedMedia {
  return {
    mimeType: m.mimeType,
    caption: m.caption,
    filename: m.filename,
    sha256: m.sha256,
    url: mediaUrl(messageId),
    size: m.size,
  };
}

export function mediaViewOf(messageId: string, m: StoredMedia): InboundMedia {
  const copy = m.copy;
  return {
    mimeType: copy.state === "stored" ? copy.contentType : m.mimeType,
    caption: m.caption,
    filename: m.filename,
    sha256: m.sha256,
    url: mediaUrl(messageId),
    size: copy.state === "pending" || copy.state === "failed" ? m.size : copy.size,
    available: copy.state === "stored",
    status: copy.state === "copying" ? "pending" : copy.state,
  };
}

/** A MIME type, or null when it is not one (it goes into a response header). */
export function cleanContentType(value: string | null | undefined): string | null {
  if (!value || value.length > 255) return null;
  const token = "[A-Za-z0-9!#$&^_.+-]+";
  const pattern = new RegExp(`^${token}/${token}(\\s*;\\s*${token}=(${token}|"[^"\\\\\\r\\n]*"))*$`);
  return pattern.test(value.trim()) ? value.trim() : null;
}

/**
 * The types a media file is served as, by their essence (the type without parameters): the image,
 * audio and video types the operator accepts (WhatsApp Cloud API, "Supported media types") and PDF,
 * none of which a browser runs as script or renders as a page of ours. Anything else the sender
 * declared (a document's type is whatever the sender's phone said: `text/html`, `text/javascript`,
 * `image/svg+xml`) is served as `application/octet-stream`, which a browser only downloads: the
 * same-origin dashboard never serves a customer's user a script or a page under its own policy.
 */
const SERVED_AS_DECLARED: ReadonlySet<string> = new Set([
  "image/jpeg",
  "image/png",
  "image/webp",
  // Not one the operator sends (an animated GIF arrives as video/mp4), but the dashboard shows it inline.
  "image/gif",
  "audio/aac",
  "audio/amr",
  "audio/mp4",
  "audio/mpeg",
  "audio/ogg",
  "video/mp4",
  "video/3gpp",
  "application/pdf",
]);

/** The Content-Type a media file is served with: its own when on the list above, else `application/octet-stream`. */
export function servedContentType(contentType: string): string {
  const essence = contentType.split(";")[0]!.trim().toLowerCase();
  return SERVED_AS_DECLARED.has(essence) ? contentType : "application/octet-stream";
}

/** A file name for the download: the document's own, or one made of the type and the message id. */
export function downloadName(messageId: string, type: string, m: Pick<StoredMedia, "filename">, contentType: string) {
  if (m.filename && m.filename.trim()) return m.filename.trim().slice(0, 200);
  const subtype = /^[^/]+\/([A-Za-z0-9]{1,10})/.exec(contentType)?.[1]?.toLowerCase();
  return `${type}-${messageId}${subtype ? `.${subtype}` : ""}`;
}

/**
 * A Content-Disposition header naming `filename` safely: an ASCII fallback (quotes, backslashes and
 * anything outside printable ASCII replaced) and the exact name in RFC 8187 form.
 */
export function contentDisposition(kind: "inline" | "attachment", filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  const exact = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${exact}`;
}

/** A queued copy of one inbound item (queue `media-copies`): ids only, the record holds the rest. */
export const MediaCopyJob = z.object({
  workspaceId: z.string().min(1),
  messageId: z.string().min(1),
  channelNumberId: z.string().min(1),
  mediaId: z.string().min(1),
});
export type MediaCopyJob = z.infer<typeof MediaCopyJob>;
