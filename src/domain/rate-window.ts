/** Sliding-log limits: at most `limit` accepted sends in any window of `windowMs`. */
export interface WindowLimit {
  limit: number;
  windowMs: number;
}

export const NUMBER_LIMIT: WindowLimit = { limit: 2, windowMs: 1_000 };
export const WORKSPACE_LIMIT: WindowLimit = { limit: 1_200, windowMs: 60_000 };

export interface WindowState {
  limit: number;
  remaining: number;
  /** Milliseconds until one more send would be admitted (0 when one is admitted now). */
  retryAfterMs: number;
  /** Milliseconds until the window is entirely free again. */
  resetMs: number;
}

/**
 * `recent` holds acceptance times (ascending) that are still inside the window
 * ending at `at`, i.e. t > at - windowMs; `extra` counts sends reserved but not yet
 * recorded. A window is half-open, so a send at t frees its slot at t + windowMs.
 */
export function windowState(w: WindowLimit, recent: number[], extra: number, at: number): WindowState {
  const used = recent.length + extra;
  const remaining = Math.max(0, w.limit - used);
  const oldest = recent[0];
  let retryAfterMs = 0;
  if (remaining === 0) {
    // The slot that frees first is that of the (used - limit + 1)-th oldest send.
    const freeing = recent[used - w.limit];
    retryAfterMs = freeing === undefined ? w.windowMs : freeing + w.windowMs - at;
  }
  const newest = recent.at(-1);
  const resetMs = newest === undefined ? 0 : newest + w.windowMs - at;
  return {
    limit: w.limit,
    remaining,
    retryAfterMs: Math.max(0, retryAfterMs),
    resetMs: Math.max(0, oldest === undefined ? 0 : resetMs),
  };
}

/** `Retry-After` is whole seconds, at least 1. */
export const retryAfterSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));
