import { ConnectionError, apiErrorFrom } from "./errors.js";

export interface RetryOptions {
  /** Retries after the first attempt (default 4). 0 disables retrying. */
  maxRetries: number;
  /** Backoff before the first retry, doubled on each further one (default 500 ms). */
  initialDelayMs: number;
  /** Largest backoff between two attempts (default 8 s). A longer `Retry-After` is still honoured. */
  maxDelayMs: number;
  /** Time budget of one call, all attempts and waits included (default 60 s). */
  deadlineMs: number;
}

export const DEFAULT_RETRY: RetryOptions = {
  maxRetries: 4,
  initialDelayMs: 500,
  maxDelayMs: 8_000,
  deadlineMs: 60_000,
};

/** What one attempt returns: openapi-fetch's `{ data, error, response }`. */
export interface Attempt<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * Statuses worth another attempt with the same request: 429 when the API says when
 * (`Retry-After`; a used-up monthly quota has none and is final), and 5xx unless the answer
 * says `retriable: false`. Never 4xx otherwise: 400, 401, 403, 404, 405 and 409 answer the same
 * every time.
 */
const retriable = (response: Response): boolean =>
  response.status >= 500 || (response.status === 429 && response.headers.has("retry-after"));

/** Exponential backoff with "equal jitter": half the step for sure, half at random. */
export function backoffMs(retry: number, options: RetryOptions, random: () => number = Math.random): number {
  const step = Math.min(options.maxDelayMs, options.initialDelayMs * 2 ** retry);
  return Math.round(step / 2 + random() * (step / 2));
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Runs `attempt` until it succeeds, fails for good, or the retries or the deadline run
 * out. Every attempt must send the same request (for a send: the same Idempotency-Key),
 * which is what makes retrying a network error safe.
 */
export async function withRetries<T>(
  attempt: (signal: AbortSignal) => Promise<Attempt<T>>,
  options: RetryOptions,
  signal?: AbortSignal,
): Promise<{ data: T; response: Response }> {
  const deadline = Date.now() + options.deadlineMs;
  for (let attempts = 1; ; attempts++) {
    const budget = deadline - Date.now();
    const timeout = AbortSignal.timeout(Math.max(1, budget));
    const attemptSignal = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let result: Attempt<T> | undefined;
    let failure: unknown;
    try {
      result = await attempt(attemptSignal);
    } catch (err) {
      // The caller's own abort is final; anything else is a failure to get an answer.
      if (signal?.aborted) throw signal.reason;
      failure = err;
    }

    let wait: number;
    if (result) {
      if (result.response.ok) return { data: result.data as T, response: result.response };
      const error = apiErrorFrom(result.response, result.error);
      // A 502 carrying the operator's `retriable: false` answers the same every time.
      if (!retriable(result.response) || error.retriable === false || attempts > options.maxRetries) throw error;
      // Retry-After is honoured as given, with a little jitter so that clients told the same second spread out.
      wait =
        error.retryAfterSeconds !== null
          ? error.retryAfterSeconds * 1000 + Math.round(Math.random() * 250)
          : backoffMs(attempts - 1, options);
      if (Date.now() + wait > deadline) throw error;
    } else {
      const timedOut = timeout.aborted;
      const message = timedOut
        ? `no answer within the ${options.deadlineMs} ms deadline`
        : `request failed: ${String((failure as Error)?.message ?? failure)}`;
      if (timedOut || attempts > options.maxRetries)
        throw new ConnectionError(`${message} (${attempts} attempt${attempts > 1 ? "s" : ""})`, {
          cause: failure,
          attempts,
        });
      wait = backoffMs(attempts - 1, options);
      if (Date.now() + wait > deadline) {
        throw new ConnectionError(
          `${message}; the deadline leaves no time for another attempt (${attempts} attempts)`,
          { cause: failure, attempts },
        );
      }
    }
    await sleep(wait, signal);
  }
}

/** One attempt, no retry: for calls that are not safe to repeat. */
export async function once<T>(
  attempt: (signal: AbortSignal | undefined) => Promise<Attempt<T>>,
  signal?: AbortSignal,
): Promise<T> {
  let result: Attempt<T>;
  try {
    result = await attempt(signal);
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw new ConnectionError(`request failed: ${String((err as Error)?.message ?? err)}`, { cause: err, attempts: 1 });
  }
  if (!result.response.ok) throw apiErrorFrom(result.response, result.error);
  return result.data as T;
}
