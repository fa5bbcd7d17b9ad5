import { describe, expect, it } from "vitest";
import { QUEUE_BUDGET, planBatches, queuedBytes } from "../../../src/lib/queue-batches";

describe("queue batches", () => {
  it("are sized by bytes as well as by count, and set apart what can never be sent", () => {
    const big = "😀".repeat(4_096); // 16 KB of UTF-8
    const items = Array.from({ length: 100 }, (_, i) => ({ key: i, body: { event: { id: i, text: big } } }));
    const { batches, oversize } = planBatches([
      ...items,
      { key: 999, body: { blob: "x".repeat(QUEUE_BUDGET.messageBytes + 1) } },
    ]);
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
