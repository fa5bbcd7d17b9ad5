import { describe, expect, it } from "vitest";
import {
  NUMBER_LIMIT,
  WORKSPACE_LIMIT,
  retryAfterSeconds,
  windowState,
  type WindowLimit,
} from "../../../src/domain/rate-window";

const twoPerSecond: WindowLimit = { limit: 2, windowMs: 1_000 };

describe("windowState", () => {
  it("a free window admits at once and reports what is left", () => {
    expect(windowState(twoPerSecond, [], 0, 5_000)).toEqual({ limit: 2, remaining: 2, retryAfterMs: 0, resetMs: 0 });
    expect(windowState(twoPerSecond, [4_500], 0, 5_000)).toEqual({
      limit: 2,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 500,
    });
  });

  it("a full window frees when its oldest send leaves (half-open: a send at t frees its slot at t + window)", () => {
    expect(windowState(twoPerSecond, [4_200, 4_700], 0, 5_000)).toMatchObject({
      remaining: 0,
      retryAfterMs: 200,
      resetMs: 700,
    });
    expect(windowState(twoPerSecond, [4_200, 4_700], 0, 5_199)).toMatchObject({ remaining: 0, retryAfterMs: 1 });
  });

  it("with more sends counted than the limit, the next slot frees when enough of the oldest have left", () => {
    // Three counted against a limit of two: one more is admitted once two are gone, i.e. when the second oldest leaves.
    expect(windowState(twoPerSecond, [100, 200, 300], 0, 400)).toMatchObject({
      remaining: 0,
      retryAfterMs: 200 + 1_000 - 400,
    });
    // Reserved sends not recorded yet count too; the time still comes from the recorded ones.
    expect(windowState(twoPerSecond, [100, 200], 1, 400)).toMatchObject({
      remaining: 0,
      retryAfterMs: 200 + 1_000 - 400,
    });
    expect(windowState(twoPerSecond, [100], 2, 400)).toMatchObject({
      remaining: 0,
      retryAfterMs: twoPerSecond.windowMs,
    });
  });

  it("the number's and the workspace's limits are those of the contract", () => {
    expect(NUMBER_LIMIT).toEqual({ limit: 2, windowMs: 1_000 });
    expect(WORKSPACE_LIMIT).toEqual({ limit: 1_200, windowMs: 60_000 });
  });
});

describe("Retry-After", () => {
  it("is whole seconds rounded up, so a client that waits it is never refused again by the same send", () => {
    // 1.2 s left is 2 s: rounding to the nearest would answer 1 and the retry would be refused.
    expect(retryAfterSeconds(1_200)).toBe(2);
    expect(retryAfterSeconds(1_000)).toBe(1);
    expect(retryAfterSeconds(1_001)).toBe(2);
    expect(retryAfterSeconds(2_499)).toBe(3);
  });

  it("is at least 1, also when the window frees within the second", () => {
    expect(retryAfterSeconds(0)).toBe(1);
    expect(retryAfterSeconds(40)).toBe(1);
  });

  it("from a window whose oldest send leaves in 1.2 s", () => {
    const w = windowState(
      WORKSPACE_LIMIT,
      Array.from({ length: 1_200 }, (_, i) => 10_000 + i),
      0,
      10_000 + 60_000 - 1_200,
    );
    expect(w).toMatchObject({ remaining: 0, retryAfterMs: 1_200 });
    expect(retryAfterSeconds(w.retryAfterMs)).toBe(2);
  });
});

describe("the send windows", () => {
  it("are 2 per second per number and 1,200 per minute per workspace", () => {
    expect(NUMBER_LIMIT).toEqual({ limit: 2, windowMs: 1_000 });
    expect(WORKSPACE_LIMIT).toEqual({ limit: 1_200, windowMs: 60_000 });
  });
});

describe("windowState: reservations and the half-open window", () => {
  it("an empty window admits at once and has nothing to reset", () => {
    expect(windowState(NUMBER_LIMIT, [], 0, 5_000)).toEqual({ limit: 2, remaining: 2, retryAfterMs: 0, resetMs: 0 });
  });

  it("counts the sends inside the window and the ones reserved but not yet recorded", () => {
    expect(windowState(NUMBER_LIMIT, [4_500], 0, 5_000)).toEqual({
      limit: 2,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 500,
    });
    expect(windowState(NUMBER_LIMIT, [4_500], 1, 5_000)).toMatchObject({ remaining: 0, retryAfterMs: 500 });
  });

  it("a full window frees its oldest slot exactly one window after that send (half-open)", () => {
    const full = windowState(NUMBER_LIMIT, [4_200, 4_700], 0, 5_000);
    expect(full).toEqual({ limit: 2, remaining: 0, retryAfterMs: 200, resetMs: 700 });
    expect(windowState(NUMBER_LIMIT, [4_200, 4_700], 0, 5_199).retryAfterMs).toBe(1);
  });

  it("over the limit (reservations counted), waits for the slot that frees the capacity needed", () => {
    // Two recorded and one reserved against a limit of 2: the second-oldest send's slot must free.
    expect(windowState(NUMBER_LIMIT, [4_200, 4_700], 1, 5_000)).toMatchObject({ remaining: 0, retryAfterMs: 700 });
    // Reservations alone: a whole window.
    expect(windowState(NUMBER_LIMIT, [], 2, 5_000)).toMatchObject({ remaining: 0, retryAfterMs: 1_000, resetMs: 0 });
  });
});

describe("retryAfterSeconds: whole seconds", () => {
  it("rounds up to whole seconds, and is at least 1", () => {
    expect([0, 1, 999, 1_000, 1_001, 59_001].map(retryAfterSeconds)).toEqual([1, 1, 1, 1, 2, 60]);
  });
});
