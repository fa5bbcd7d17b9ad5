import { expiredUploadedMedia, forgetUploadedMedia } from "../db/uploaded-media";
import { uploadKey } from "../messages/uploaded-media";
import type { ScheduledJob } from "./job";

const BATCH = 500;
// Uploads are limited to 60 a minute per workspace; at design load ~10,000 a day in all, ~420 an
// hour: an hourly run deleting up to 2,000 keeps up with four times that.
const MAX_BATCHES = 4;

/**
 * Deletes the files of the media store past their expiry (30 days after upload): their bytes in R2
 * first (one call per batch), then their rows, through the index on expires_at, oldest first. A run
 * that fails between the two leaves rows whose bytes are gone: the next run finds them again and
 * deleting missing R2 keys is harmless. Reads already refuse an expired file: this job only frees
 * the space.
 */
export const mediaRetention: ScheduledJob = {
  name: "media-retention",
  async run(env, now) {
    let total = 0;
    for (let i = 0; i < MAX_BATCHES; i++) {
      const expired = await expiredUploadedMedia(env.DB, now, BATCH);
      if (expired.length === 0) break;
      await env.ARCHIVE.delete(expired.map((m) => uploadKey(m.workspaceId, m.id)));
      await forgetUploadedMedia(
        env.DB,
        expired.map((m) => m.id),
      );
      total += expired.length;
      if (expired.length < BATCH) break;
    }
    return total;
  },
};
