import { describe, expect, it } from "vitest";
import { checkNumberRate } from "../../../bench/soak/checks.ts";

// A call as the soak's fake operator records it: started by the number object at `startedAt`
// (X-Call-Started-At), received at `at`.
/** @param {string} phoneNumberId @param {number} startedAt @returns {import("../../../bench/lib/operator.ts").OperatorCall} */
const call = (phoneNumberId, startedAt, transit = 3, n = startedAt) => ({
  phoneNumberId,
  jobId: `job-${phoneNumberId}-${n}`,
  attempt: 1,
  startedAt,
  at: startedAt + transit,
  seq: n,
  to: "+5511999",
  text: "hi",
  messagingProduct: "whatsapp",
  answer: "accepted",
  code: null,
  processed: true,
});

describe("the soak's pace check", () => {
  it("passes calls started 505 ms apart, whatever their transit to the operator, and reports that transit", () => {
    const calls = [call("A", 0, 120), call("A", 505), call("A", 1_010), call("A", 1_515), call("B", 0), call("B", 505)];
    const { figures, failures } = checkNumberRate(calls);
    expect(failures).toEqual([]);
    expect(figures.maxCallsPerNumberIn1sAsStarted).toBe(2);
    expect(figures.minStartedSpanOf3ConsecutiveCallsMs).toBe(1_010);
    // The first call arrived 120 ms late: 0+120, 508, 1013 lie within 1 s at the operator, which the object cannot see.
    expect(figures.transitMs).toEqual({ p50: 3, p99: 120, max: 120 });
  });

  it("fails three calls of one number started within one second, whatever their transit", () => {
    const calls = [call("A", 0, 400), call("A", 400, 200), call("A", 999, 3)];
    const { failures, figures } = checkNumberRate(calls);
    expect(figures.maxCallsPerNumberIn1sAsStarted).toBe(3);
    expect(failures).toEqual([expect.objectContaining({ phoneNumberId: "A", calls: 3, startedSpanMs: 999 })]);
  });

  it("fails a call without its start time instead of leaving it out", () => {
    const calls = [call("A", 0), { ...call("A", 600), startedAt: null }];
    const { failures, figures } = checkNumberRate(calls);
    expect(figures.unstampedCalls).toBe(1);
    expect(failures).toEqual([expect.objectContaining({ problem: "call without X-Call-Started-At" })]);
  });
});
