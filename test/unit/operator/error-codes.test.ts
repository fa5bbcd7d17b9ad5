import { describe, expect, it } from "vitest";
import {
  classifyOperatorError,
  isAccountLevel,
  pairRateDelayMs,
  permanentError,
  readMarkError,
} from "../../../src/operator/error-codes";

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
      error: { code: "template_not_found" },
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

describe("the error a failed status webhook gives the message", () => {
  it("a 'try again' code the operator gave up on is upstream_temporary_failure, retriable; account-level codes keep their pause code", () => {
    for (const code of ["131000", "131016", "130429", "2", "131057", "131056"])
      expect(permanentError(code, "Something went wrong", "details")).toEqual({
        code: "upstream_temporary_failure",
        message: expect.stringContaining("(details)"),
        retriable: true,
        upstreamCode: code,
      });
    expect(permanentError("131031", "locked")).toMatchObject({ code: "account_restricted", retriable: true });
    expect(permanentError("131026", "undeliverable")).toMatchObject({
      code: "recipient_unreachable",
      retriable: false,
    });
    expect(permanentError("999001", "new")).toMatchObject({ code: "upstream_rejected", retriable: false });
  });

  it("account-level codes are those of the pause table, the API permission range 200–299 included", () => {
    for (const code of [
      "190",
      "0",
      "3",
      "10",
      "368",
      "131031",
      "131042",
      "131045",
      "131048",
      "133010",
      "33",
      "131005",
      "131037",
      "200",
      "250",
      "299",
    ])
      expect([code, isAccountLevel(code)]).toEqual([code, true]);
    for (const code of ["199", "300", "131026", "131000", "132000", null])
      expect([code, isAccountLevel(code)]).toEqual([code, false]);
  });
});

describe("the error a refused read mark answers with", () => {
  it("is the code's own for a final or account-level refusal; retriable for a 'try again' or a lost answer", () => {
    expect(readMarkError(classifyOperatorError(401, "190", "Invalid token"))).toEqual({
      code: "upstream_auth_failed",
      message: "The number's access token is invalid or expired.",
      retriable: true,
      upstreamCode: "190",
    });
    expect(readMarkError(classifyOperatorError(400, "100", "Invalid parameter"))).toMatchObject({
      code: "invalid_parameters",
      retriable: false,
      upstreamCode: "100",
    });
    expect(readMarkError(classifyOperatorError(503, "131016", "Service unavailable"))).toMatchObject({
      code: "upstream_temporary_failure",
      retriable: true,
      upstreamCode: "131016",
    });
    expect(readMarkError(classifyOperatorError(429, null, "Too many"))).toMatchObject({
      code: "upstream_temporary_failure",
      retriable: true,
      upstreamCode: null,
    });
    expect(readMarkError({ kind: "unknown", message: "No answer." })).toMatchObject({
      code: "upstream_unavailable",
      retriable: true,
      upstreamCode: null,
    });
  });
});
