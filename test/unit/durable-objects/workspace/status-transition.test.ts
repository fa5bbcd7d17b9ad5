import { describe, expect, it } from "vitest";
import { applyTransition, sequenceOf } from "../../../../src/durable-objects/workspace/status-transition";
import { type LifecycleState } from "../../../../src/messages/record";

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
  changes: null,
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

describe("the sequence of changes", () => {
  it("each change is appended to `changes` in the order it is applied; one update's changes in the lifecycle's order", () => {
    const p = applyTransition(fresh(), { jobId: "j", at: 1, status: "processing" });
    expect(p.next.changes).toBe("p");
    const r = applyTransition(p.next, { jobId: "j", at: 2, readAt: 2 });
    expect(r.next.changes).toBe("psr");
    const d = applyTransition(r.next, { jobId: "j", at: 3, deliveredAt: 3 });
    expect(d.next.changes).toBe("psrd");
    expect(applyTransition(d.next, { jobId: "j", at: 4, deliveredAt: 4 }).next.changes).toBe("psrd");
  });

  it("our time of a change never goes before the record's last change (the operator's whole seconds)", () => {
    const sent = fresh({ status: "sent", processing_at: 1_550, sent_at: 1_600, changes: "ps" });
    const f = applyTransition(sent, { jobId: "j", at: 1_000, status: "failed", error: err });
    expect(f.next).toMatchObject({ failed_at: 1_600, changes: "psf" });
    // The operator's own times of a delivery and a read are kept as it gave them.
    const d = applyTransition(sent, { jobId: "j", at: 1_000, deliveredAt: 1_000 });
    expect(d.next).toMatchObject({ delivered_at: 1_000, changes: "psd" });
  });

  it("a record from before the column is ordered by its times once, then appended to", () => {
    const old = fresh({ status: "failed", processing_at: 1, sent_at: 2, failed_at: 9, delivered_at: 5 });
    expect(sequenceOf(old)).toEqual(["processing", "sent", "failed", "delivered"]);
    expect(applyTransition(old, { jobId: "j", at: 10, readAt: 10 }).next.changes).toBe("psfdr");
  });
});
