import { describe, expect, it } from "vitest";
import { fig, mapLimit, maxInWindow, percentile, seededRandom, table } from "../../../bench/lib/run.ts";

describe("the measurement package's statistics", () => {
  it("percentile: the nearest rank, unsorted input left as it is, null without values", () => {
    const values = [5, 1, 4, 2, 3];
    expect([percentile(values, 50), percentile(values, 90), percentile(values, 100), percentile(values, 0)]).toEqual([
      3, 5, 5, 1,
    ]);
    expect(values).toEqual([5, 1, 4, 2, 3]);
    expect(percentile([], 50)).toBeNull();
  });

  it("maxInWindow: the most times inside any window shorter than it", () => {
    expect(maxInWindow([0, 400, 999, 1_000, 1_500])).toBe(3);
    expect(maxInWindow([0, 1_000, 2_000])).toBe(1);
    expect(maxInWindow([])).toBe(0);
  });

  it("seededRandom repeats its choices with its seed", () => {
    const draw = (/** @type {number} */ seed) => Array.from({ length: 5 }, seededRandom(seed).next);
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
    expect(draw(7).every((x) => x >= 0 && x < 1)).toBe(true);
  });

  it("mapLimit keeps the order of its results", async () => {
    const out = await mapLimit([30, 10, 20], 2, (ms, i) => new Promise((r) => setTimeout(() => r(`${i}:${ms}`), ms)));
    expect(out).toEqual(["0:30", "1:10", "2:20"]);
  });
});

describe("the result files' figures and tables", () => {
  it("fig: fixed decimals with thousands separated, n/a for what was not measured", () => {
    expect([fig(1234.5), fig(1234.5, 2), fig(0.125, 1)]).toEqual(["1,235", "1,234.50", "0.1"]);
    expect([fig(null), fig(undefined), fig(Number.NaN), fig(Infinity)]).toEqual(["n/a", "n/a", "n/a", "n/a"]);
  });

  it("table: a header, its alignment row (figures right-aligned) and one row per item", () => {
    expect(table(["case", "req/s:"], [["(b)", "12"]])).toEqual(["| case | req/s |", "| --- | ---: |", "| (b) | 12 |"]);
  });
});
