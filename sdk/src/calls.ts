import { Paginated, type Page } from "./paginate.js";
import { withRetries, type RetryOptions } from "./retry.js";
import type { CallOptions } from "./client.js";
import { ndjsonValues } from "./ndjson.js";

type Attempt<T> = (signal: AbortSignal) => Promise<{ data?: T; error?: unknown; response: Response }>;

/**
 * How both API versions' clients call: reads retried under the client's policy, lists as pages of
 * reads, and sends with one Idempotency-Key reused on every attempt (so retrying never duplicates).
 */
export class Calls {
  constructor(private readonly retry: RetryOptions) {}

  read<T>(attempt: Attempt<T>, options?: CallOptions): Promise<T> {
    return withRetries(attempt, this.retry, options?.signal).then((r) => r.data);
  }

  /** A list: each page is a read (retried), starting at `params.cursor` if given. */
  paged<T>(
    params: { cursor?: string },
    page: (cursor: string | undefined, signal: AbortSignal) => ReturnType<Attempt<Page<T>>>,
    options?: CallOptions,
  ): Paginated<T> {
    return new Paginated((cursor) => this.read((signal) => page(cursor, signal), options), params.cursor);
  }

  /**
   * A streamed read: the attempt's signal (deadline and caller) governs the wait for the answer;
   * once it is there, only the caller's signal may stop the body: `download` is the answered
   * request's controller, for the caller to abort.
   */
  async streamed<T>(
    get: (signal: AbortSignal) => ReturnType<Attempt<T>>,
    signal: AbortSignal | undefined,
  ): Promise<{ data: T; response: Response; download: AbortController }> {
    let answered = new AbortController();
    const { data, response } = await withRetries(
      async (attemptSignal) => {
        const request = new AbortController();
        answered = request;
        const forward = () => request.abort(attemptSignal.reason);
        attemptSignal.addEventListener("abort", forward, { once: true });
        try {
          return await get(request.signal);
        } finally {
          attemptSignal.removeEventListener("abort", forward);
        }
      },
      this.retry,
      signal,
    );
    return { data, response, download: answered };
  }

  /**
   * An NDJSON download's values (an archived day's messages), parsed as the body streams in: the
   * answer is waited for as a streamed read; once it is there, only the caller's signal stops it.
   */
  async *lines<T>(
    get: (signal: AbortSignal) => ReturnType<Attempt<ReadableStream<Uint8Array> | null>>,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<T, void, undefined> {
    const { data: body, download } = await this.streamed(get, signal);
    if (!body) return;
    const stop = () => download.abort(signal?.reason);
    signal?.addEventListener("abort", stop, { once: true });
    if (signal?.aborted) stop();
    try {
      yield* ndjsonValues<T>(body, signal);
    } finally {
      signal?.removeEventListener("abort", stop);
    }
  }

  /** A send: without `idempotencyKey` a new UUID, and either way the same key on every attempt. */
  async send<S extends string>(
    post: (idempotencyKey: string, signal: AbortSignal) => ReturnType<Attempt<{ jobId: string; status: S }>>,
    options: CallOptions & { idempotencyKey?: string },
  ): Promise<{ jobId: string; status: S; idempotencyKey: string }> {
    const idempotencyKey = options.idempotencyKey ?? crypto.randomUUID();
    const { data } = await withRetries((signal) => post(idempotencyKey, signal), this.retry, options.signal);
    return { jobId: data.jobId, status: data.status, idempotencyKey };
  }
}
