import { ConnectionError, apiErrorFrom } from "./errors.js";
import { backoffMs, type Attempt, type RetryOptions } from "./retry.js";

/** A send limit: at most `count` accepted sends in any `windowMs` milliseconds. */
export interface PaceLimit {
  count: number;
  windowMs: number;
}

/** The API's send limits (docs/customers/limits.md): 2 a second per number, 1200 a minute per workspace. */
export const SEND_LIMITS: { perNumber: PaceLimit; perWorkspace: PaceLimit } = {
  perNumber: { count: 2, windowMs: 1_000 },
  perWorkspace: { count: 1_200, windowMs: 60_000 },
};

/** What became of one message of a paced send, by its position in the list. */
export type PacedOutcome =
  | {
      outcome: "accepted";
      index: number;
      idempotencyKey: string;
      jobId: string;
      /** `duplicado_identico` when the key had already been accepted (an earlier run, or an answer lost on the way back). */
      status: "created" | "duplicado_identico";
      attempts: number;
    }
  | {
      /**
       * Refused for good (a 400, 403, 409 …), or no answer after the retries. When the last
       * attempt got no answer (`ConnectionError`, or the batch's `signal`), the message may have
       * been accepted: sending it again with the same `idempotencyKey` is safe and tells.
       */
      outcome: "failed";
      index: number;
      idempotencyKey: string;
      error: unknown;
      attempts: number;
    }
  | {
      /** Never sent: the batch was cancelled, or the monthly quota ran out (`error` says which). */
      outcome: "not_sent";
      index: number;
      idempotencyKey: string;
      error: unknown;
      attempts: 0;
    };

export interface PacedProgress {
  /** The outcome just settled. */
  last: PacedOutcome;
  total: number;
  accepted: number;
  failed: number;
  notSent: number;
}

export interface PacedResult {
  /** One per message, in the order of the list. */
  outcomes: PacedOutcome[];
  accepted: number;
  failed: number;
  notSent: number;
}

export interface PacedSendOptions<M> {
  /**
   * Each message's Idempotency-Key. By default a new UUID per message, made once: every retry of
   * that message reuses it. Give keys derived from your own ids (an order number) to make a
   * whole batch safe to run again: messages already accepted are then answered as replays.
   */
  idempotencyKey?: (message: M, index: number) => string;
  /** Called once per message as its outcome settles. An exception thrown here stops the batch and rejects it. */
  onProgress?: (progress: PacedProgress) => void;
  /** Cancels: nothing more is sent, a request on the way is aborted, and the rest end `not_sent`. */
  signal?: AbortSignal;
  /** The limits to pace to; the API's by default. */
  limits?: Partial<typeof SEND_LIMITS>;
}

/** One attempt of a send with its key (what openapi-fetch answers). */
export type PacedPost<M> = (
  message: M,
  idempotencyKey: string,
  signal: AbortSignal,
) => Promise<Attempt<{ jobId: string; status: "created" | "duplicado_identico" }>>;

/** A message refused by a limit this many times in a row fails with that 429 (someone else is using the capacity). */
const MAX_LIMIT_REFUSALS = 10;

/**
 * The server counts a send when it accepts it, which is between the request leaving and its
 * answer arriving here; a few milliseconds more cover the two clocks' rounding.
 */
const CLOCK_MARGIN_MS = 10;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * A sliding window of sends, counted by when their answers arrived: a send starts only when
 * fewer than `count` sends answered within the last `windowMs` or are still on the way. The
 * server accepted each of those before its answer arrived here, and accepts the new one after
 * it leaves, so no window of the server's ever holds more than `count`. Waiters go in turn.
 */
class SendWindow {
  /** Answer times of the sends that may have counted, ascending. */
  private readonly answered: number[] = [];
  private onTheWay = 0;
  private pausedUntil = 0;
  private turn: Promise<unknown> = Promise.resolve();
  private readonly waiting = new Set<() => void>();

  constructor(private readonly limit: PaceLimit) {}

  /** Waits for room (in turn), then holds it until `release`: `counted` says whether the send may have used it. */
  acquire(signal: AbortSignal): Promise<(counted: boolean) => void> {
    const mine = this.turn.then(() => this.room(signal));
    this.turn = mine.catch(() => undefined);
    return mine;
  }

  /** No send starts before `until` (a 429's Retry-After). */
  pause(until: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, until);
  }

  private async room(signal: AbortSignal): Promise<(counted: boolean) => void> {
    for (;;) {
      signal.throwIfAborted();
      const now = Date.now();
      const since = now - this.limit.windowMs - CLOCK_MARGIN_MS;
      while (this.answered.length > 0 && this.answered[0]! <= since) this.answered.shift();
      if (now < this.pausedUntil) {
        await sleep(this.pausedUntil - now, signal);
        continue;
      }
      if (this.answered.length + this.onTheWay < this.limit.count) {
        this.onTheWay++;
        return (counted) => this.release(counted);
      }
      // Full: until the oldest answer leaves the window, or a send on the way is answered (it may not count).
      const oldest = this.answered[0];
      await this.changeOrTimeout(oldest === undefined ? null : oldest - since, signal);
    }
  }

  private release(counted: boolean): void {
    this.onTheWay--;
    if (counted) this.answered.push(Date.now());
    for (const wake of [...this.waiting]) wake();
  }

  private changeOrTimeout(ms: number | null, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const end = () => {
        if (timer !== undefined) clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        this.waiting.delete(wake);
      };
      const wake = () => {
        end();
        resolve();
      };
      const onAbort = () => {
        end();
        reject(signal.reason);
      };
      const timer = ms === null ? undefined : setTimeout(wake, ms);
      this.waiting.add(wake);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}

/** Which limit refused a 429: the first entry of its `RateLimit` field (`"number";r=0;t=1`). */
function refusedBy(response: Response): "number" | "workspace" {
  return /^\s*"workspace"/.test(response.headers.get("ratelimit") ?? "") ? "workspace" : "number";
}

/**
 * Sends `messages` at the pace the API admits: one number's messages one after another, in list
 * order, within its limit; numbers side by side within the workspace's limit. A message's
 * retries (a 429's Retry-After waited out, 5xx and network errors with back-off) reuse its key,
 * so nothing is sent twice.
 */
export async function sendPaced<M extends { channelNumberId: string }>(
  messages: readonly M[],
  post: PacedPost<M>,
  retry: RetryOptions,
  options: PacedSendOptions<M> = {},
): Promise<PacedResult> {
  const keys = messages.map((m, i) => options.idempotencyKey?.(m, i) ?? crypto.randomUUID());
  const seen = new Map<string, number>();
  keys.forEach((key, i) => {
    const first = seen.get(key);
    if (first !== undefined) throw new TypeError(`messages ${first} and ${i} have the same idempotencyKey "${key}"`);
    seen.set(key, i);
  });

  const limits = { ...SEND_LIMITS, ...options.limits };
  for (const [name, limit] of Object.entries(limits)) {
    if (!(Number.isInteger(limit.count) && limit.count >= 1 && limit.windowMs >= 0))
      throw new TypeError(`limits.${name} needs a whole count of at least 1 and a windowMs of at least 0`);
  }
  const workspace = new SendWindow(limits.perWorkspace);
  // Stops the waits: the caller's signal, the quota running out, or onProgress throwing.
  const stop = new AbortController();
  const callerSignal = options.signal;
  const onCallerAbort = () => stop.abort(callerSignal?.reason);
  callerSignal?.addEventListener("abort", onCallerAbort, { once: true });
  if (callerSignal?.aborted) onCallerAbort();
  let progressError: { error: unknown } | null = null;

  const outcomes: PacedOutcome[] = new Array<PacedOutcome>(messages.length);
  const counts = { accepted: 0, failed: 0, notSent: 0 };
  const settle = (outcome: PacedOutcome) => {
    outcomes[outcome.index] = outcome;
    if (outcome.outcome === "accepted") counts.accepted++;
    else if (outcome.outcome === "failed") counts.failed++;
    else counts.notSent++;
    if (!options.onProgress || progressError) return;
    try {
      options.onProgress({ last: outcome, total: messages.length, ...counts });
    } catch (error) {
      progressError = { error };
      stop.abort(error);
    }
  };

  const sendOne = async (index: number, number: SendWindow): Promise<PacedOutcome> => {
    const message = messages[index]!;
    const idempotencyKey = keys[index]!;
    let attempts = 0;
    let failures = 0;
    let refusals = 0;
    for (;;) {
      if (stop.signal.aborted)
        return attempts === 0
          ? { outcome: "not_sent", index, idempotencyKey, error: stop.signal.reason, attempts: 0 }
          : { outcome: "failed", index, idempotencyKey, error: stop.signal.reason, attempts };
      let releaseNumber: (counted: boolean) => void;
      let releaseWorkspace: (counted: boolean) => void;
      try {
        releaseNumber = await number.acquire(stop.signal);
        try {
          releaseWorkspace = await workspace.acquire(stop.signal);
        } catch (err) {
          releaseNumber(false);
          throw err;
        }
      } catch {
        continue; // stopped while waiting: settled at the top
      }
      attempts++;
      const timeout = AbortSignal.timeout(retry.deadlineMs);
      let result: Awaited<ReturnType<PacedPost<M>>> | undefined;
      let failure: unknown;
      try {
        result = await post(message, idempotencyKey, callerSignal ? AbortSignal.any([callerSignal, timeout]) : timeout);
      } catch (err) {
        failure = err;
      }
      const status = result?.response.status;
      // A send uses the limits when accepted (201); a lost answer or a 5xx may have been.
      const counted = status === undefined || status === 201 || status >= 500;
      releaseNumber(counted);
      releaseWorkspace(counted);

      if (result?.response.ok) {
        const data = result.data!;
        return { outcome: "accepted", index, idempotencyKey, jobId: data.jobId, status: data.status, attempts };
      }
      if (callerSignal?.aborted)
        return { outcome: "failed", index, idempotencyKey, error: callerSignal.reason, attempts };
      let error: unknown;
      if (result) {
        const apiError = apiErrorFrom(result.response, result.error);
        if (apiError.status === 429 && apiError.retryAfterSeconds !== null) {
          // Someone else used the capacity (another process, the same key elsewhere): wait as told, then retry.
          if (++refusals > MAX_LIMIT_REFUSALS)
            return { outcome: "failed", index, idempotencyKey, error: apiError, attempts };
          (refusedBy(result.response) === "workspace" ? workspace : number).pause(
            Date.now() + apiError.retryAfterSeconds * 1000,
          );
          continue;
        }
        if (apiError.status === 429) {
          // The monthly quota: every later send would be refused the same way.
          stop.abort(apiError);
          return { outcome: "failed", index, idempotencyKey, error: apiError, attempts };
        }
        if (apiError.status < 500) return { outcome: "failed", index, idempotencyKey, error: apiError, attempts };
        error = apiError;
      } else {
        error = new ConnectionError(
          timeout.aborted
            ? `no answer within ${retry.deadlineMs} ms`
            : `request failed: ${String((failure as Error)?.message ?? failure)}`,
          { cause: failure, attempts },
        );
      }
      refusals = 0;
      if (++failures > retry.maxRetries) return { outcome: "failed", index, idempotencyKey, error, attempts };
      try {
        await sleep(backoffMs(failures - 1, retry), stop.signal);
      } catch {
        return { outcome: "failed", index, idempotencyKey, error, attempts };
      }
    }
  };

  // One lane per number: its messages in list order, one request at a time.
  const lanes = new Map<string, number[]>();
  messages.forEach((m, i) => {
    const lane = lanes.get(m.channelNumberId);
    if (lane) lane.push(i);
    else lanes.set(m.channelNumberId, [i]);
  });
  try {
    await Promise.all(
      [...lanes.values()].map(async (lane) => {
        const number = new SendWindow(limits.perNumber);
        for (const index of lane) settle(await sendOne(index, number));
      }),
    );
  } finally {
    callerSignal?.removeEventListener("abort", onCallerAbort);
  }
  if (progressError) throw (progressError as { error: unknown }).error;
  return { outcomes, ...counts };
}
