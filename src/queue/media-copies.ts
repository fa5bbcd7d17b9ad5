import { config } from "../config";
import { cleanContentType, MediaCopyJob } from "../messages/inbound-media";
import { mediaCopyKey, mediaCopyState, reserveMediaCopy, settleMediaCopy } from "../engine/media-downloads";
import { errorText, log } from "../lib/log";
import { declaredLength, downloadMedia } from "../operator/media-api";
import { locateNumberMedia, operatorMediaAccess } from "../operator/media-access";

/** One download may take this long (100 MB at ~350 KB/s); the consumer's own limit is 15 minutes. */
export const DOWNLOAD_TIMEOUT_MS = 5 * 60_000;

/** What one attempt came to: the job is finished (copied, recorded over a cap or failed, or nothing to do), or to be tried again. */
type Attempt = { kind: "done" } | { kind: "retry"; reason: string };

/**
 * One attempt to copy an item: where the copy stands (settled: nothing to do), where the operator
 * has the file and how large it is, the plan's caps (over them: recorded, nothing downloaded),
 * then the bytes streamed from the operator into R2 (a FixedLengthStream of the announced size:
 * R2 needs the length, and a body of another length fails the put instead of storing it), then
 * the record. Throws only on a failure of ours (D1, the object): the attempt is tried again.
 */
async function attemptCopy(env: Env, job: MediaCopyJob): Promise<Attempt> {
  const { workspaceId, messageId } = job;
  const state = await mediaCopyState(env, workspaceId, messageId);
  if (!state || (state.copy.state !== "pending" && state.copy.state !== "copying")) return { kind: "done" };
  const access = await operatorMediaAccess(env, job.channelNumberId, job.workspaceId);
  if (!access) {
    await settleMediaCopy(env, workspaceId, messageId, {
      state: "failed",
      reason: "The number has no operator account.",
    });
    return { kind: "done" };
  }
  const { cfg, token } = access;
  const located = await locateNumberMedia(env, job.channelNumberId, access, job.mediaId);
  if (located.kind === "gone") {
    await settleMediaCopy(env, workspaceId, messageId, { state: "failed", reason: located.message });
    return { kind: "done" };
  }
  if (located.kind === "retry") return { kind: "retry", reason: located.message };
  const { url, mimeType } = located.value;
  let size = located.value.size;
  let download: Response | null = null;
  if (size === null) {
    // No size in the metadata: the download's own length decides (before any byte is read).
    const got = await downloadMedia(cfg, token, url, DOWNLOAD_TIMEOUT_MS);
    if (got.kind !== "ok") return { kind: "retry", reason: got.message };
    download = got.value;
    size = declaredLength(download);
    if (size === null) {
      await download.body?.cancel();
      return { kind: "retry", reason: "The operator announced no size for the media." };
    }
  }
  const contentType =
    cleanContentType(mimeType) ?? cleanContentType(download?.headers.get("content-type")) ?? "application/octet-stream";
  const reservation = await reserveMediaCopy(env, workspaceId, messageId, size, contentType);
  if (reservation.kind === "settled") {
    await download?.body?.cancel();
    return { kind: "done" };
  }
  if (!download) {
    const got = await downloadMedia(cfg, token, url, DOWNLOAD_TIMEOUT_MS);
    if (got.kind !== "ok") return { kind: "retry", reason: got.message };
    download = got.value;
  }
  const declared = declaredLength(download);
  if (declared !== null && declared !== reservation.size) {
    await download.body?.cancel();
    return { kind: "retry", reason: `The download is ${declared} bytes, the operator announced ${reservation.size}.` };
  }
  const key = mediaCopyKey(workspaceId, messageId);
  if (key === null) throw new Error(`message id ${messageId} names no day`);
  const fixed = new FixedLengthStream(reservation.size);
  const piping = download.body!.pipeTo(fixed.writable);
  try {
    await Promise.all([
      env.ARCHIVE.put(key, fixed.readable, {
        httpMetadata: { contentType: reservation.contentType },
        customMetadata: { messageId, channelNumberId: job.channelNumberId },
      }),
      piping,
    ]);
  } catch (err) {
    return { kind: "retry", reason: `The copy broke off: ${errorText(err)}` };
  }
  await settleMediaCopy(env, workspaceId, messageId, { state: "stored" });
  return { kind: "done" };
}

/**
 * Consumer of `media-copies`: copies inbound media to R2, each message of the batch on its own.
 * A failed attempt comes back after the next delay of MEDIA_COPY_RETRY_DELAYS_SECONDS; the one
 * after the last delay records the copy failed (the customer's GET says why).
 */
export async function consumeMediaCopies(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const delays = config(env).media.copyRetryDelaysSeconds;
  await Promise.all(
    batch.messages.map(async (message) => {
      const parsed = MediaCopyJob.safeParse(message.body);
      if (!parsed.success) {
        log("warn", "media copy job not understood; dropped");
        return message.ack();
      }
      const job = parsed.data;
      let attempt: Attempt;
      try {
        attempt = await attemptCopy(env, job);
      } catch (err) {
        attempt = { kind: "retry", reason: errorText(err) };
      }
      if (attempt.kind === "done") return message.ack();
      const ids = { workspaceId: job.workspaceId, messageId: job.messageId, attempt: message.attempts };
      if (message.attempts <= delays.length) {
        log("warn", "media copy failed; will retry", { ...ids, reason: attempt.reason });
        return message.retry({ delaySeconds: delays[message.attempts - 1]! });
      }
      try {
        await settleMediaCopy(env, job.workspaceId, job.messageId, { state: "failed", reason: attempt.reason });
        log("warn", "media copy given up after its attempts", { ...ids, reason: attempt.reason });
        message.ack();
      } catch (err) {
        log("warn", "media copy could not be recorded failed; will retry", { ...ids, error: errorText(err) });
        message.retry({ delaySeconds: delays[delays.length - 1] ?? 60 });
      }
    }),
  );
}

/** Consumer of `media-copies-dlq`: jobs whose end could not be recorded; logged with their ids. */
export function consumeDeadMediaCopies(batch: MessageBatch<unknown>): void {
  for (const message of batch.messages) {
    const job = MediaCopyJob.safeParse(message.body);
    log("error", "media copy dead-lettered after its retries", {
      workspaceId: job.success ? job.data.workspaceId : null,
      messageId: job.success ? job.data.messageId : null,
      attempts: message.attempts,
    });
  }
  batch.ackAll();
}
