import { describe, expect, it } from "vitest";
import { NUMBER_LIMIT, WORKSPACE_LIMIT, retryAfterSeconds, windowState } from "../../../src/domain/rate-window";

describe("the send windows", () => {
  it("are 2 per second per number and 1,200 per minute per workspace", () => {
    expect(NUMBER_LIMIT).toEqual({ limit: 2, windowMs: 1_000 });
    expect(WORKSPACE_LIMIT).toEqual({ limit: 1_200, windowMs: 60_000 });
  });
});

describe("windowState", () => {
  it("an empty window admits at once and has nothing to reset", () => {
    expect(windowState(NUMBER_LIMIT, [], 0, 5_000)).toEqual({ limit: 2, remaining: 2, retryAfterMs: 0, resetMs: 0 });
  });

  it("counts the sends inside the window and the ones reserved but not yet recorded", () => {
    expect(windowState(NUMBER_LIMIT, [4_500], 0, 5_000)).toEqual({ limit: 2, remaining: 1, retryAfterMs: 0, resetMs: 500 });
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

describe("retryAfterSeconds", () => {
  it("rounds up to whole seconds, and is at least 1", () => {
    expect([0, 1, 999, 1_000, 1_001, 59_001].map(retryAfterSeconds)).toEqual([1, 1, 1, 1, 2, 60]);
  });
});
