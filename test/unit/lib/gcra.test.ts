import { describe, expect, it } from "vitest";
import { decide } from "../../../src/lib/gcra";

// 2 per second: one token every 500 ms, a burst of 2.
const TWO_PER_SECOND = { limit: 2, periodSeconds: 1 };
const T0 = 1_000_000;

describe("GCRA bucket", () => {
  it("admits a burst of `limit` from a full bucket, then refuses with the wait for the next token", () => {
    const first = decide(TWO_PER_SECOND, null, T0);
    expect(first).toMatchObject({ allowed: true, limit: 2, remaining: 1, resetMs: 500, retryAfterMs: 0 });
    const second = decide(TWO_PER_SECOND, { tat: first.nextTat }, T0);
    expect(second).toMatchObject({ allowed: true, remaining: 0, resetMs: 1000, retryAfterMs: 0 });
    const third = decide(TWO_PER_SECOND, { tat: second.nextTat }, T0 + 100);
    expect(third).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 400 });
    // A refusal leaves the bucket as it was.
    expect(third.nextTat).toBe(second.nextTat);
  });

  it("admits again exactly when the retry-after has passed", () => {
    const tat = T0 + 1000;
    expect(decide(TWO_PER_SECOND, { tat }, T0 + 499).allowed).toBe(false);
    expect(decide(TWO_PER_SECOND, { tat }, T0 + 500).allowed).toBe(true);
  });

  it("a TAT in the past is a full bucket: idle time never banks more than the limit", () => {
    const d = decide(TWO_PER_SECOND, { tat: T0 - 60_000 }, T0);
    expect(d).toMatchObject({ allowed: true, remaining: 1, nextTat: T0 + 500 });
  });

  it("a TAT more than one period ahead (the clock went back) is a full bucket, not a lock-out", () => {
    const d = decide(TWO_PER_SECOND, { tat: T0 + 3_600_000 }, T0);
    expect(d).toMatchObject({ allowed: true, remaining: 1, nextTat: T0 + 500 });
    // One period ahead is still this algorithm's own state: the bucket is empty.
    expect(decide(TWO_PER_SECOND, { tat: T0 + 1000 }, T0).allowed).toBe(false);
  });

  it("a cost takes that many tokens, and a cost over the limit is never admitted", () => {
    expect(decide(TWO_PER_SECOND, null, T0, 2)).toMatchObject({ allowed: true, remaining: 0, nextTat: T0 + 1000 });
    expect(decide(TWO_PER_SECOND, null, T0, 3)).toMatchObject({ allowed: false, retryAfterMs: 500 });
  });

  it("a refund (negative cost) gives tokens back, never more than a full bucket", () => {
    const empty = { tat: T0 + 1000 };
    expect(decide(TWO_PER_SECOND, empty, T0, -1)).toMatchObject({ allowed: true, remaining: 1, nextTat: T0 + 500 });
    // A refund past a full bucket stores a TAT in the past, which the next request reads as full, no more.
    let tat = decide(TWO_PER_SECOND, null, T0, -5).nextTat;
    const admitted = [];
    for (let i = 0; i < 3; i++) {
      const d = decide(TWO_PER_SECOND, { tat }, T0);
      admitted.push(d.allowed);
      if (d.allowed) tat = d.nextTat;
    }
    expect(admitted).toEqual([true, true, false]);
  });

  it("stays exact for a limit that does not divide the period (1200 per minute)", () => {
    const l = { limit: 1200, periodSeconds: 60 };
    let tat: number | null = null;
    for (let i = 0; i < 1200; i++) {
      const d = decide(l, tat === null ? null : { tat }, T0);
      expect(d.allowed).toBe(true);
      expect(d.remaining).toBe(1199 - i);
      tat = d.nextTat;
    }
    expect(decide(l, { tat: tat! }, T0)).toMatchObject({ allowed: false, retryAfterMs: 50 });
  });
});
