import { z } from "@hono/zod-openapi";
import type { OutboundContent } from "../content";
import { boundedText, publicHttpsLink } from "./fields";

// Media messages sent by a link the operator fetches: image, video, audio (voice notes too),
// document and sticker. The operator's shapes and limits ("Image messages", "Document messages",
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

const objectError = (kind: MediaKind) => ({ error: `${kind} must be an object with a link.` });

export const ImageContent = z
  .strictObject({ link: link("image"), caption: caption("image") }, objectError("image"))
  .openapi("ImageContent");
export const VideoContent = z
  .strictObject({ link: link("video"), caption: caption("video") }, objectError("video"))
  .openapi("VideoContent");
export const AudioContent = z
  .strictObject({ link: link("audio") }, objectError("audio"))
  .openapi("AudioContent", { description: "A voice note or an audio file; the operator takes no caption for it." });
export const DocumentContent = z
  .strictObject(
    {
      link: link("document"),
      caption: caption("document"),
      filename: boundedText("document.filename", MEDIA_LIMITS.filename, {
        description: "The file's name as the recipient sees it (its extension tells their phone how to open it).",
        example: "invoice-1042.pdf",
      }).optional(),
    },
    objectError("document"),
  )
  .openapi("DocumentContent");
export const StickerContent = z
  .strictObject({ link: link("sticker") }, objectError("sticker"))
  .openapi("StickerContent", { description: "A WebP sticker; the operator takes no caption for it." });

export const MEDIA_CONTENT = {
  image: ImageContent,
  video: VideoContent,
  audio: AudioContent,
  document: DocumentContent,
  sticker: StickerContent,
} as const;

export type MediaRequest = { link: string; caption?: string | undefined; filename?: string | undefined };

/**
 * What a media send records: the operator's object as its `content` (in the request's own words,
 * which the v2 view shows under the type's name: no `details`), and a text summary as its `body`
 * (`[image] caption`, `[document] invoice.pdf`) for what shows text only (a v1 view, the archive).
 */
export function mediaContent(kind: MediaKind, request: MediaRequest): OutboundContent {
  const payload: Record<string, string> = { link: request.link };
  if (request.caption !== undefined) payload.caption = request.caption;
  if (request.filename !== undefined) payload.filename = request.filename;
  const summary = [`[${kind}]`, request.filename, request.caption].filter((s) => s !== undefined).join(" ");
  return {
    type: kind,
    body: summary,
    content: JSON.stringify(payload),
    details: null,
  };
}
