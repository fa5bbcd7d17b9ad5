import { describe, expect, it } from "vitest";
import { newTally, parseServerTiming, summarize, tallyResponse } from "../../../bench/load/requests.ts";

/** An autocannon result as the bench's load runner returns it. @param {Partial<import("../../../bench/load/requests.ts").LoadResult>} over */
const loadResult = (over = {}) => ({
  duration: 10,
  requests: { total: 5_000 },
  latency: { p50: 2, p99: 9 },
  non2xx: 0,
  errors: 0,
  timeouts: 0,
  statusCodeStats: { 200: { count: 5_000 } },
  runtimeCpuMs: 8_000,
  runtimeCpuParts: { runtime: 5_000, proxy: 2_000, wrangler: 1_000, other: 0 },
  clientCpuMs: 3_000,
  ...over,
});

describe("parseServerTiming", () => {
  it("reads each metric's dur, whatever the header's case, and joins repeated headers", () => {
    expect(parseServerTiming({ "Server-Timing": 'd1;desc="D1 statements";dur=2, total;dur=4.5' })).toEqual({
      d1: 2,
      total: 4.5,
    });
    expect(parseServerTiming({ "server-timing": ["d1;dur=1", "total;dur=3"] })).toEqual({ d1: 1, total: 3 });
  });

  it("is null without the header and skips metrics without a duration", () => {
    expect(parseServerTiming({ "content-type": "application/json" })).toBeNull();
    expect(parseServerTiming({ "server-timing": "cache;desc=hit, d1;dur=0" })).toEqual({ d1: 0 });
  });
});

describe("tallyResponse", () => {
  it("counts responses, D1 statements with their histogram, and the Worker's time of timed ones", () => {
    const tally = newTally();
    tallyResponse(tally, { "server-timing": "d1;dur=1, total;dur=4" });
    tallyResponse(tally, { "server-timing": "d1;dur=0, total;dur=2" });
    tallyResponse(tally, { "server-timing": "d1;dur=0" });
    tallyResponse(tally, {});
    expect(tally).toMatchObject({ responses: 4, d1: 1, serverMs: 6, timed: 2, bad: 0 });
    expect([...tally.d1Histogram]).toEqual([
      [1, 1],
      [0, 2],
    ]);
  });
});

describe("summarize", () => {
  it("turns a run into rates, per-request figures and cores busy", () => {
    const tally = { ...newTally(), responses: 5_000, d1: 250, timed: 5_000, serverMs: 10_000, bad: 1 };
    const row = summarize("(a)", "GET /me", loadResult(), tally, true);
    expect(row).toMatchObject({
      label: "(a)",
      what: "GET /me",
      completed: 5_000,
      rps: 500,
      p50: 2,
      p99: 9,
      statuses: { 200: 5_000 },
      d1Total: 250,
      d1PerRequest: 0.05,
      serverMs: 2,
      bad: 1,
      cpuPerRequest: 1.6,
      runtimeCores: 0.8,
      clientCores: 0.3,
      coresByRole: { runtime: 0.5, proxy: 0.2, wrangler: 0.1, other: 0 },
      capped: true,
    });
  });

  it("leaves what could not be measured null rather than zero", () => {
    const row = summarize(
      "(d)",
      "GET /messages/{id}",
      loadResult({ runtimeCpuMs: null, runtimeCpuParts: null, requests: { total: 0 } }),
      newTally(),
    );
    expect(row).toMatchObject({
      rps: 0,
      d1PerRequest: null,
      serverMs: null,
      cpuPerRequest: null,
      runtimeCores: null,
      coresByRole: null,
    });
  });
});
