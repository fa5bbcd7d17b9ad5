import type { ErrorDetail } from "../lib/errors";
import type { MediaKind } from "../messages/kinds/media";

// What the media store accepts, by the operator's published limits (WhatsApp Cloud API, "Supported
// media types"): each type's kind and largest size, and the first bytes a file of that type starts
// with. Pure: the upload route reads the head of the body and asks here before anything is stored.

const KB = 1024;
const MB = 1024 * 1024;

/**
 * The operator's "Supported media types" table: images JPEG/PNG up to 5 MB; video MP4/3GPP up to
 * 16 MB; audio AAC, AMR, MP3, M4A, OGG (Opus only) up to 16 MB; documents (text, PDF, Word, Excel,
 * PowerPoint) up to 100 MB; stickers WebP, 100 KB static and 500 KB animated.
 */
export const MEDIA_SIZE_LIMITS = {
  image: 5 * MB,
  video: 16 * MB,
  audio: 16 * MB,
  document: 100 * MB,
  staticSticker: 100 * KB,
  animatedSticker: 500 * KB,
} as const;

/** The largest file any type allows: a declared length over it is refused before a byte is read. */
export const MAX_MEDIA_BYTES = MEDIA_SIZE_LIMITS.document;

type Signature = (head: Uint8Array) => boolean;

const ascii = (head: Uint8Array, at: number, text: string): boolean =>
  [...text].every((ch, i) => head[at + i] === ch.charCodeAt(0));
const bytes = (head: Uint8Array, at: number, expected: number[]): boolean =>
  expected.every((b, i) => head[at + i] === b);
const indexOfAscii = (head: Uint8Array, text: string, within: number): number => {
  for (let at = 0; at + text.length <= Math.min(head.length, within); at++) if (ascii(head, at, text)) return at;
  return -1;
};

/** An ISO base media file (MP4, 3GPP, M4A): its first box is `ftyp`. */
const isoMedia: Signature = (head) => ascii(head, 4, "ftyp");
const mp3: Signature = (head) =>
  ascii(head, 0, "ID3") ||
  // An MPEG audio frame: 11 sync bits, a layer other than the reserved 00 (AAC's ADTS has 00).
  (head[0] === 0xff && ((head[1] ?? 0) & 0xe0) === 0xe0 && ((head[1] ?? 0) & 0x06) !== 0);
const aac: Signature = (head) => ascii(head, 0, "ADIF") || (head[0] === 0xff && ((head[1] ?? 0) & 0xf6) === 0xf0);
/** An Ogg stream whose first packet is an Opus header (the operator takes Opus only, not "base audio/ogg"). */
const oggOpus: Signature = (head) => ascii(head, 0, "OggS") && indexOfAscii(head, "OpusHead", HEAD_BYTES) >= 0;
const pdf: Signature = (head) => ascii(head, 0, "%PDF-");
const zip: Signature = (head) => bytes(head, 0, [0x50, 0x4b, 0x03, 0x04]);
/** A legacy Office file (.doc, .xls, .ppt): an OLE compound file. */
const ole: Signature = (head) => bytes(head, 0, [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
/** Text: no NUL byte in its head (a binary file has them early; text has none). */
const text: Signature = (head) => !head.includes(0);
const webp: Signature = (head) => ascii(head, 0, "RIFF") && ascii(head, 8, "WEBP");

interface AcceptedType {
  kind: MediaKind;
  /** What its first bytes are, in words (for the refusal). */
  looksLike: string;
  signature: Signature;
}

/** Each type the operator accepts (the type the upload declares, lower case, without parameters). */
const ACCEPTED: Record<string, AcceptedType> = {
  "image/jpeg": { kind: "image", looksLike: "a JPEG (FF D8 FF)", signature: (h) => bytes(h, 0, [0xff, 0xd8, 0xff]) },
  "image/png": {
    kind: "image",
    looksLike: "a PNG (89 50 4E 47 0D 0A 1A 0A)",
    signature: (h) => bytes(h, 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  },
  "image/webp": { kind: "sticker", looksLike: "a WebP (RIFF….WEBP)", signature: webp },
  "video/mp4": { kind: "video", looksLike: "an MP4 (an ftyp box)", signature: isoMedia },
  "video/3gpp": { kind: "video", looksLike: "a 3GPP file (an ftyp box)", signature: isoMedia },
  // The operator's table spells it video/3gp.
  "video/3gp": { kind: "video", looksLike: "a 3GPP file (an ftyp box)", signature: isoMedia },
  "audio/aac": { kind: "audio", looksLike: "AAC (ADTS or ADIF)", signature: aac },
  "audio/amr": { kind: "audio", looksLike: "AMR (#!AMR)", signature: (h) => ascii(h, 0, "#!AMR") },
  "audio/mpeg": { kind: "audio", looksLike: "MP3 (ID3 or an MPEG frame)", signature: mp3 },
  "audio/mp4": { kind: "audio", looksLike: "M4A (an ftyp box)", signature: isoMedia },
  "audio/ogg": { kind: "audio", looksLike: "Ogg with Opus (OggS … OpusHead)", signature: oggOpus },
  "application/pdf": { kind: "document", looksLike: "a PDF (%PDF-)", signature: pdf },
  "text/plain": { kind: "document", looksLike: "text (no NUL bytes)", signature: text },
  "application/msword": { kind: "document", looksLike: "a Word 97–2003 file (OLE)", signature: ole },
  "application/vnd.ms-excel": { kind: "document", looksLike: "an Excel 97–2003 file (OLE)", signature: ole },
  "application/vnd.ms-powerpoint": { kind: "document", looksLike: "a PowerPoint 97–2003 file (OLE)", signature: ole },
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": {
    kind: "document",
    looksLike: "a .docx (a ZIP: PK 03 04)",
    signature: zip,
  },
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": {
    kind: "document",
    looksLike: "an .xlsx (a ZIP: PK 03 04)",
    signature: zip,
  },
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": {
    kind: "document",
    looksLike: "a .pptx (a ZIP: PK 03 04)",
    signature: zip,
  },
};

/** The content types the store accepts, for the docs and the refusal. */
export const ACCEPTED_MEDIA_TYPES = Object.keys(ACCEPTED);

/** How many first bytes the checks read (an Ogg page header and its OpusHead fit; so does a WebP's VP8X flags). */
export const HEAD_BYTES = 64;

/** A declared `Content-Type` as the store keys it: lower case, parameters (`; charset=…`) dropped. */
export const bareType = (declared: string | null | undefined): string =>
  (declared ?? "").split(";")[0]!.trim().toLowerCase();

/** An animated WebP: an extended (VP8X) file whose animation flag is set, or one with an ANIM chunk in its head. */
export const isAnimatedWebp = (head: Uint8Array): boolean =>
  (ascii(head, 12, "VP8X") && ((head[20] ?? 0) & 0x02) !== 0) || indexOfAscii(head, "ANIM", HEAD_BYTES) >= 0;

export type TypeCheck =
  { ok: true; kind: MediaKind; contentType: string; maxBytes: number } | { ok: false; detail: ErrorDetail };

const refuse = (path: string, rule: string, message: string): TypeCheck => ({
  ok: false,
  detail: { path, rule, message },
});

/** The declared type alone (before any byte is read): accepted or not, and the most bytes the operator allows for it. */
export function checkDeclaredType(declared: string | null | undefined): TypeCheck {
  const type = bareType(declared);
  const accepted = ACCEPTED[type];
  if (!accepted)
    return refuse(
      "Content-Type",
      "media_type",
      type === ""
        ? "Declare the file's type in Content-Type (e.g. image/jpeg)."
        : `${type} is not a media type the operator accepts: ${ACCEPTED_MEDIA_TYPES.join(", ")}.`,
    );
  // A sticker's limit depends on whether it is animated: the larger one until its head is read.
  const maxBytes = accepted.kind === "sticker" ? MEDIA_SIZE_LIMITS.animatedSticker : MEDIA_SIZE_LIMITS[accepted.kind];
  return { ok: true, kind: accepted.kind, contentType: type, maxBytes };
}

/** The size rule of a kind, in words (a sticker's depends on whether it is animated: null, not known yet). */
const limitWords = (kind: MediaKind, animated: boolean | null): string => {
  if (kind === "sticker")
    return animated === null
      ? "a sticker (WebP) may be at most 500 KB animated, 100 KB static"
      : animated
        ? "an animated sticker (WebP) may be at most 500 KB"
        : "a static sticker (WebP) may be at most 100 KB";
  const what = kind === "image" ? "an image" : kind === "audio" ? "audio" : `a ${kind}`;
  return `${what} may be at most ${MEDIA_SIZE_LIMITS[kind] / MB} MB`;
};

/** A file of `length` bytes over its kind's limit, in words (before its head is read). */
export const overLimit = (kind: MediaKind, length: number): string =>
  `The file has ${length} bytes; ${limitWords(kind, null)} (the operator's limit).`;

/**
 * The declared type and length against the file's first bytes (up to HEAD_BYTES, or the whole file
 * when shorter): the bytes must be what the type says (a PNG declared as image/jpeg is refused), and
 * the length within the operator's limit for that type (a sticker's depends on whether it is animated).
 */
export function checkMedia(declared: string | null | undefined, length: number, head: Uint8Array): TypeCheck {
  const byType = checkDeclaredType(declared);
  if (!byType.ok) return byType;
  const accepted = ACCEPTED[byType.contentType]!;
  if (length === 0) return refuse("body", "media_empty", "The file is empty.");
  if (!accepted.signature(head))
    return refuse(
      "body",
      "media_signature",
      `The file's first bytes are not ${accepted.looksLike}, as its Content-Type ${byType.contentType} says.`,
    );
  const animated = accepted.kind === "sticker" && isAnimatedWebp(head);
  const maxBytes =
    accepted.kind === "sticker"
      ? animated
        ? MEDIA_SIZE_LIMITS.animatedSticker
        : MEDIA_SIZE_LIMITS.staticSticker
      : byType.maxBytes;
  if (length > maxBytes)
    return refuse(
      "body",
      "media_size",
      `The file has ${length} bytes; ${limitWords(accepted.kind, animated)} (${maxBytes} bytes, the operator's limit).`,
    );
  return { ok: true, kind: accepted.kind, contentType: byType.contentType, maxBytes };
}
