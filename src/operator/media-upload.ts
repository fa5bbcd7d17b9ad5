import { z } from "zod";
import { now } from "../lib/clock";
import { errorText, log } from "../lib/log";
import { DAY_MS, UUID_PATTERN } from "../lib/job-id";
import type { NormalizedError } from "../messages/status";
import { uploadKey, type UploadedMedia } from "../messages/uploaded-media";
import { MEDIA_KINDS, type MediaKind } from "../messages/kinds/media";
import { findOperatorMediaId, findUploadedMedia, rememberOperatorMediaId } from "../db/uploaded-media";
import type { SendResult } from "./adapter";
import { classifyOperatorError } from "./error-codes";

// Our media store's files, given to the operator: a file a message names by our id (a UUID, where
// the operator's own media ids are digits; a media message's or a template header's) is uploaded to the number's media endpoint
// (`POST /{phone-number-id}/media`, multipart), streamed from R2, and the message carries the id
// the operator answered. That id is remembered per file and number (D1), so a retried send, or the
// same file sent again, never uploads it twice while the operator keeps it.

/**
 * The operator keeps an uploaded file 30 days ("All media files sent through this endpoint are
 * encrypted and persist for 30 days"): its id is reused until a day before that, then the file is
 * uploaded again (ours may outlive an early upload of it by up to 30 days).
 */
const OPERATOR_KEEPS_MS = 30 * DAY_MS;
const REUSE_MARGIN_MS = DAY_MS;

/** An upload streams up to 100 MB: it gets longer than a message's call before it is given up. */
const UPLOAD_TIMEOUT_MS = 120_000;

export interface OperatorMediaTarget {
  baseUrl: string;
  version: string;
  phoneNumberId: string;
  accessToken: string;
  messagingProduct: string;
}

/** Where our files are and whose they are: the number's workspace, its bucket and stores. */
export interface MediaStoreAccess {
  env: Pick<Env, "DB" | "ARCHIVE">;
  workspaceId: string;
  channelNumberId: string;
}

export type WithOperatorMedia<T> = { ok: true; value: T } | { ok: false; result: SendResult };

const mediaGone = (id: string, why: string): NormalizedError => ({
  code: "media_unavailable",
  message: `The media ${id} ${why}; the message was not sent.`,
  retriable: false,
  upstreamCode: null,
});

const UploadAnswer = z.object({
  id: z.string().min(1).optional().catch(undefined),
  error: z
    .object({
      code: z.union([z.number(), z.string()]).optional().catch(undefined),
      message: z.string().optional().catch(undefined),
      is_transient: z.boolean().optional().catch(undefined),
    })
    .optional()
    .catch(undefined),
});

type Payload = Record<string, unknown> | unknown[];

const isKind = (type: unknown): type is MediaKind =>
  typeof type === "string" && (MEDIA_KINDS as readonly string[]).includes(type);
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
/** A media object that names one of our files: `{ id: <uuid>, … }`. */
const oursIn = (media: unknown): string | null =>
  isObject(media) && typeof media.id === "string" && UUID_PATTERN.test(media.id) ? media.id : null;

/**
 * Each place of a message's payload that names one of our files, with how to put the operator's id
 * there: the payload itself for a media message (`image`, `video`, …: `{ id, caption }`), and a
 * template's header parameter (`{ type: "image", image: { id } }`).
 */
function mediaPlaces(type: string, payload: Payload): { id: string; put: (theirs: string) => Payload }[] {
  if (isKind(type)) {
    const id = oursIn(payload);
    return id && isObject(payload) ? [{ id, put: (theirs) => ({ ...payload, id: theirs }) }] : [];
  }
  if (type !== "template" || !isObject(payload) || !Array.isArray(payload.components)) return [];
  const components: unknown[] = payload.components;
  const places: { id: string; put: (theirs: string) => Payload }[] = [];
  components.forEach((component, c) => {
    if (!isObject(component) || !Array.isArray(component.parameters)) return;
    const parameters: unknown[] = component.parameters;
    parameters.forEach((parameter, p) => {
      if (!isObject(parameter) || !isKind(parameter.type)) return;
      const kind = parameter.type;
      const media = parameter[kind];
      const id = oursIn(media);
      if (!id || !isObject(media)) return;
      places.push({
        id,
        put: (theirs) => ({
          ...payload,
          components: components.map((x, i) =>
            i !== c
              ? x
              : {
                  ...component,
                  parameters: parameters.map((y, j) =>
                    j !== p ? y : { ...parameter, [kind]: { ...media, id: theirs } },
                  ),
                },
          ),
        }),
      });
    });
  });
  return places;
}

/**
 * The message's payload with our media id (a template's header, or a media message's file)
 * replaced by the operator's id of that file for this number (uploading it first when the operator
 * does not hold it); or the send's result when the file cannot be given: gone from the store
 * (`media_unavailable`, final), or the upload refused or failed (as the operator's error says,
 * retried like a send: nothing was sent yet).
 */
export async function withOperatorMedia(
  store: MediaStoreAccess,
  target: OperatorMediaTarget,
  type: string,
  payload: Payload,
): Promise<WithOperatorMedia<Payload>> {
  // A payload names at most one file (a media message's, or a template's one header).
  const [place] = mediaPlaces(type, payload);
  if (!place) return { ok: true, value: payload };
  const got = await operatorIdOf(store, target, place.id);
  return got.ok ? { ok: true, value: place.put(got.value) } : got;
}

/** The workspace's file, while it is kept; or the final failure of a message that names it. */
async function keptFile(store: MediaStoreAccess, mediaId: string): Promise<WithOperatorMedia<UploadedMedia>> {
  const media = await findUploadedMedia(store.env.DB, store.workspaceId, mediaId);
  if (!media) return { ok: false, result: { kind: "permanent", error: mediaGone(mediaId, "was deleted") } };
  if (media.expiresAt <= now())
    return { ok: false, result: { kind: "permanent", error: mediaGone(mediaId, "expired") } };
  return { ok: true, value: media };
}

/**
 * The sandbox's check of a message that names one of our files: the operator would refuse a file
 * it was never given, so a file deleted or expired before the message left fails it
 * (`media_unavailable`) as on a live number; null when the message names none, or it is kept.
 */
export async function storedMediaGone(
  store: MediaStoreAccess,
  type: string,
  payload: Payload,
): Promise<SendResult | null> {
  const [place] = mediaPlaces(type, payload);
  if (!place) return null;
  const kept = await keptFile(store, place.id);
  return kept.ok ? null : kept.result;
}

/** The operator's id of one of our files for this number: remembered, or uploaded now. */
async function operatorIdOf(
  store: MediaStoreAccess,
  target: OperatorMediaTarget,
  mediaId: string,
): Promise<WithOperatorMedia<string>> {
  const { env, workspaceId, channelNumberId } = store;
  const kept = await keptFile(store, mediaId);
  if (!kept.ok) return kept;
  const known = await findOperatorMediaId(env.DB, mediaId, channelNumberId);
  if (known && known.uploadedAt + OPERATOR_KEEPS_MS - REUSE_MARGIN_MS > now())
    return { ok: true, value: known.operatorMediaId };
  const uploaded = await upload(env, workspaceId, target, kept.value);
  if (uploaded.ok) await rememberOperatorMediaId(env.DB, mediaId, channelNumberId, uploaded.value, now());
  return uploaded;
}

/** A file name safe in a multipart header: the kind and our id, with the type's extension left to the operator. */
const partName = (m: UploadedMedia) => `${m.kind}-${m.id}`;

/**
 * One upload to the operator's media endpoint: a multipart body (messaging_product, type, file)
 * of a known length, whose file part streams from R2 as the request goes out.
 */
async function upload(
  env: Pick<Env, "ARCHIVE">,
  workspaceId: string,
  target: OperatorMediaTarget,
  media: UploadedMedia,
): Promise<WithOperatorMedia<string>> {
  const object = await env.ARCHIVE.get(uploadKey(workspaceId, media.id));
  if (!object) return { ok: false, result: { kind: "permanent", error: mediaGone(media.id, "is no longer stored") } };
  const boundary = `----media-${crypto.randomUUID()}`;
  const text = new TextEncoder();
  const field = (name: string, value: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const before = text.encode(
    field("messaging_product", target.messagingProduct) +
      field("type", media.contentType) +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${partName(media)}"\r\n` +
      `Content-Type: ${media.contentType}\r\n\r\n`,
  );
  const after = text.encode(`\r\n--${boundary}--\r\n`);
  const body = new FixedLengthStream(before.byteLength + object.size + after.byteLength);
  // The file part goes from R2 into the request by the runtime's own pipe: only the two small
  // multipart framings are written from JavaScript, so no chunk of the file waits there for the
  // garbage collector and the Worker's memory does not grow with the file.
  const writing = (async () => {
    let writer = body.writable.getWriter();
    await writer.write(before);
    writer.releaseLock();
    await object.body.pipeTo(body.writable, { preventClose: true });
    writer = body.writable.getWriter();
    await writer.write(after);
    await writer.close();
  })();
  // A request that failed before the file was piped leaves R2's body unread: it is let go.
  writing.catch(async (err: unknown) => object.body.cancel(err).catch(() => undefined));
  let res: Response;
  try {
    res = await fetch(`${target.baseUrl.replace(/\/+$/, "")}/${target.version}/${target.phoneNumberId}/media`, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${target.accessToken}`,
        "Content-Type": `multipart/form-data; boundary=${boundary}`,
      },
      body: body.readable,
      signal: AbortSignal.timeout(UPLOAD_TIMEOUT_MS),
      redirect: "manual",
    });
  } catch (err) {
    // The message itself was not sent: whatever became of the upload, the send is tried again.
    log("warn", "a media upload to the operator failed", { mediaId: media.id, detail: errorText(err) });
    return {
      ok: false,
      result: { kind: "retryable", operatorCode: null, message: "The media upload to the operator failed." },
    };
  }
  const answer = UploadAnswer.catch({}).parse(await res.json().catch(() => ({})));
  if (res.ok && answer.id) return { ok: true, value: answer.id };
  if (res.ok)
    return {
      ok: false,
      result: { kind: "retryable", operatorCode: null, message: "The operator answered a media upload without an id." },
    };
  const code = answer.error?.code !== undefined ? String(answer.error.code) : null;
  const result = classifyOperatorError(res.status, code, answer.error?.message ?? `HTTP ${res.status}`, {
    ...(answer.error?.is_transient !== undefined ? { isTransient: answer.error.is_transient } : {}),
  });
  // An upload lost in a gateway sent no message: it is tried again, never reported unknown.
  return {
    ok: false,
    result: result.kind === "unknown" ? { kind: "retryable", operatorCode: null, message: result.message } : result,
  };
}
