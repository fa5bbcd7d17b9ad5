import { now } from "../../lib/clock";
import { storedUuid } from "../../lib/job-id";
import { findUploadedMedia } from "../../db/uploaded-media";
import { UPLOADED_MEDIA_DAYS, uploadKey, type UploadedMedia } from "../../messages/uploaded-media";
import type { MediaDownload } from "../../engine/media-downloads";

/** A file of the workspace's media store, while it is kept; or why it is not (said to the reader). */
export type KeptFile = { kept: true; media: UploadedMedia } | { kept: false; message: string };

export const MEDIA_NOT_FOUND = "Media not found (unknown, deleted, or another workspace's).";

/** The workspace's file by the id a reader gave (anything: a malformed id is as unknown as another workspace's). */
export async function keptFile(env: Pick<Env, "DB">, workspaceId: string, rawId: string): Promise<KeptFile> {
  const id = storedUuid(rawId);
  const media = id ? await findUploadedMedia(env.DB, workspaceId, id) : null;
  if (!media) return { kept: false, message: MEDIA_NOT_FOUND };
  if (media.expiresAt <= now())
    return {
      kept: false,
      message: `The file expired at ${new Date(media.expiresAt).toISOString()} (files are kept ${UPLOADED_MEDIA_DAYS} days).`,
    };
  return { kept: true, media };
}

const EXTENSIONS: Record<string, string> = {
  "image/jpeg": ".jpg",
  "image/png": ".png",
  "image/webp": ".webp",
  "video/mp4": ".mp4",
  "video/3gpp": ".3gp",
  "video/3gp": ".3gp",
  "audio/aac": ".aac",
  "audio/amr": ".amr",
  "audio/mpeg": ".mp3",
  "audio/mp4": ".m4a",
  "audio/ogg": ".ogg",
  "application/pdf": ".pdf",
  "text/plain": ".txt",
};

/**
 * A kept file's bytes, streamed from R2, named as uploaded (or by its kind and id with its type's
 * extension): what the API's download and the dashboard's link both serve. Null when R2 no longer
 * holds them (deleted between the row's read and this one).
 */
export async function openKeptFile(
  env: Pick<Env, "ARCHIVE">,
  workspaceId: string,
  media: UploadedMedia,
): Promise<Extract<MediaDownload, { kind: "bytes" }> | null> {
  const object = await env.ARCHIVE.get(uploadKey(workspaceId, media.id));
  if (!object) return null;
  return {
    kind: "bytes",
    body: object.body,
    contentType: media.contentType,
    size: object.size,
    filename: media.filename ?? `${media.kind}-${media.id}${EXTENSIONS[media.contentType] ?? ""}`,
    source: "copy",
    etag: object.httpEtag,
  };
}
