import { describe, expect, it } from "vitest";
import { classifyOperatorError, pairRateDelayMs } from "../../../src/upstream/error-codes";

describe("pair-rate refusals", () => {
  it("back off 4^n seconds, capped", () => {
    expect([1, 2, 3].map(pairRateDelayMs)).toEqual([4_000, 16_000, 64_000]);
    expect(pairRateDelayMs(20)).toBe(15 * 60_000);
  });
});

describe("what a failed operator call means", () => {
  it("decides by the operator's code first, then by HTTP status; an answer without the operator's error object is ambiguous", () => {
    expect(classifyOperatorError(400, "131047", "x").kind).toBe("permanent");
    expect(classifyOperatorError(400, "130429", "x")).toMatchObject({ kind: "retryable", scope: "number" });
    expect(classifyOperatorError(400, "131056", "x")).toMatchObject({ kind: "retryable", pairRate: true });
    expect(classifyOperatorError(401, "190", "x")).toMatchObject({
      kind: "number_blocked",
      error: { code: "upstream_auth_failed" },
    });
    expect(classifyOperatorError(400, "131049", "x")).toMatchObject({ kind: "permanent", error: { retriable: true } });
    expect(classifyOperatorError(400, "132001", "x")).toMatchObject({
      kind: "permanent",
      error: { code: "template_error" },
    });
    expect(classifyOperatorError(500, "1", "x").kind).toBe("retryable");
    expect(classifyOperatorError(400, "99999", "x", { isTransient: true }).kind).toBe("retryable");
    expect(classifyOperatorError(400, "99999", "x").kind).toBe("permanent");
    expect(classifyOperatorError(429, null, "x")).toMatchObject({ kind: "retryable", scope: "number" });
    expect(classifyOperatorError(500, null, "x").kind).toBe("unknown");
    expect(classifyOperatorError(504, null, "x").kind).toBe("unknown");
    expect(classifyOperatorError(400, null, "x").kind).toBe("permanent");
    expect(
      classifyOperatorError(400, "131047", "x", {
        details: "Message failed to send because more than 24 hours have passed",
      }),
    ).toMatchObject({
      error: { message: expect.stringContaining("more than 24 hours have passed") },
    });
  });
});
