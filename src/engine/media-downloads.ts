import { getWorkspaceWithLimits } from "../db/workspaces";
import { now } from "../lib/clock";
import { log } from "../lib/log";
import { bucket, scopes } from "../domain/abuse-limits";
import { spend, type RateLimited } from "../domain/limit-check";
import { mediaKey } from "../durable-objects/history/media-keys";
import { dayOfId } from "../durable-objects/workspace/day-tables";
import type { MessageRow } from "../messages/record";
import type { CopyOutcome, MediaCopyState, Reservation } from "../durable-objects/workspace/media-copies";
import { locateNumberMedia, operatorMediaAccess } from "../operator/media-access";
import { declaredLength, downloadMedia } from "../operator/media-api";
import { DAY_MS, findByUuid } from "../lib/job-id";
import { workspaceObject } from "./objects";
import {
  cleanContentType,
  downloadName,
  OPERATOR_MEDIA_DAYS,
  storedMediaOf,
  type MediaCopy,
  type StoredMedia,
} from "../messages/inbound-media";

/** A fetch-through waits this long for the operator's first byte of answer (the body then streams on). */
const FETCH_THROUGH_TIMEOUT_MS = 60_000;

export type MediaDownload =
  | {
      kind: "bytes";
      /** Streamed as it arrives: never held whole. */
      body: ReadableStream;
      contentType: string;
      /** Bytes, when known (Content-Length). */
      size: number | null;
      filename: string;
      /** Whether the bytes come from our copy (immutable: cacheable) or straight from the operator. */
      source: "copy" | "operator";
      etag: string | null;
    }
  | { kind: "unavailable"; message: string }
  /** The workspace's fetch-through budget is spent: nothing was asked of the operator. */
  | { kind: "limited"; refusal: RateLimited };

/**
 * The bytes of an inbound message's media, for the API and the dashboard alike: our copy in R2
 * when it is there; while the copy is still to be made (queued, or being retried) and the
 * operator still has the file (7 days), straight from the operator, streamed through (the plan's
 * item cap applies, nothing is stored); otherwise why not, in words. Null when the record has no
 * media at all (an outbound message, a text).
 */
async function openMedia(env: Env, workspaceId: string, row: MessageRow): Promise<MediaDownload | null> {
  if (row.direction !== "inbound") return null;
  const media = storedMediaOf(row.details);
  if (!media) return null;
  const copy = media.copy;
  if (copy.state === "over_cap" || copy.state === "failed") return { kind: "unavailable", message: whyNot(copy) };
  const object = await env.ARCHIVE.get(mediaCopyKey(workspaceId, row.id)!);
  if (object) {
    const contentType = object.httpMetadata?.contentType ?? (copy.state === "stored" ? copy.contentType : null);
    const type = contentType ?? "application/octet-stream";
    return {
      kind: "bytes",
      body: object.body,
      contentType: type,
      size: object.size,
      filename: downloadName(row.id, row.type, media, type),
      source: "copy",
      etag: object.httpEtag,
    };
  }
  if (copy.state === "stored") return { kind: "unavailable", message: "The media's copy is no longer kept." };
  const receivedAt = row.received_at ?? row.created_at;
  if (now() - receivedAt > OPERATOR_MEDIA_DAYS * DAY_MS)
    return {
      kind: "unavailable",
      message: `The media was not copied, and the operator's copy expired (it keeps media ${OPERATOR_MEDIA_DAYS} days).`,
    };
  return fetchThrough(env, workspaceId, row, media);
}

/** A message's type and its media (null when it has none: an outbound message, a text). */
export interface MessageMedia {
  type: string;
  media: MediaDownload | null;
}

/**
 * The media of one message of the workspace (see openMedia); null when the id names no message of
 * this workspace (another workspace's id reads as unknown).
 */
export async function messageMedia(env: Env, workspaceId: string, id: string): Promise<MessageMedia | null> {
  const row = await findByUuid(id, (stored) => workspaceObject(env, workspaceId).getMessage(stored));
  return row ? { type: row.type, media: await openMedia(env, workspaceId, row) } : null;
}

/** Where the copy of an inbound message's media is kept in R2; null for an id that names no day (not one of ours). */
export function mediaCopyKey(workspaceId: string, messageId: string): string | null {
  const day = dayOfId(messageId);
  return day === null ? null : mediaKey(workspaceId, day, messageId);
}

export type { CopyOutcome, MediaCopyState, Reservation };

/** Where the copy of a message's media stands (the copy job asks first); null: no record of the workspace with media. */
export const mediaCopyState = (env: Env, workspaceId: string, messageId: string): Promise<MediaCopyState | null> =>
  workspaceObject(env, workspaceId).mediaCopyState(messageId);

/** The copy job knows the item's size: counted against the plan's caps, or recorded over them. */
export const reserveMediaCopy = (
  env: Env,
  workspaceId: string,
  messageId: string,
  size: number,
  contentType: string,
): Promise<Reservation> => workspaceObject(env, workspaceId).reserveMediaCopy(messageId, size, contentType);

/** The copy job's end: stored in R2, or given up. */
export const settleMediaCopy = (
  env: Env,
  workspaceId: string,
  messageId: string,
  outcome: CopyOutcome,
): Promise<MediaCopy | null> => workspaceObject(env, workspaceId).settleMediaCopy(messageId, outcome);

const NOT_YET = "The media is not copied yet; try again in a few seconds.";

/**
 * The bytes straight from the operator, while our copy is on its way. Each costs two operator calls
 * with the number's token and up to the plan's item cap of bandwidth, for the API and the dashboard
 * alike: the workspace has a budget of them (ABUSE_LIMITS.mediaFetchThrough), apart from its reads.
 */
async function fetchThrough(
  env: Env,
  workspaceId: string,
  row: MessageRow,
  media: StoredMedia,
): Promise<MediaDownload> {
  const spec = bucket("mediaFetchThrough");
  const spent = await spend(
    env,
    scopes.workspace(workspaceId),
    [spec],
    `${spec.limit} media files fetched from the operator per ${spec.periodSeconds} s per workspace, while their copies are made`,
  );
  if (!spent.ok) return { kind: "limited", refusal: spent };
  const [access, workspace] = await Promise.all([
    operatorMediaAccess(env, row.channel_number_id, workspaceId),
    getWorkspaceWithLimits(env.DB, workspaceId),
  ]);
  if (!access || !workspace) return { kind: "unavailable", message: NOT_YET };
  const located = await locateNumberMedia(env, row.channel_number_id, access, media.id);
  if (located.kind === "gone")
    return { kind: "unavailable", message: `The media is not available: ${located.message}` };
  if (located.kind === "retry") return { kind: "unavailable", message: NOT_YET };
  const cap = workspace.media_max_item_bytes;
  if (located.value.size !== null && located.value.size > cap)
    return { kind: "unavailable", message: overItem(located.value.size, cap) };
  const got = await downloadMedia(access.cfg, access.token, located.value.url, FETCH_THROUGH_TIMEOUT_MS);
  if (got.kind !== "ok") return { kind: "unavailable", message: NOT_YET };
  const size = declaredLength(got.value) ?? located.value.size;
  if (size !== null && size > cap) {
    await got.value.body?.cancel();
    return { kind: "unavailable", message: overItem(size, cap) };
  }
  const contentType =
    cleanContentType(located.value.mimeType) ??
    cleanContentType(got.value.headers.get("content-type")) ??
    "application/octet-stream";
  return {
    kind: "bytes",
    // Whatever the operator announced (or not), no more than the cap is passed on.
    body: stopPast(got.value.body!, cap),
    contentType,
    size,
    filename: downloadName(row.id, row.type, media, contentType),
    source: "operator",
    etag: null,
  };
}

/**
 * `body` as long as it stays within `cap` bytes; past them the stream errors (the caller's download
 * breaks off, incomplete) and the operator's download is cancelled: a file the operator announced no
 * size for is counted as it streams.
 */
function stopPast(body: ReadableStream<Uint8Array>, cap: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let seen = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      seen += value.byteLength;
      if (seen > cap) {
        log("warn", "a media fetch-through passed the plan's item cap; stopped", { cap });
        await reader.cancel();
        return controller.error(new Error(`The media is over the plan's ${cap} bytes per item.`));
      }
      controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

const overItem = (size: number, cap: number) =>
  `The media was not kept: its ${size} bytes are over the plan's ${cap} bytes per item.`;

function whyNot(copy: Extract<MediaCopy, { state: "over_cap" | "failed" }>): string {
  if (copy.state === "failed") return `The media could not be copied from the operator. ${copy.reason}`;
  return copy.cap === "item"
    ? overItem(copy.size, copy.capBytes)
    : `The media was not kept: the plan's ${copy.capBytes} bytes of media per day were used up when it arrived.`;
}
