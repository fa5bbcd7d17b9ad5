import { now } from "../../lib/clock";
import { newUuidV7 } from "../../lib/job-id";
import { toHex } from "../../lib/crypto";
import type { ThrottleDecision } from "../../lib/throttle-client";
import { log, errorText } from "../../lib/log";
import type { ErrorDetail } from "../../lib/errors";
import { bucket, scopes } from "../../domain/abuse-limits";
import { spend, type RateLimited } from "../../domain/limit-check";
import { checkDeclaredType, checkMedia, HEAD_BYTES, overLimit } from "../../domain/media-rules";
import { insertUploadedMedia } from "../../db/uploaded-media";
import { UPLOADED_MEDIA_MS, uploadKey, type UploadedMedia } from "../../messages/uploaded-media";

/** What an upload names itself: its type, its length, a file name; and the body, still unread. */
export interface UploadRequest {
  body: ReadableStream<Uint8Array> | null;
  contentType: string | null;
  contentLength: string | null;
  filename: string | null;
}

export type UploadOutcome =
  | { kind: "stored"; media: UploadedMedia; limit: ThrottleDecision }
  /** Nothing was stored: `detail` names the rule. */
  | { kind: "refused"; detail: ErrorDetail }
  | RateLimited;

/** A file name: what a document shows the recipient; no path, no control characters. */
export const MAX_FILENAME_CHARS = 240;
const FILENAME = /^[^\\/\p{Cc}]+$/u;

const refused = (path: string, rule: string, message: string): UploadOutcome => ({
  kind: "refused",
  detail: { path, rule, message },
});

/**
 * What the runtime's FixedLengthStream throws when a body does not hold exactly its declared length
 * (workerd's own messages, pinned by the store's tests): a byte past it, or an end short of it.
 */
const TOO_LONG = "Attempt to write too many bytes through a FixedLengthStream.";
const TOO_SHORT = "FixedLengthStream did not see all expected bytes before close().";
/** The one buffer the digest reads the file through. */
const HASH_BUFFER_BYTES = 64 * 1024;
const lengthRule = (err: unknown): "long" | "short" | null =>
  err instanceof TypeError ? (err.message === TOO_LONG ? "long" : err.message === TOO_SHORT ? "short" : null) : null;

/**
 * Stores an uploaded file: its declared type and length checked against the operator's limits
 * before a byte is read, its first bytes against its type before anything is stored, then its bytes
 * streamed to R2 as they arrive by the runtime's own streams (never held whole: one fixed-length
 * stream, teed into the put and into a DigestStream for its SHA-256), and its row written once R2
 * holds them. A body longer or shorter than its Content-Length fails the put: nothing is kept.
 */
export async function uploadMedia(env: Env, workspaceId: string, req: UploadRequest): Promise<UploadOutcome> {
  const discard = async () => {
    await req.body?.cancel().catch(() => undefined);
  };
  const byType = checkDeclaredType(req.contentType);
  if (!byType.ok) {
    await discard();
    return { kind: "refused", detail: byType.detail };
  }
  if (req.contentLength === null || !/^\d{1,10}$/.test(req.contentLength)) {
    await discard();
    return refused(
      "Content-Length",
      "length_required",
      "Send the file with its Content-Length (curl --data-binary @file does); a chunked upload is not accepted.",
    );
  }
  const length = Number(req.contentLength);
  if (length > byType.maxBytes) {
    await discard();
    return refused("body", "media_size", overLimit(byType.kind, length));
  }
  if (req.filename !== null && (req.filename.length > MAX_FILENAME_CHARS || !FILENAME.test(req.filename))) {
    await discard();
    return refused(
      "filename",
      "filename",
      `filename is 1 to ${MAX_FILENAME_CHARS} characters, without / or \\ or control characters.`,
    );
  }
  const spec = bucket("mediaChange");
  const spent = await spend(
    env,
    scopes.workspace(workspaceId),
    [spec],
    `media uploads and deletions: ${spec.limit} per ${spec.periodSeconds} s per workspace`,
  );
  if (!spent.ok) {
    await discard();
    return spent;
  }

  const body = req.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });
  const reader = body.getReader();
  const head: Uint8Array[] = [];
  let headBytes = 0;
  let ended = false;
  while (headBytes < Math.min(HEAD_BYTES, length) && !ended) {
    const { done, value } = await reader.read();
    if (done) ended = true;
    else {
      head.push(value);
      headBytes += value.byteLength;
    }
  }
  const checked = checkMedia(req.contentType, length, concat(head, headBytes));
  if (!checked.ok) {
    await reader.cancel().catch(() => undefined);
    return { kind: "refused", detail: checked.detail };
  }
  reader.releaseLock();

  const id = newUuidV7(now());
  const key = uploadKey(workspaceId, id);
  // Every byte goes through one fixed-length stream, whose two branches (the runtime's own tee) feed
  // the put, by the runtime's pipe, and the digest, through one reused buffer: no chunk becomes a
  // new ArrayBuffer waiting for the garbage collector, so the Worker's memory does not grow with the file.
  const fixed = new FixedLengthStream(length);
  const [toHash, toStore] = fixed.readable.tee();
  const hashed = sha256Of(toHash);
  const putting = env.ARCHIVE.put(key, toStore, { httpMetadata: { contentType: checked.contentType } });
  // A put that fails stops reading the body: the rest of it is not hashed for nothing.
  const stop = new AbortController();
  putting.catch((err: unknown) => stop.abort(err));
  const moved = (async () => {
    const writer = fixed.writable.getWriter();
    for (const chunk of head) await writer.write(chunk);
    writer.releaseLock();
    await body.pipeTo(fixed.writable, { signal: stop.signal });
  })().catch(async (err: unknown) => {
    // Failed before the pipe took the body (a head piece refused): the rest is not read either.
    await body.cancel(err).catch(() => undefined);
    throw err;
  });
  const outcomes = await Promise.allSettled([moved, putting, hashed]);
  const failures = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason as unknown] : []));
  if (failures.length > 0) {
    // Whatever the put left (an aborted put should leave nothing; the local simulator keeps what it
    // read) is removed: a refused upload keeps no byte.
    await env.ARCHIVE.delete(key).catch(() => undefined);
    const rules = failures.map(lengthRule);
    if (rules.includes("long"))
      return refused("body", "media_length", `The body is longer than its Content-Length (${length} bytes).`);
    if (rules.includes("short"))
      return refused("body", "media_length", `The body ended before its ${length} declared bytes.`);
    throw failures[0];
  }

  const media: UploadedMedia = {
    id,
    kind: checked.kind,
    contentType: checked.contentType,
    size: length,
    sha256: toHex(await hashed),
    filename: req.filename,
    createdAt: now(),
    expiresAt: now() + UPLOADED_MEDIA_MS,
  };
  try {
    await insertUploadedMedia(env.DB, workspaceId, media);
  } catch (err) {
    // Without its row the file is unreachable: its bytes go too.
    log("error", "an uploaded file's row could not be written; its bytes are deleted", { detail: errorText(err) });
    await env.ARCHIVE.delete(key).catch(() => undefined);
    throw err;
  }
  return { kind: "stored", media, limit: spent.decision };
}

/**
 * The SHA-256 of a stream, read into one buffer over and over (a BYOB reader) and written to the
 * runtime's DigestStream. Piped into the DigestStream instead (a writable the runtime drives from
 * JavaScript), every chunk would become an ArrayBuffer of the Worker's heap until the garbage
 * collector freed it: measured, a 16 MB upload's worth of them.
 */
async function sha256Of(stream: ReadableStream<Uint8Array>): Promise<ArrayBuffer> {
  const digest = new crypto.DigestStream("SHA-256");
  // Read only once every byte passed; a failed upload leaves it rejected, unread.
  const digested = digest.digest;
  digested.catch(() => undefined);
  const writer = digest.getWriter();
  const reader = stream.getReader({ mode: "byob" });
  let buffer: ArrayBufferLike = new ArrayBuffer(HASH_BUFFER_BYTES);
  try {
    for (;;) {
      const read: ReadableStreamReadResult<Uint8Array> = await reader.read(new Uint8Array(buffer));
      if (read.done) break;
      await writer.write(read.value);
      buffer = read.value.buffer;
    }
    await writer.close();
    return await digested;
  } catch (err) {
    await Promise.allSettled([reader.cancel(err), writer.abort(err)]);
    throw err;
  }
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
