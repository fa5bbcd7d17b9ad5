import { describe, expect, it } from "vitest";
import { stepBackoffMs } from "../../../../src/durable-objects/shared/scheduler";

describe("a failing scheduled step", () => {
  it("backs off 1 s, 2 s, 4 s … up to a minute, with jitter", () => {
    expect(stepBackoffMs(1, () => 0.5)).toBe(1_000);
    expect(stepBackoffMs(3, () => 0.5)).toBe(4_000);
    expect(stepBackoffMs(20, () => 0.5)).toBe(60_000);
    expect(stepBackoffMs(1, () => 0)).toBe(800);
  });
});
