import { describe, expect, it } from "vitest";
import { applyTransition, type LifecycleState } from "../src/durable-objects/workspace/status-transition";
import { PACE_SPACING_MS, PACE_WINDOW_MS, RETRY_POLICY, nextCallAt, retryDecision } from "../src/durable-objects/channel-number/delivery-policy";
import { QUEUE_BUDGET, planBatches, queuedBytes } from "../src/lib/queue-publisher";
import { stepBackoffMs } from "../src/durable-objects/shared/scheduler";
import { classifyOperatorError, pairRateDelayMs } from "../src/upstream/error-codes";

const fresh = (over: Partial<LifecycleState> = {}): LifecycleState => ({
  status: "queued",
  upstream_message_id: null,
  processing_at: null,
  sent_at: null,
  failed_at: null,
  delivered_at: null,
  read_at: null,
  outcome_unknown_since: null,
  error_code: null,
  error_message: null,
  error_retriable: null,
  upstream_error_code: null,
  ...over,
});
const err = { code: "recipient_unreachable", message: "x", retriable: false, upstreamCode: "131026" };

describe("status transitions", () => {
  it("move forward only: queued → processing → sent → failed", () => {
    const p = applyTransition(fresh(), { jobId: "j", at: 1, status: "processing" });
    expect(p).toMatchObject({ changed: true, announce: true, next: { status: "processing", processing_at: 1 } });
    const s = applyTransition(p.next, { jobId: "j", at: 2, status: "sent", upstreamMessageId: "w" });
    expect(s.next).toMatchObject({ status: "sent", sent_at: 2, upstream_message_id: "w" });
    const f = applyTransition(s.next, { jobId: "j", at: 3, status: "failed", error: err });
    expect(f.next).toMatchObject({ status: "failed", sent_at: 2, failed_at: 3, error_code: "recipient_unreachable", upstream_error_code: "131026" });
    for (const back of ["queued", "processing", "sent"] as const) {
      const b = applyTransition(f.next, { jobId: "j", at: 4, status: back === "queued" ? "processing" : back });
      expect(b).toMatchObject({ changed: false, announce: false });
    }
  });

  it("a failure after delivered or read is stale and changes nothing", () => {
    const delivered = fresh({ status: "sent", processing_at: 1, sent_at: 1, delivered_at: 2 });
    expect(applyTransition(delivered, { jobId: "j", at: 3, status: "failed", error: err })).toMatchObject({ changed: false, announce: false });
  });

  it("read before delivered is kept; delivered/read on a failed message are ignored", () => {
    const r = applyTransition(fresh({ status: "sent", processing_at: 1, sent_at: 1 }), { jobId: "j", at: 5, readAt: 5 });
    expect(r.next).toMatchObject({ read_at: 5, delivered_at: null });
    expect(applyTransition(fresh({ status: "failed", processing_at: 1, failed_at: 1 }), { jobId: "j", at: 2, deliveredAt: 2 })).toMatchObject({ changed: false });
  });

  it("an unknown outcome is recorded on a processing message and cleared when it settles", () => {
    const u = applyTransition(fresh({ status: "processing", processing_at: 1 }), { jobId: "j", at: 2, outcomeUnknown: true });
    expect(u).toMatchObject({ changed: true, announce: false, next: { outcome_unknown_since: 2 } });
    expect(applyTransition(u.next, { jobId: "j", at: 3, status: "sent" }).next).toMatchObject({ status: "sent", outcome_unknown_since: null });
  });
});

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
  const retryable = { kind: "retryable" as const, upstreamCode: "131016", message: "busy" };
  it("follow the schedule, honour Retry-After up to the cap, and stop at the attempt and time budgets", () => {
    expect(retryDecision(1, 0, retryable, 0)).toEqual({ retryAt: RETRY_POLICY.delaysMs[0] });
    expect(retryDecision(2, 0, { ...retryable, retryAfterMs: 7_000 }, 0)).toEqual({ retryAt: 7_000 });
    expect(retryDecision(1, 0, { ...retryable, retryAfterMs: 86_400_000 }, 0)).toEqual({ retryAt: RETRY_POLICY.maxDelayMs });
    expect(retryDecision(RETRY_POLICY.maxAttempts, 0, retryable, 0)).toEqual({ exhausted: true });
    expect(retryDecision(2, 0, retryable, RETRY_POLICY.budgetMs)).toEqual({ exhausted: true });
    expect(retryDecision(3, 0, { ...retryable, maxAttempts: 3 }, 0)).toEqual({ exhausted: true });
  });
  it("pair-rate refusals back off 4^n seconds, capped", () => {
    expect([1, 2, 3].map(pairRateDelayMs)).toEqual([4_000, 16_000, 64_000]);
    expect(pairRateDelayMs(20)).toBe(15 * 60_000);
  });
});

describe("what a failed operator call means", () => {
  it("decides by the operator's code first, then by HTTP status; an answer without the operator's error object is ambiguous", () => {
    expect(classifyOperatorError(400, "131047", "x").kind).toBe("permanent");
    expect(classifyOperatorError(400, "130429", "x")).toMatchObject({ kind: "retryable", scope: "number" });
    expect(classifyOperatorError(400, "131056", "x")).toMatchObject({ kind: "retryable", pairRate: true });
    expect(classifyOperatorError(401, "190", "x")).toMatchObject({ kind: "number_blocked", error: { code: "upstream_auth_failed" } });
    expect(classifyOperatorError(400, "131049", "x")).toMatchObject({ kind: "permanent", error: { retriable: true } });
    expect(classifyOperatorError(400, "132001", "x")).toMatchObject({ kind: "permanent", error: { code: "template_error" } });
    expect(classifyOperatorError(500, "1", "x").kind).toBe("retryable");
    expect(classifyOperatorError(400, "99999", "x", { isTransient: true }).kind).toBe("retryable");
    expect(classifyOperatorError(400, "99999", "x").kind).toBe("permanent");
    expect(classifyOperatorError(429, null, "x")).toMatchObject({ kind: "retryable", scope: "number" });
    expect(classifyOperatorError(500, null, "x").kind).toBe("unknown");
    expect(classifyOperatorError(504, null, "x").kind).toBe("unknown");
    expect(classifyOperatorError(400, null, "x").kind).toBe("permanent");
    expect(classifyOperatorError(400, "131047", "x", { details: "Message failed to send because more than 24 hours have passed" })).toMatchObject({
      error: { message: expect.stringContaining("more than 24 hours have passed") },
    });
  });
});

describe("queue batches", () => {
  it("are sized by bytes as well as by count, and set apart what can never be sent", () => {
    const big = "😀".repeat(4_096); // 16 KB of UTF-8
    const items = Array.from({ length: 100 }, (_, i) => ({ key: i, body: { event: { id: i, text: big } } }));
    const { batches, oversize } = planBatches([...items, { key: 999, body: { blob: "x".repeat(QUEUE_BUDGET.messageBytes + 1) } }]);
    expect(oversize.map((o) => o.key)).toEqual([999]);
    expect(batches.flat().map((b) => b.key)).toEqual(items.map((i) => i.key));
    for (const batch of batches) {
      expect(batch.length).toBeLessThanOrEqual(QUEUE_BUDGET.batchMessages);
      expect(batch.reduce((n, b) => n + b.bytes, 0)).toBeLessThanOrEqual(QUEUE_BUDGET.batchBytes);
    }
    expect(batches.length).toBeGreaterThan(1);
    expect(queuedBytes({ a: "é" })).toBe(10);
  });
});

describe("a failing scheduled step", () => {
  it("backs off 1 s, 2 s, 4 s … up to a minute, with jitter", () => {
    expect(stepBackoffMs(1, () => 0.5)).toBe(1_000);
    expect(stepBackoffMs(3, () => 0.5)).toBe(4_000);
    expect(stepBackoffMs(20, () => 0.5)).toBe(60_000);
    expect(stepBackoffMs(1, () => 0)).toBe(800);
  });
});
