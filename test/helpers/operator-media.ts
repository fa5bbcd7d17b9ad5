import { env } from "cloudflare:workers";
import { operatorError } from "./operator";
import type { Network, Seen } from "./webhook-net";

/** A file a user sent: its operator media id, bytes and type. */
export interface MediaFile {
  id: string;
  bytes: Uint8Array;
  mimeType: string;
}

/** Bytes that differ at every offset (a copy that drops, repeats or reorders a chunk is caught). */
export function fileBytes(size: number, seed = 1): Uint8Array {
  const out = new Uint8Array(size);
  let x = seed * 2654435761;
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

export const mediaFile = (size: number, mimeType = "image/jpeg"): MediaFile => ({
  id: String(1_000_000_000_000 + Math.floor(Math.random() * 8_999_999_999_999)),
  bytes: fileBytes(size, Math.floor(Math.random() * 1000) + 1),
  mimeType,
});

export const sha256Hex = async (bytes: Uint8Array): Promise<string> =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");

/** The operator's media lookup (`GET /{version}/{media-id}`). */
export const mediaLookupUrl = (mediaId: string) =>
  `${env.UPSTREAM_CLOUD_API_BASE_URL}/${env.UPSTREAM_CLOUD_API_VERSION}/${mediaId}`;
/** Where the lookup says the bytes are (the operator's short-lived URL, on another host). */
export const mediaDownloadUrl = (mediaId: string) =>
  `https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=${mediaId}&ext=1795372553&hash=ATuQ`;

export interface OperatorMedia {
  /** Lookups and downloads answered (or refused) so far. */
  lookups: number;
  downloads: number;
  /** Every token the operator saw on these calls. */
  tokens: Set<string>;
}

/**
 * Serves one file as the operator's API does, at the network edge (`net`, whose spy fails any
 * other request): the lookup answers its metadata and a download URL, the download its bytes, both
 * only for `token`. `lookup(n)` may answer the n-th lookup otherwise (a fault), or hold it (a
 * promise the test settles); `size` overrides the size the metadata announces.
 */
export function serveOperatorMedia(
  net: Network,
  token: string,
  file: MediaFile,
  opts: { lookup?: (n: number) => Response | null | Promise<Response | null>; size?: number } = {},
): OperatorMedia {
  const served: OperatorMedia = { lookups: 0, downloads: 0, tokens: new Set() };
  const authorized = (seen: Seen) => {
    const auth = seen.headers.authorization ?? "";
    served.tokens.add(auth);
    return auth === `Bearer ${token}`;
  };
  net.receivers.set(mediaLookupUrl(file.id), async (seen) => {
    const n = ++served.lookups;
    if (!authorized(seen)) return operatorError(401, 190, "Error validating access token");
    const fault = await opts.lookup?.(n);
    if (fault) return fault;
    return Response.json({
      messaging_product: "whatsapp",
      url: mediaDownloadUrl(file.id),
      mime_type: file.mimeType,
      sha256: await sha256Hex(file.bytes),
      // The operator writes it as a string.
      file_size: String(opts.size ?? file.bytes.length),
      id: file.id,
    });
  });
  net.receivers.set(mediaDownloadUrl(file.id), (seen) => {
    served.downloads++;
    if (!authorized(seen)) return operatorError(401, 190, "Error validating access token");
    return new Response(file.bytes, {
      headers: { "Content-Type": file.mimeType, "Content-Length": String(file.bytes.length) },
    });
  });
  return served;
}
