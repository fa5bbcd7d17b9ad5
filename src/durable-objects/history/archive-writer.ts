import { now } from "../../lib/clock";
import { toArchivedLine } from "../../messages/archive-line";
import type { MessageRow } from "../../messages/record";
import { dayString, manifestKey, partKey, type ArchiveManifest } from "./archive-keys";

/** Messages per archive part: about 8 MB of NDJSON, 1–2 MB compressed. */
export const PART_ROWS = 20_000;

/**
 * How far a day's archive got: parts written (numbered after those of an earlier archive of the
 * same day, which are never overwritten), messages in them, where the next part starts (opaque to
 * the writer), and whether the manifest is written.
 */
export interface ArchiveProgress {
  parts: number;
  messages: number;
  cursor: string | null;
  done: boolean;
}

/** Reads up to `limit` records after `cursor` (null: from the start), in a fixed order; returns them and the cursor after the last. */
export type ArchiveSource = (cursor: string | null, limit: number) => { rows: MessageRow[]; cursor: string | null };

const gzip = (text: string): Promise<ArrayBuffer> =>
  new Response(new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer();

/**
 * Writes up to `maxParts` parts of a day to R2 (gzip NDJSON, one message per line: v1's view of
 * it, with what v2 shows beyond that under one key, messages/archive-line.ts), then the manifest
 * once the source is exhausted. Progress moves only after a part is in R2: a crash rewrites that
 * part (same key), never skips it.
 */
export async function archiveRows(
  bucket: R2Bucket,
  workspaceId: string,
  day: number,
  progress: ArchiveProgress,
  maxParts: number,
  read: ArchiveSource,
): Promise<ArchiveProgress> {
  let p = { ...progress };
  for (let written = 0; written < maxParts && !p.done; written++) {
    const { rows, cursor } = read(p.cursor, PART_ROWS);
    if (rows.length === 0) {
      const manifest: ArchiveManifest = {
        day: dayString(day),
        parts: p.parts,
        messages: p.messages,
        archivedAt: new Date(now()).toISOString(),
      };
      await bucket.put(manifestKey(workspaceId, day), JSON.stringify(manifest), {
        httpMetadata: { contentType: "application/json" },
      });
      return { ...p, done: true };
    }
    const body = await gzip(`${rows.map((r) => JSON.stringify(toArchivedLine(r))).join("\n")}\n`);
    await bucket.put(partKey(workspaceId, day, p.parts), body, {
      httpMetadata: { contentType: "application/x-ndjson", contentEncoding: "gzip" },
      customMetadata: { messages: String(rows.length) },
    });
    p = { parts: p.parts + 1, messages: p.messages + rows.length, cursor, done: false };
  }
  return p;
}
