import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { fakeClock } from "../helpers/clock";
import { admin, expectError, json } from "../helpers/http";
import { createTenant } from "../helpers/fixtures";
import { apiV2 } from "../helpers/operator-templates";
import { MEDIA_SIZE_LIMITS } from "../../src/domain/media-rules";
import { ABUSE_LIMITS, bucket, scopes } from "../../src/domain/abuse-limits";
import { takeToken } from "../../src/lib/throttle-client";
import { runScheduledJobs } from "../../src/scheduled/jobs";
import { mediaRetention } from "../../src/scheduled/media-retention";
import { UPLOADED_MEDIA_MS, uploadKey } from "../../src/messages/uploaded-media";

// The media store of API v2: files uploaded once (streamed to R2, hashed on the way), read back,
// listed, deleted, expired after 30 days; every refusal named and nothing stored; another
// workspace's files unknown. Through the real fetch handler, real D1 and R2.

interface MediaView {
  id: string;
  kind: string;
  contentType: string;
  size: number;
  sha256: string;
  filename: string | null;
  createdAt: string;
  expiresAt: string;
  url: string;
}

const JPEG_HEAD = [0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00];
const PNG_HEAD = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d];

/** A file of `size` bytes starting with `head`, the rest a repeating pattern. */
function file(head: number[], size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = i < head.length ? head[i]! : (i * 31 + 7) & 0xff;
  return bytes;
}

const jpeg = (size = 2048) => file(JPEG_HEAD, size);
const hex = (bytes: Uint8Array) => bytesToHex(sha256(bytes));

function upload(
  key: string,
  body: BodyInit | null,
  contentType: string | null,
  opts: { length?: number | null; filename?: string } = {},
): Promise<Response> {
  const headers: Record<string, string> = {};
  if (contentType !== null) headers["Content-Type"] = contentType;
  const length = opts.length === undefined ? (body instanceof Uint8Array ? body.byteLength : null) : opts.length;
  if (length !== null) headers["Content-Length"] = String(length);
  const query = opts.filename === undefined ? "" : `?filename=${encodeURIComponent(opts.filename)}`;
  return apiV2(`/media${query}`, key, { method: "POST", headers, body });
}

async function uploaded(res: Response): Promise<MediaView> {
  expect(res.status, await res.clone().text()).toBe(201);
  return json<MediaView>(res);
}

/** What the store holds for a workspace: its rows and its R2 objects. */
async function stored(workspaceId: string): Promise<{ rows: number; objects: number }> {
  const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM uploaded_media WHERE workspace_id = ?")
    .bind(workspaceId)
    .first<number>("n");
  const listed = await env.ARCHIVE.list({ prefix: `uploads/${workspaceId}/` });
  return { rows: rows ?? 0, objects: listed.objects.length };
}

/**
 * A body of `size` bytes streamed in 64 KiB pieces from a generator (never one buffer of the whole),
 * and the SHA-256 of what it streams (the runtime's DigestStream, fed the same pieces).
 */
async function generated(
  size: number,
  head: number[],
): Promise<{ stream: ReadableStream<Uint8Array>; sha256: string }> {
  const block = file([], 64 * 1024);
  const piece = (at: number) => {
    const bytes = block.slice(0, Math.min(block.byteLength, size - at));
    if (at === 0) bytes.set(head.slice(0, bytes.byteLength));
    return bytes;
  };
  const digest = new crypto.DigestStream("SHA-256");
  const writer = digest.getWriter();
  for (let at = 0; at < size; at += block.byteLength) await writer.write(piece(at));
  await writer.close();
  let at = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= size) return controller.close();
      const bytes = piece(at);
      at += bytes.byteLength;
      controller.enqueue(bytes);
    },
  });
  return { stream, sha256: bytesToHex(new Uint8Array(await digest.digest)) };
}

/** The SHA-256 of an R2 object's bytes, read as a stream. */
async function storedDigest(key: string): Promise<string> {
  const object = await env.ARCHIVE.get(key);
  const digest = new crypto.DigestStream("SHA-256");
  await object!.body.pipeTo(digest);
  return bytesToHex(new Uint8Array(await digest.digest));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("POST /api/v2/media", () => {
  it("stores a file with its id, kind, type, size, sha256 and a 30-day expiry, and serves it back", async () => {
    const clock = fakeClock(Date.parse("2026-11-27T09:00:00.000Z"));
    const t = await createTenant();
    const bytes = jpeg(4096);
    const res = await upload(t.key, bytes, "image/jpeg", { filename: "parcel.jpg" });
    // The workspace's media budget, as every limited write shows its own.
    expect(res.headers.get("RateLimit-Limit")).toBe("60");
    const media = await uploaded(res);
    expect(media).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      kind: "image",
      contentType: "image/jpeg",
      size: 4096,
      sha256: hex(bytes),
      filename: "parcel.jpg",
      createdAt: "2026-11-27T09:00:00.000Z",
      expiresAt: new Date(clock.now() + UPLOADED_MEDIA_MS).toISOString(),
      url: `/api/v2/media/${media.id}/content`,
    });
    expect(await json(await apiV2(`/media/${media.id}`, t.key))).toEqual(media);

    const content = await apiV2(media.url.replace("/api/v2", ""), t.key);
    expect(content.status).toBe(200);
    expect(content.headers.get("Content-Type")).toBe("image/jpeg");
    expect(content.headers.get("Content-Length")).toBe("4096");
    expect(content.headers.get("Content-Disposition")).toContain("inline");
    expect(content.headers.get("Content-Security-Policy")).toBe("default-src 'none'; sandbox");
    expect(content.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(new Uint8Array(await content.arrayBuffer())).toEqual(bytes);
    const etag = content.headers.get("ETag")!;
    const again = await apiV2(media.url.replace("/api/v2", ""), t.key, { headers: { "If-None-Match": etag } });
    expect(again.status).toBe(304);
  });

  it("streams a 16 MB video to R2 from a body it never holds whole, and hashes it on the way", async () => {
    const t = await createTenant();
    const size = MEDIA_SIZE_LIMITS.video;
    const body = await generated(size, [0, 0, 0, 0x18, ...[..."ftypmp42"].map((c) => c.charCodeAt(0))]);
    const media = await uploaded(await upload(t.key, body.stream, "video/mp4", { length: size }));
    expect(media).toMatchObject({ kind: "video", size, sha256: body.sha256 });
    const object = await env.ARCHIVE.head(uploadKey(t.workspaceId, media.id));
    expect(object?.size).toBe(size);
    // The bytes R2 holds hash to the same digest.
    expect(await storedDigest(uploadKey(t.workspaceId, media.id))).toBe(body.sha256);
  });

  it.each([
    ["an unaccepted type", () => jpeg(), "image/gif", "media_type"],
    ["no type", () => jpeg(), null, "media_type"],
    ["a PNG declared as image/jpeg", () => file(PNG_HEAD, 2048), "image/jpeg", "media_signature"],
    ["a JPEG declared as a PDF", () => jpeg(), "application/pdf", "media_signature"],
    [
      "an Ogg file that is not Opus",
      () =>
        file(
          [..."OggS"].map((c) => c.charCodeAt(0)),
          2048,
        ),
      "audio/ogg",
      "media_signature",
    ],
    ["an empty file", () => new Uint8Array(0), "image/png", "media_empty"],
    ["an image over 5 MB", () => jpeg(MEDIA_SIZE_LIMITS.image + 1), "image/jpeg", "media_size"],
    [
      "a static sticker over 100 KB",
      () =>
        file(
          [..."RIFF\0\0\0\0WEBPVP8 "].map((c) => c.charCodeAt(0)),
          MEDIA_SIZE_LIMITS.staticSticker + 1,
        ),
      "image/webp",
      "media_size",
    ],
  ])("refuses %s with a 400 naming the rule, storing nothing", async (_, bytes, type, rule) => {
    const t = await createTenant();
    const res = await upload(t.key, bytes(), type);
    const body = await expectError(res, 400, "invalid_request");
    expect(body.error.details?.[0]?.rule).toBe(rule);
    expect(await stored(t.workspaceId)).toEqual({ rows: 0, objects: 0 });
  });

  it("takes an animated sticker up to 500 KB", async () => {
    const t = await createTenant();
    // VP8X with the animation flag (bit 1 of byte 20).
    const head = [..."RIFF\0\0\0\0WEBPVP8X"].map((c) => c.charCodeAt(0)).concat([10, 0, 0, 0, 0x02]);
    const media = await uploaded(await upload(t.key, file(head, MEDIA_SIZE_LIMITS.staticSticker + 1), "image/webp"));
    expect(media.kind).toBe("sticker");
  });

  it("refuses a body without Content-Length, keeping nothing", async () => {
    const t = await createTenant();
    const chunked = (await generated(4096, JPEG_HEAD)).stream;
    const noLength = await upload(t.key, chunked, "image/jpeg", { length: null });
    expect((await expectError(noLength, 400, "invalid_request")).error.details?.[0]?.rule).toBe("length_required");
    expect(await stored(t.workspaceId)).toEqual({ rows: 0, objects: 0 });
  });

  it.each([
    ["longer than it declared", 256 * 1024, 4096, "The body is longer than its Content-Length (4096 bytes)."],
    // Its first piece alone is past the declared length, before any byte was piped.
    [
      "longer than a declared length its first bytes exceed",
      8192,
      100,
      "The body is longer than its Content-Length (100 bytes).",
    ],
    ["shorter than it declared", 200 * 1024, 256 * 1024, "The body ended before its 262144 declared bytes."],
  ])("refuses a body %s with media_length, keeping nothing", async (_, size, declared, message) => {
    const t = await createTenant();
    const body = (await generated(size, JPEG_HEAD)).stream;
    const res = await upload(t.key, body, "image/jpeg", { length: declared });
    const detail = (await expectError(res, 400, "invalid_request")).error.details?.[0];
    expect(detail).toEqual({ path: "body", rule: "media_length", message });
    expect(await stored(t.workspaceId)).toEqual({ rows: 0, objects: 0 });
  });

  it("keeps nothing of a body cut off halfway (the client gone): the put already under way fails", async () => {
    const t = await createTenant();
    const whole = (await generated(1024 * 1024, JPEG_HEAD)).stream.getReader();
    let sent = 0;
    const cut = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await whole.read();
        if (done || sent >= 512 * 1024) return controller.error(new Error("the connection was reset"));
        sent += value.byteLength;
        controller.enqueue(value);
      },
    });
    const res = await upload(t.key, cut, "image/jpeg", { length: 1024 * 1024 });
    // The Worker sees the body end short of its length.
    const detail = (await expectError(res, 400, "invalid_request")).error.details?.[0];
    expect(detail).toEqual({
      path: "body",
      rule: "media_length",
      message: "The body ended before its 1048576 declared bytes.",
    });
    expect(sent).toBe(512 * 1024);
    expect(await stored(t.workspaceId)).toEqual({ rows: 0, objects: 0 });
  });

  it("moves a file by the runtime's pipe and hashes it through one reused buffer: no chunk becomes a new one", async () => {
    const t = await createTenant();
    const size = MEDIA_SIZE_LIMITS.video;
    const body = await generated(size, [0, 0, 0, 0x18, ...[..."ftypmp42"].map((c) => c.charCodeAt(0))]);
    // A chunk read into a new ArrayBuffer stays in the Worker's memory until the garbage collector
    // frees it, so a loop (or a pipe into the DigestStream, which the runtime drives from
    // JavaScript) over the file grows the memory with its size.
    const reads = vi.spyOn(ReadableStreamDefaultReader.prototype, "read");
    const intoBuffer = vi.spyOn(ReadableStreamBYOBReader.prototype, "read");
    const media = await uploaded(await upload(t.key, body.stream, "video/mp4", { length: size }));
    expect(media).toMatchObject({ size, sha256: body.sha256 });
    // The first-bytes check's read; a loop over the body makes thousands (it arrives in 4 KiB pieces).
    expect(reads.mock.calls.length).toBeLessThanOrEqual(2);
    // The digest's reads: each into the buffer the read before it returned.
    expect(intoBuffer.mock.calls.length).toBeGreaterThanOrEqual(size / (64 * 1024));
    const filled = await Promise.all(intoBuffer.mock.results.map((r) => r.value as Promise<{ value?: Uint8Array }>));
    const fresh = intoBuffer.mock.calls.filter(([view], i) => i > 0 && view.buffer !== filled[i - 1]!.value?.buffer);
    expect(fresh).toHaveLength(0);
  });

  it("names a file name it cannot keep", async () => {
    const t = await createTenant();
    const res = await upload(t.key, jpeg(), "image/jpeg", { filename: "../etc/passwd" });
    expect((await expectError(res, 400, "invalid_request")).error.details?.[0]?.rule).toBe("filename");
    expect(await stored(t.workspaceId)).toEqual({ rows: 0, objects: 0 });
  });

  it("spends the workspace's media budget: past it, 429 with Retry-After and nothing stored", async () => {
    const t = await createTenant();
    const spec = bucket("mediaChange");
    await takeToken(env, scopes.workspace(t.workspaceId), [spec], ABUSE_LIMITS.mediaChange.limit);
    const res = await upload(t.key, jpeg(), "image/jpeg");
    await expectError(res, 429, "rate_limit_exceeded");
    expect(Number(res.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(await stored(t.workspaceId)).toEqual({ rows: 0, objects: 0 });
  });

  it("needs a developer key to upload and delete; a viewer key reads", async () => {
    const t = await createTenant();
    const mine = await uploaded(await upload(t.key, jpeg(), "image/jpeg"));
    const created = await admin(`/workspaces/${t.workspaceId}/api-keys`, {
      method: "POST",
      json: { name: "viewer", role: "viewer" },
    });
    const viewer = (await json<{ key: string }>(created)).key;
    await expectError(await upload(viewer, jpeg(), "image/jpeg"), 403, "insufficient_role");
    await expectError(await apiV2(`/media/${mine.id}`, viewer, { method: "DELETE" }), 403, "insufficient_role");
    expect((await apiV2(`/media/${mine.id}`, viewer)).status).toBe(200);
    expect((await apiV2(`/media/${mine.id}/content`, viewer)).status).toBe(200);
    expect((await apiV2("/media", viewer)).status).toBe(200);
    expect(await stored(t.workspaceId)).toEqual({ rows: 1, objects: 1 });
  });
});

describe("GET, DELETE and lists of /api/v2/media", () => {
  it("lists the workspace's files in upload order, paged with a cursor", async () => {
    const clock = fakeClock(Date.parse("2026-11-27T10:00:00.000Z"));
    const t = await createTenant();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await uploaded(await upload(t.key, jpeg(100 + i), "image/jpeg"))).id);
      clock.advance(1000);
    }
    const first = await json<{ data: MediaView[]; nextCursor: string | null }>(await apiV2("/media?limit=2", t.key));
    expect(first.data.map((m) => m.id)).toEqual(ids.slice(0, 2));
    const second = await json<{ data: MediaView[]; nextCursor: string | null }>(
      await apiV2(`/media?limit=2&cursor=${first.nextCursor}`, t.key),
    );
    expect(second).toEqual({ data: [expect.objectContaining({ id: ids[2] })], nextCursor: null });
    await expectError(await apiV2("/media?cursor=forged", t.key), 400, "invalid_request");
  });

  it("deletes a file's bytes and facts; its id then answers 404", async () => {
    const t = await createTenant();
    const media = await uploaded(await upload(t.key, jpeg(), "image/jpeg"));
    const res = await apiV2(`/media/${media.id}`, t.key, { method: "DELETE" });
    expect(res.status).toBe(204);
    expect(await stored(t.workspaceId)).toEqual({ rows: 0, objects: 0 });
    await expectError(await apiV2(`/media/${media.id}`, t.key), 404, "not_found");
    await expectError(await apiV2(`/media/${media.id}/content`, t.key), 404, "not_found");
    await expectError(await apiV2(`/media/${media.id}`, t.key, { method: "DELETE" }), 404, "not_found");
  });

  it("keeps another workspace's files unknown: read, download, delete and list", async () => {
    const a = await createTenant();
    const b = await createTenant();
    const media = await uploaded(await upload(a.key, jpeg(), "image/jpeg"));
    await expectError(await apiV2(`/media/${media.id}`, b.key), 404, "not_found");
    await expectError(await apiV2(`/media/${media.id}/content`, b.key), 404, "not_found");
    await expectError(await apiV2(`/media/${media.id}`, b.key, { method: "DELETE" }), 404, "not_found");
    expect(await json(await apiV2("/media", b.key))).toEqual({ data: [], nextCursor: null });
    expect(await stored(a.workspaceId)).toEqual({ rows: 1, objects: 1 });
  });

  it("answers 404 for a file past its expiry, and the hourly job deletes its bytes and row", async () => {
    const clock = fakeClock(Date.parse("2026-11-27T11:00:00.000Z"));
    const t = await createTenant();
    const old = await uploaded(await upload(t.key, jpeg(), "image/jpeg"));
    clock.advance(UPLOADED_MEDIA_MS - 1000);
    const young = await uploaded(await upload(t.key, jpeg(), "image/jpeg"));
    clock.advance(1000);
    const expired = await expectError(await apiV2(`/media/${old.id}`, t.key), 404, "not_found");
    expect(expired.error.message).toContain("expired");
    await expectError(await apiV2(`/media/${old.id}/content`, t.key), 404, "not_found");
    expect((await json<{ data: MediaView[] }>(await apiV2("/media", t.key))).data.map((m) => m.id)).toEqual([young.id]);

    const outcomes = await runScheduledJobs(env, clock.now(), [mediaRetention]);
    expect(outcomes).toEqual([{ name: "media-retention", ok: true, handled: expect.any(Number) }]);
    expect(await env.ARCHIVE.head(uploadKey(t.workspaceId, old.id))).toBeNull();
    expect(await stored(t.workspaceId)).toEqual({ rows: 1, objects: 1 });
    expect((await apiV2(`/media/${young.id}`, t.key)).status).toBe(200);
  });
});
