import { describe, expect, it } from "vitest";
import {
  PACE_SPACING_MS,
  PACE_WINDOW_MS,
  RETRY_POLICY,
  nextCallAt,
  retryDecision,
} from "../../../../src/durable-objects/channel-number/delivery-policy";

describe("the pace at the operator", () => {
  it("spaces calls by half the window: two per window, never a pair that leaves together", () => {
    expect(nextCallAt([], 100)).toBe(100);
    expect(nextCallAt([100], 100)).toBe(100 + PACE_SPACING_MS);
    expect(nextCallAt([100], 2_000)).toBe(2_000);
    expect(nextCallAt([100, 100], 100)).toBe(100 + PACE_WINDOW_MS);
    expect(nextCallAt([100, 600], 700)).toBe(100 + PACE_WINDOW_MS);
    expect(nextCallAt([100, 600], 5_000)).toBe(5_000);
  });
});

describe("retry decisions", () => {
  const retryable = { kind: "retryable" as const, operatorCode: "131016", message: "busy" };
  it("follow the schedule, honour Retry-After up to the cap, and stop at the attempt and time budgets", () => {
    expect(retryDecision(1, 0, retryable, 0)).toEqual({ retryAt: RETRY_POLICY.delaysMs[0] });
    expect(retryDecision(2, 0, { ...retryable, retryAfterMs: 7_000 }, 0)).toEqual({ retryAt: 7_000 });
    expect(retryDecision(1, 0, { ...retryable, retryAfterMs: 86_400_000 }, 0)).toEqual({
      retryAt: RETRY_POLICY.maxDelayMs,
    });
    expect(retryDecision(RETRY_POLICY.maxAttempts, 0, retryable, 0)).toEqual({ exhausted: true });
    expect(retryDecision(2, 0, retryable, RETRY_POLICY.budgetMs)).toEqual({ exhausted: true });
    expect(retryDecision(3, 0, { ...retryable, maxAttempts: 3 }, 0)).toEqual({ exhausted: true });
  });
});
