import { z } from "zod";
import { isMediaType, type StoredMedia } from "../messages/inbound-media";
import { log } from "../lib/log";

// Inbound media on the operator's API. A webhook names the file by a media id (valid 7 days);
// `GET /{version}/{media-id}` with the number's token answers its metadata and a URL valid 5
// minutes; `GET` of that URL with the same token answers the bytes.

/** A size the operator writes as a number or as a string of digits. */
const Bytes = z.union([
  z.number().int().nonnegative(),
  z
    .string()
    .regex(/^\d{1,15}$/)
    .transform(Number),
]);
const lenient = <T extends z.ZodType>(schema: T) => schema.optional().catch(undefined);

/** The media object of an inbound image, audio, video, document or sticker, as far as we read it. */
const OperatorMediaObject = z.looseObject({
  id: z.string().min(1).max(256),
  mime_type: lenient(z.string().max(255)),
  sha256: lenient(z.string().max(128)),
  caption: lenient(z.string()),
  filename: lenient(z.string().max(1024)),
  file_size: lenient(Bytes),
});

/** The media of an inbound message (`payload`: its `image`, `document`, … object), or null when it has none. */
export function inboundMediaOf(type: string, payload: unknown): StoredMedia | null {
  if (!isMediaType(type)) return null;
  const parsed = OperatorMediaObject.safeParse(payload);
  if (!parsed.success) return null;
  const m = parsed.data;
  return {
    id: m.id,
    mimeType: m.mime_type ?? null,
    sha256: m.sha256 ?? null,
    caption: m.caption ?? null,
    filename: m.filename ?? null,
    size: m.file_size ?? null,
    copy: { state: "pending" },
  };
}

const MediaMetadata = z.object({
  url: z.string().min(1),
  mime_type: lenient(z.string().max(255)),
  sha256: lenient(z.string().max(128)),
  file_size: lenient(Bytes),
});

export interface OperatorMediaConfig {
  baseUrl: string;
  version: string;
  timeoutMs: number;
  /** The hosts a download may go to over https (config's `operator.mediaHosts`). */
  mediaHosts: readonly string[];
}

export interface MediaLocation {
  url: string;
  mimeType: string | null;
  size: number | null;
}

/**
 * What asking the operator gave: the file, a refusal that asking again will not change (`gone`: the
 * media id expired or is not this number's), or a failure worth another try (`retry`). Messages name
 * the HTTP status and the operator's code, never the token.
 */
export type MediaAnswer<T> =
  | { kind: "ok"; value: T }
  | { kind: "gone"; message: string }
  /** `tokenRefused`: the operator refused the token itself (HTTP 401 or code 190). */
  | { kind: "retry"; message: string; tokenRefused?: boolean };

/** Client errors that the same request will meet again; 401/403 (a token being replaced) and 429 are tried again. */
const isFinal = (status: number) => status >= 400 && status < 500 && ![401, 403, 408, 429].includes(status);

async function operatorCode(res: Response): Promise<{ text: string; code: string | null }> {
  const body: unknown = await res.json().catch(() => null);
  const raw =
    typeof body === "object" && body !== null && "error" in body && typeof body.error === "object" && body.error
      ? (body.error as { code?: unknown }).code
      : undefined;
  const code = typeof raw === "number" || typeof raw === "string" ? String(raw) : null;
  return { text: `HTTP ${res.status}${code !== null ? `, code ${code}` : ""}`, code };
}

const failure = (err: unknown): string =>
  err instanceof DOMException && (err.name === "TimeoutError" || err.name === "AbortError")
    ? "no answer in time"
    : "the connection failed";

/** `GET /{version}/{media-id}`: where the bytes are (a URL valid 5 minutes), their type and size. */
export async function locateMedia(
  cfg: OperatorMediaConfig,
  token: string,
  mediaId: string,
): Promise<MediaAnswer<MediaLocation>> {
  let res: Response;
  try {
    res = await fetch(`${cfg.baseUrl.replace(/\/+$/, "")}/${cfg.version}/${encodeURIComponent(mediaId)}`, {
      headers: { Authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(cfg.timeoutMs),
      redirect: "manual",
    });
  } catch (err) {
    return { kind: "retry", message: `The operator's media lookup failed: ${failure(err)}.` };
  }
  if (!res.ok) {
    const { text, code } = await operatorCode(res);
    const what = `The operator refused the media lookup (${text}).`;
    return isFinal(res.status)
      ? { kind: "gone", message: what }
      : { kind: "retry", message: what, tokenRefused: res.status === 401 || code === "190" };
  }
  const parsed = MediaMetadata.safeParse(await res.json().catch(() => null));
  if (!parsed.success) return { kind: "retry", message: "The operator's media lookup answered without a URL." };
  const { url, mime_type, file_size } = parsed.data;
  if (!isOperatorUrl(url, cfg)) {
    // The operator moved its media elsewhere, or an answer not its own: the token does not follow.
    log("error", "the operator's media URL names a host not allowed (UPSTREAM_MEDIA_HOSTS); not downloaded", {
      host: hostOf(url),
    });
    return { kind: "gone", message: "The operator's media URL is not on a host we send the number's token to." };
  }
  return { kind: "ok", value: { url, mimeType: mime_type ?? null, size: file_size ?? null } };
}

/**
 * The bytes at a media URL: the response, its body not read (the caller streams it). The token goes
 * to the URL the operator gave only when locateMedia found it on an allowed host, over https (or
 * on the configured operator's own origin, for a local fake of it); a redirect is not followed, so
 * it goes nowhere else.
 */
export async function downloadMedia(
  cfg: OperatorMediaConfig,
  token: string,
  url: string,
  timeoutMs: number,
): Promise<MediaAnswer<Response>> {
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { Authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(timeoutMs),
      redirect: "manual",
    });
  } catch (err) {
    return { kind: "retry", message: `The operator's media download failed: ${failure(err)}.` };
  }
  if (res.ok && res.body) return { kind: "ok", value: res };
  const what = `The operator refused the media download (${(await operatorCode(res)).text}).`;
  // The URL lasts 5 minutes: whatever it answers, a new lookup may do better.
  return { kind: "retry", message: what };
}

/** An https URL on one of the allowed media hosts (its default port), or on the operator's own origin. */
function isOperatorUrl(url: string, cfg: OperatorMediaConfig): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.origin === new URL(cfg.baseUrl).origin) return true;
  return (
    parsed.protocol === "https:" &&
    parsed.port === "" &&
    parsed.username === "" &&
    parsed.password === "" &&
    cfg.mediaHosts.includes(parsed.hostname)
  );
}

const hostOf = (url: string): string | null => {
  try {
    return new URL(url).hostname;
  } catch {
    return null;
  }
};

/** The length a response declares, or null. */
export function declaredLength(res: Response): number | null {
  const raw = res.headers.get("content-length");
  return raw !== null && /^\d{1,15}$/.test(raw) ? Number(raw) : null;
}
