import { z } from "@hono/zod-openapi";
import type { OutboundContent } from "../content";
import { boundedText, publicHttpsLink } from "./fields";

// Media messages sent by a link the operator fetches, or by the id of a file of the workspace's
// media store (`mediaId`, POST /api/v2/media: the number uploads it to the operator when it sends):
// image, video, audio (voice notes too), document and sticker. The operator's shapes and limits ("Image messages", "Document messages",
// … in the WhatsApp Cloud API's "Messages" reference): `{"link", "caption"?, "filename"?}` under
// the type's name; a caption on images, videos and documents only, at most 1,024 characters; a
// document's file name as the recipient sees it. The file's type and size are the operator's to
// check when it fetches the link (image 5 MB JPEG/PNG, video 16 MB MP4/3GP, audio 16 MB
// AAC/AMR/MP3/M4A/OGG-Opus, document 100 MB, sticker WebP 100 KB static / 500 KB animated):
// a file it refuses fails the message with the operator's media error (operator/error-codes.ts).

export const MEDIA_KINDS = ["image", "video", "audio", "document", "sticker"] as const;
export type MediaKind = (typeof MEDIA_KINDS)[number];

/** The operator's limits on a media message's text. */
export const MEDIA_LIMITS = {
  /** "Media asset caption text. Maximum 1024 characters." */
  caption: 1024,
  /** A document's name as the recipient sees it (the operator documents up to 240 characters). */
  filename: 240,
} as const;

const link = (kind: MediaKind) =>
  publicHttpsLink(`${kind}.link`).openapi({ description: "An https URL of a public host; the operator fetches it." });
const caption = (kind: MediaKind) =>
  boundedText(`${kind}.caption`, MEDIA_LIMITS.caption, {
    description: "Shown under the media; 1 to 1,024 characters.",
  }).optional();

const objectError = (kind: MediaKind) => ({ error: `${kind} must be an object with a link or a mediaId.` });

/** A media store's file id (a UUID), written without a flag so that the OpenAPI document's pattern is the same rule. */
export const MEDIA_ID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** A file of the workspace's media store, by the id its upload answered (a UUID). */
const mediaId = (kind: MediaKind) =>
  z
    .string({ error: `${kind}.mediaId must be a string.` })
    .regex(MEDIA_ID_PATTERN, { error: `${kind}.mediaId must be the id POST /media answered.` })
    .optional()
    .openapi({
      description: "Instead of `link`: the id of a file uploaded to the media store (`POST /media`).",
      format: "uuid",
      example: "0193b4f2-7c1e-7a3b-9d2e-5f6a7b8c9d0f",
    });

/** Exactly one source: a link the operator fetches, or a file of the media store. */
const oneSource =
  (kind: MediaKind) =>
  (m: { link?: string | undefined; mediaId?: string | undefined }, ctx: z.RefinementCtx): void => {
    if ((m.link === undefined) === (m.mediaId === undefined))
      ctx.addIssue({
        code: "custom",
        path: [m.link === undefined ? "link" : "mediaId"],
        message: `${kind} takes exactly one of link and mediaId.`,
        params: { rule: m.link === undefined ? "required" : "one_of" },
      });
  };

export const ImageContent = z
  .strictObject(
    { link: link("image").optional(), mediaId: mediaId("image"), caption: caption("image") },
    objectError("image"),
  )
  .superRefine(oneSource("image"))
  .openapi("ImageContent");
export const VideoContent = z
  .strictObject(
    { link: link("video").optional(), mediaId: mediaId("video"), caption: caption("video") },
    objectError("video"),
  )
  .superRefine(oneSource("video"))
  .openapi("VideoContent");
export const AudioContent = z
  .strictObject({ link: link("audio").optional(), mediaId: mediaId("audio") }, objectError("audio"))
  .superRefine(oneSource("audio"))
  .openapi("AudioContent", { description: "A voice note or an audio file; the operator takes no caption for it." });
export const DocumentContent = z
  .strictObject(
    {
      link: link("document").optional(),
      mediaId: mediaId("document"),
      caption: caption("document"),
      filename: boundedText("document.filename", MEDIA_LIMITS.filename, {
        description: "The file's name as the recipient sees it (its extension tells their phone how to open it).",
        example: "invoice-1042.pdf",
      }).optional(),
    },
    objectError("document"),
  )
  .superRefine(oneSource("document"))
  .openapi("DocumentContent");
export const StickerContent = z
  .strictObject({ link: link("sticker").optional(), mediaId: mediaId("sticker") }, objectError("sticker"))
  .superRefine(oneSource("sticker"))
  .openapi("StickerContent", { description: "A WebP sticker; the operator takes no caption for it." });

export const MEDIA_CONTENT = {
  image: ImageContent,
  video: VideoContent,
  audio: AudioContent,
  document: DocumentContent,
  sticker: StickerContent,
} as const;

export type MediaRequest = {
  link?: string | undefined;
  mediaId?: string | undefined;
  caption?: string | undefined;
  filename?: string | undefined;
};

/**
 * What a media send records: the operator's object as its `content`, and a text summary as its
 * `body` (`[image] caption`, `[document] invoice.pdf`) for what shows text only (a v1 view, the
 * archive). By link, the operator's object is in the request's own words, which the v2 view shows
 * under the type's name (no `details`). By `mediaId`, the operator's object names our file
 * (`{"id": <our id>}`, which the number replaces with the operator's id of it when it sends) and
 * `details` keeps the request's words for the view. `storedName`: the stored file's name, which a
 * document sent by `mediaId` without a `filename` shows.
 */
export function mediaContent(
  kind: MediaKind,
  request: MediaRequest,
  storedName: string | null = null,
): OutboundContent {
  const filename =
    request.filename ?? (kind === "document" && request.mediaId !== undefined ? storedName : null) ?? undefined;
  const rest: Record<string, string> = {};
  if (request.caption !== undefined) rest.caption = request.caption;
  if (filename !== undefined) rest.filename = filename;
  const summary = [`[${kind}]`, filename, request.caption].filter((s) => s !== undefined).join(" ");
  if (request.mediaId !== undefined)
    return {
      type: kind,
      body: summary,
      content: JSON.stringify({ id: request.mediaId, ...rest }),
      details: JSON.stringify({ [kind]: { mediaId: request.mediaId, ...rest } }),
    };
  return {
    type: kind,
    body: summary,
    content: JSON.stringify({ link: request.link, ...rest }),
    details: null,
  };
}
