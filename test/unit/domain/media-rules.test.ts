import { describe, expect, it } from "vitest";
import {
  bareType,
  checkDeclaredType,
  checkMedia,
  isAnimatedWebp,
  MEDIA_SIZE_LIMITS,
} from "../../../src/domain/media-rules";

// What the media store accepts: the operator's types and sizes, and each type's first bytes.

const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0));
const head = (...parts: (number[] | string)[]) =>
  new Uint8Array(parts.flatMap((p) => (typeof p === "string" ? ascii(p) : p)));

const HEADS: Record<string, Uint8Array> = {
  "image/jpeg": head([0xff, 0xd8, 0xff, 0xe0]),
  "image/png": head([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  "image/webp": head("RIFF", [0, 0, 0, 0], "WEBPVP8 "),
  "video/mp4": head([0, 0, 0, 0x18], "ftypmp42"),
  "video/3gpp": head([0, 0, 0, 0x18], "ftyp3gp5"),
  "audio/aac": head([0xff, 0xf1, 0x50, 0x80]),
  "audio/amr": head("#!AMR\n"),
  "audio/mpeg": head("ID3", [4, 0]),
  "audio/mp4": head([0, 0, 0, 0x18], "ftypM4A "),
  "audio/ogg": head("OggS", new Array<number>(24).fill(0), "OpusHead"),
  "application/pdf": head("%PDF-1.7"),
  "text/plain": head("Hello, world"),
  "application/msword": head([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]),
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": head([0x50, 0x4b, 0x03, 0x04]),
};

describe("checkMedia", () => {
  it.each(Object.entries(HEADS))("accepts %s whose first bytes say so", (type, bytes) => {
    expect(checkMedia(type, 1000, bytes)).toMatchObject({ ok: true, contentType: type });
  });

  it("reads the declared type without its parameters or case", () => {
    expect(bareType("Text/Plain; charset=utf-8")).toBe("text/plain");
    expect(checkMedia("Text/Plain; charset=utf-8", 10, HEADS["text/plain"]!)).toMatchObject({
      ok: true,
      kind: "document",
    });
  });

  it("refuses first bytes of another type than declared, naming media_signature", () => {
    expect(checkMedia("image/jpeg", 1000, HEADS["image/png"]!)).toMatchObject({
      ok: false,
      detail: { path: "body", rule: "media_signature" },
    });
    // Ogg that is not Opus (Vorbis): the operator takes Opus only.
    expect(checkMedia("audio/ogg", 1000, head("OggS", new Array<number>(24).fill(0), [1], "vorbis"))).toMatchObject({
      ok: false,
      detail: { rule: "media_signature" },
    });
    expect(checkMedia("text/plain", 10, head("a", [0], "b"))).toMatchObject({ ok: false });
  });

  it("holds each kind to the operator's size, a sticker by whether it is animated", () => {
    expect(checkMedia("image/png", MEDIA_SIZE_LIMITS.image, HEADS["image/png"]!).ok).toBe(true);
    expect(checkMedia("image/png", MEDIA_SIZE_LIMITS.image + 1, HEADS["image/png"]!)).toMatchObject({
      ok: false,
      detail: { rule: "media_size" },
    });
    expect(checkMedia("video/mp4", MEDIA_SIZE_LIMITS.video + 1, HEADS["video/mp4"]!).ok).toBe(false);
    expect(checkMedia("application/pdf", MEDIA_SIZE_LIMITS.document, HEADS["application/pdf"]!).ok).toBe(true);
    const animated = head("RIFF", [0, 0, 0, 0], "WEBPVP8X", [10, 0, 0, 0, 0x02]);
    expect(isAnimatedWebp(animated)).toBe(true);
    expect(isAnimatedWebp(HEADS["image/webp"]!)).toBe(false);
    expect(checkMedia("image/webp", MEDIA_SIZE_LIMITS.staticSticker + 1, HEADS["image/webp"]!).ok).toBe(false);
    expect(checkMedia("image/webp", MEDIA_SIZE_LIMITS.staticSticker + 1, animated).ok).toBe(true);
    expect(checkMedia("image/webp", MEDIA_SIZE_LIMITS.animatedSticker + 1, animated).ok).toBe(false);
  });

  it("refuses a type the operator does not take, or none, naming media_type", () => {
    expect(checkDeclaredType("image/gif")).toMatchObject({
      ok: false,
      detail: { path: "Content-Type", rule: "media_type" },
    });
    expect(checkDeclaredType(null)).toMatchObject({ ok: false, detail: { rule: "media_type" } });
    expect(checkDeclaredType("image/webp")).toEqual({
      ok: true,
      kind: "sticker",
      contentType: "image/webp",
      maxBytes: MEDIA_SIZE_LIMITS.animatedSticker,
    });
  });

  it("refuses an empty file", () => {
    expect(checkMedia("image/png", 0, new Uint8Array(0))).toMatchObject({ ok: false, detail: { rule: "media_empty" } });
  });
});
