import { ConnectionError, MessagingError } from "./errors.js";

/**
 * The values of an NDJSON body, one per line, parsed as they arrive: a day's archive is
 * never held in memory whole. Web streams and TextDecoder only, so it runs wherever
 * fetch does. Stopping early (`break`) cancels the body.
 */
export async function* ndjsonValues<T>(
  body: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
): AsyncGenerator<T, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let pending = "";
  let line = 0;
  const parse = (text: string): T => {
    line++;
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new MessagingError(`line ${line} of the download is not JSON: ${text.slice(0, 80)}`, { cause: err });
    }
  };
  let finished = false;
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        // Nothing can resume a stream half-way: the caller restarts the download.
        throw new ConnectionError(
          `the download broke off after ${line} line${line === 1 ? "" : "s"}: ${String((err as Error)?.message ?? err)}`,
          {
            cause: err,
            attempts: 1,
          },
        );
      }
      pending += chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true });
      let start = 0;
      for (let end = pending.indexOf("\n"); end !== -1; end = pending.indexOf("\n", start)) {
        const text = pending.slice(start, end).trim();
        start = end + 1;
        if (text) yield parse(text);
      }
      pending = pending.slice(start);
      if (chunk.done) break;
    }
    // The last line may lack its newline.
    if (pending.trim()) yield parse(pending.trim());
    finished = true;
  } finally {
    // Stopped early or failed: tell the server we are not reading on.
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
