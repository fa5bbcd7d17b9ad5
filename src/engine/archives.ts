import { dayNumber, dayString, partKey } from "../durable-objects/history/archive-keys";
import type { ArchivedDay } from "../durable-objects/workspace/history-tiering";
import { workspaceObject } from "./objects";

export { dayNumber, dayString };
export type { ArchivedDay };

/** Days of the workspace archived to R2, newest first, strictly before `beforeDay` (a UTC day number) when given. */
export const listArchives = (
  env: Env,
  workspaceId: string,
  beforeDay: number | null,
  limit: number,
): Promise<ArchivedDay[]> => workspaceObject(env, workspaceId).listArchives(beforeDay, limit);

/**
 * One archived day of the workspace as NDJSON, streamed part after part, or null when the workspace
 * has not archived that day (another workspace's day reads as missing: the index is the workspace's own).
 */
export async function openArchive(
  env: Env,
  workspaceId: string,
  day: number,
): Promise<ReadableStream<Uint8Array> | null> {
  const archived = await workspaceObject(env, workspaceId).archive(day);
  if (!archived) return null;
  // Each part is a compressed file of its own (~20,000 messages): decompressed one after another, they
  // are the day, in order. Passed on as the decompression yields it: a reader holds a chunk at a time.
  const bucket = env.ARCHIVE;
  let part = 0;
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        if (!reader) {
          if (part >= archived.parts) return controller.close();
          const object = await bucket.get(partKey(workspaceId, day, part++));
          if (!object) return controller.error(new Error(`archive part ${part - 1} of ${dayString(day)} is missing`));
          reader = object.body.pipeThrough(new DecompressionStream("gzip")).getReader();
        }
        const next = await reader.read();
        if (!next.done) return controller.enqueue(next.value);
        reader = null;
      }
    },
    async cancel(reason) {
      await reader?.cancel(reason);
    },
  });
}
