import { Paginated, type Page } from "./paginate.js";
import { withRetries, type RetryOptions } from "./retry.js";
import type { CallOptions } from "./client.js";

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
