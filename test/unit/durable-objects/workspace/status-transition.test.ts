import { describe, expect, it } from "vitest";
import { applyTransition, type LifecycleState } from "../../../../src/durable-objects/workspace/status-transition";

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
    expect(f.next).toMatchObject({
      status: "failed",
      sent_at: 2,
      failed_at: 3,
      error_code: "recipient_unreachable",
      upstream_error_code: "131026",
    });
    for (const back of ["queued", "processing", "sent"] as const) {
      const b = applyTransition(f.next, { jobId: "j", at: 4, status: back === "queued" ? "processing" : back });
      expect(b).toMatchObject({ changed: false, announce: false });
    }
  });

  it("a failure after delivered or read is stale and changes nothing", () => {
    const delivered = fresh({ status: "sent", processing_at: 1, sent_at: 1, delivered_at: 2 });
    expect(applyTransition(delivered, { jobId: "j", at: 3, status: "failed", error: err })).toMatchObject({
      changed: false,
      announce: false,
    });
  });

  it("read before delivered is kept; delivered/read on a failed message are recorded and it stays failed", () => {
    const r = applyTransition(fresh({ status: "sent", processing_at: 1, sent_at: 1 }), {
      jobId: "j",
      at: 5,
      readAt: 5,
    });
    expect(r.next).toMatchObject({ read_at: 5, delivered_at: null });
    const failed = fresh({ status: "failed", processing_at: 1, failed_at: 1, error_code: "recipient_unreachable" });
    const d = applyTransition(failed, { jobId: "j", at: 2, deliveredAt: 2 });
    expect(d).toMatchObject({
      changed: true,
      announce: true,
      next: { status: "failed", failed_at: 1, delivered_at: 2, error_code: "recipient_unreachable" },
    });
    expect(applyTransition(d.next, { jobId: "j", at: 3, deliveredAt: 3 })).toMatchObject({ changed: false });
    expect(applyTransition(d.next, { jobId: "j", at: 4, readAt: 4 }).next).toMatchObject({
      status: "failed",
      read_at: 4,
    });
  });

  it("an unknown outcome is recorded on a processing message and cleared when it settles", () => {
    const u = applyTransition(fresh({ status: "processing", processing_at: 1 }), {
      jobId: "j",
      at: 2,
      outcomeUnknown: true,
    });
    expect(u).toMatchObject({ changed: true, announce: false, next: { outcome_unknown_since: 2 } });
    expect(applyTransition(u.next, { jobId: "j", at: 3, status: "sent" }).next).toMatchObject({
      status: "sent",
      outcome_unknown_since: null,
    });
  });
});
