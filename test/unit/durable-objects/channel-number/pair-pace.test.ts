import { describe, expect, it } from "vitest";
import { PAIR_BURST, PAIR_INTERVAL_MS, PairPace } from "../../../../src/durable-objects/channel-number/pair-pace";

const T0 = 1_000_000_000;

describe("the pair pace (one conversation: a burst, then one call per interval)", () => {
  it("a recipient never called is ready at once", () => {
    expect(new PairPace().readyAt("5511999998888", T0)).toBe(T0);
  });

  it(`allows a burst of ${PAIR_BURST} calls at once, then one every ${PAIR_INTERVAL_MS} ms`, () => {
    const pace = new PairPace();
    for (let i = 0; i < PAIR_BURST; i++) {
      expect(pace.readyAt("A", T0)).toBe(T0);
      pace.noteCall("A", T0);
    }
    expect(pace.readyAt("A", T0)).toBe(T0 + PAIR_INTERVAL_MS);
    pace.noteCall("A", T0 + PAIR_INTERVAL_MS);
    expect(pace.readyAt("A", T0 + PAIR_INTERVAL_MS)).toBe(T0 + 2 * PAIR_INTERVAL_MS);
    // Other conversations are not held up.
    expect(pace.readyAt("B", T0)).toBe(T0);
  });

  it("the burst refills at one call per interval of silence", () => {
    const pace = new PairPace();
    for (let i = 0; i < PAIR_BURST; i++) pace.noteCall("A", T0);
    const later = T0 + 3 * PAIR_INTERVAL_MS;
    // Three intervals later: three calls at once, then the fourth waits.
    for (let i = 0; i < 3; i++) {
      expect(pace.readyAt("A", later)).toBe(later);
      pace.noteCall("A", later);
    }
    expect(pace.readyAt("A", later)).toBe(later + PAIR_INTERVAL_MS);
  });
});

describe("the pair pace's memory", () => {
  it("a sweep forgets the buckets full again and keeps those still pacing: no conversation's readiness changes", () => {
    const pace = new PairPace();
    const recipients = Array.from({ length: 200 }, (_, i) => `55${String(i).padStart(9, "0")}`);
    // Every other recipient was called a full burst's worth just now; the others long ago.
    recipients.forEach((r, i) => {
      const at = i % 2 === 0 ? T0 : T0 - PAIR_BURST * PAIR_INTERVAL_MS;
      for (let k = 0; k < PAIR_BURST; k++) pace.noteCall(r, at);
    });
    const before = recipients.map((r) => pace.readyAt(r, T0));
    expect(before.filter((t) => t > T0)).toHaveLength(100);
    pace.sweep(T0);
    expect(recipients.map((r) => pace.readyAt(r, T0))).toEqual(before);
    // What is kept (the memory bound): only the buckets still pacing.
    expect((pace as unknown as { tat: Map<string, number> }).tat.size).toBe(100);
  });

  it("stays bounded when a number writes to very many recipients over time", () => {
    const pace = new PairPace();
    // 30,000 recipients, one call each, a second apart: each bucket is full again 6 s after its call.
    for (let i = 0; i < 30_000; i++) pace.noteCall(`r${i}`, T0 + i * 1_000);
    expect((pace as unknown as { tat: Map<string, number> }).tat.size).toBeLessThanOrEqual(10_001);
    expect(pace.readyAt("r29999", T0 + 29_999_000)).toBe(T0 + 29_999_000);
  });
});
