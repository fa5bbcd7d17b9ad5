import { describe, expect, it } from "vitest";
import { baselineSection } from "../../../scripts/bench/report/baseline-section.mjs";
import { buildReport } from "../../../scripts/bench/report/build-report.mjs";
import { runProblems } from "../../../scripts/bench/report/checks.mjs";
import { f0, f1, f2, f3, mib, pct } from "../../../scripts/bench/report/format.mjs";
import { machineSection } from "../../../scripts/bench/report/machine.mjs";

/** @typedef {import("../../../scripts/bench/statistics.mjs").CaseRow} CaseRow */
/** @typedef {import("../../../scripts/bench/report/build-report.mjs").BenchRun} BenchRun */

/** A report row with round figures. @param {string} label @param {number} rps @param {Partial<CaseRow>} [over] @returns {CaseRow} */
const row = (label, rps, over = {}) => ({
  label,
  what: `the request of ${label}`,
  duration: 10,
  completed: rps * 10,
  rps,
  p50: 2,
  p99: 10,
  non2xx: 0,
  errors: 0,
  timeouts: 0,
  statuses: { 200: rps * 10 },
  d1Total: 0,
  d1PerRequest: 0,
  d1Histogram: new Map([[0, rps * 10]]),
  serverMs: 1,
  bad: 0,
  cpuPerRequest: 1,
  runtimeCores: 0.5,
  clientCores: 0.2,
  coresByRole: { runtime: 0.3, proxy: 0.1, wrangler: 0.1, other: 0 },
  ...over,
});

/** A file whose slot tables hold `records` records and whose delivery log holds 2 attempts per record. */
const storage = (records = 1_000, bytes = 4_000_000) => ({
  bytes,
  pageSize: 4096,
  pageCount: bytes / 4096,
  freePages: 0,
  slotTables: 2,
  deliveryTables: 1,
  slots: {
    bytes: records * 800,
    rows: records,
    btrees: { records: records * 600, _to: records * 100, _key: records * 100, _work: 4_096, _failed: 4_096 },
  },
  deliveries: { bytes: records * 300, rows: records / 10, attempts: records * 2, btrees: { records: records * 300 } },
  others: { meta: { bytes: 8_192, rows: 5, btrees: { records: 8_192 } } },
});

/** @param {Partial<BenchRun>} [over] @returns {BenchRun} */
const run = (over = {}) => ({
  results: [
    row("(a)", 1_000, { d1PerRequest: 2 }),
    row("(b)", 180, { capped: true, statuses: { 201: 1_800 }, p99: 30 }),
    row("(c)", 800),
    row("(d)", 900),
    row("(a')", 950),
  ],
  acceptBaseline: row("(k)", 300, { p99: 20 }),
  accepted: [{ apiKey: "k", workspaceId: "w1", numberId: "n1", key: "i1", body: "{}", jobId: "j1" }],
  warmRow: row("(w)", 100),
  warmSettle: { settled: true, ms: 1_500 },
  loadBefore: [0.5, 0.4, 0.3],
  loadAfter: [1.5, 1.0, 0.5],
  phases: ["migrations 3.0 s"],
  settled: true,
  settleMs: 2_000,
  perWorkspaceAccepted: new Map([["w1", 100]]),
  storage: {
    before: storage(100, 1_000_000),
    after: storage(1_100, 5_000_000),
    sends: 1_000,
    rps: 100,
    deliveryMs: 3_000,
    deliveries: 2_200,
    eventIds: 2_200,
  },
  seed: {
    count: 1_000_000,
    ms: 60_000,
    oldest: 0,
    newest: 40 * 3_600_000,
    shapes: {
      sent: 300_000,
      delivered: 50_000,
      read: 150_000,
      failed: 50_000,
      "failed-after-sent": 50_000,
      inbound: 200_000,
    },
    storage: storage(1_000_000, 900_000_000),
    firstListMs: 120,
    retained: { records: 1_000_000, slotTables: 2, historyDays: 0 },
  },
  listResults: [row("(a2)", 1_000), row("(e)", 500), row("(f)", 250), row("(g)", 480), row("(a2')", 1_000)],
  baseline: {
    source: "a previous run",
    drift: 0.05,
    ratios: { "(b)": { rps: 0.18, p99: 3 }, "(c)": { rps: 0.4, p99: 1 } },
  },
  runMs: 200_000,
  machine: {
    date: "2026-11-24T00:00:00.000Z",
    cpuModel: "Test CPU",
    cores: 2,
    memoryGiB: 8,
    os: "Linux 6.1",
    arch: "x64",
    node: "v22.23.3",
    versions: { wrangler: "4.0.0", workerd: "1.0.0", autocannon: "9.0.0" },
  },
  ...over,
});

describe("the report's figures", () => {
  it("write n/a for what was not measured", () => {
    expect([f0(null), f1(undefined), f2(null), f3(undefined)]).toEqual(["n/a", "n/a", "n/a", "n/a"]);
    expect([f0(1234.5), f1(1.25), f2(0.005), f3(1)]).toEqual(["1,235", "1.3", "0.01", "1.000"]);
  });

  it("write changes with their sign, and ±0% below half a percent", () => {
    expect([pct(0.123), pct(-0.03), pct(0.004)]).toEqual(["+12%", "−3%", "±0%"]);
    expect(mib(3 * 2 ** 20)).toBe("3.00 MiB");
  });
});

describe("buildReport", () => {
  it("renders every section with the ratios to the baseline of the same run", () => {
    const { markdown, problems, baselineOut } = buildReport(run());
    expect(problems).toEqual([]);
    for (const heading of [
      "## Machine",
      "## Results",
      "## D1 statements per accepted send",
      "## Arithmetic",
      "## Where the time goes",
      "## The accept path, like with like",
      "## Storage",
      "## GET /messages",
      "## Send ratios against an earlier run",
    ]) {
      expect(markdown).toContain(heading);
    }
    // (b) at 180 req/s against (a) at 1,000: 0.18 of its rate, 3× its p99.
    expect(markdown).toContain("| (b) | the request of (b) | 180¹ | 2.0 | 30.0 | 201: 1,800 | 0 | 0.18 | 3.00 |");
    expect(markdown).toContain(
      "Drift: (a') repeats the baseline after the other cases and did 5% fewer req/s than (a); ratio differences smaller than that are noise.",
    );
    // (b) at 180 req/s against its own baseline (k) at 300: 0.6 of its rate, 1.5× its p99, both within the aim.
    expect(markdown).toContain(
      "- (b) ÷ (k): req/s **0.60×** (meets the aim), p50 1.00×, p99 **1.50×** (meets the aim);",
    );
    expect(markdown).toContain("the tiering steps moved nothing meanwhile");
    // 1,000 records grew the slot tables by 800,000 B; 2,000 attempts the log by 300,000 B.
    expect(markdown).toContain("**800 per record**");
    expect(markdown).toContain("**3,000 per row, 150 per attempt**");
    expect(markdown).toContain("| index `_to` (recipient, id) | 10,000 | 110,000 | 100,000 | per record | 100 | |");
    expect(markdown).toContain("Run time: 200 s: migrations 3.0 s;");
    expect(baselineOut).toEqual({
      source: "bench/results.md of the run of 2026-11-24T00:00:00.000Z",
      drift: expect.closeTo(-0.05),
      ratios: { "(b)": { rps: 0.18, p99: 3 }, "(c)": { rps: 0.8, p99: 1 }, "(d)": { rps: 0.9, p99: 1 } },
    });
  });

  it("renders the same page for the same run", () => {
    expect(buildReport(run()).markdown).toBe(buildReport(run()).markdown);
  });

  it("writes n/a where the runtime's CPU could not be measured (not Linux)", () => {
    const unmeasured = run({
      results: run().results.map((r) => ({ ...r, cpuPerRequest: null, runtimeCores: null, coresByRole: null })),
    });
    expect(buildReport(unmeasured).markdown).toContain("n/a ms CPU per send (n/a× a GET /me)");
  });
});

describe("runProblems", () => {
  it("fails a run with errors, unexpected answers, a 429 in (b), no Server-Timing, or a moved seed", () => {
    const r = run();
    const [a, b, c, d, a2] = /** @type {CaseRow[]} */ (r.results);
    const problems = runProblems({
      results: [
        { .../** @type {CaseRow} */ (a), d1PerRequest: null },
        { .../** @type {CaseRow} */ (b), statuses: { 201: 10, 429: 3 }, non2xx: 3 },
        { .../** @type {CaseRow} */ (c), bad: 2 },
        { .../** @type {CaseRow} */ (d), timeouts: 1 },
        /** @type {CaseRow} */ (a2),
      ],
      listResults: r.listResults,
      seed: { ...r.seed, retained: { records: 999_000, slotTables: 2, historyDays: 1 } },
    });
    expect(problems).toEqual([
      '(b) had 3 non-2xx responses: {"201":10,"429":3}',
      "(c) had 2 responses that were not the expected answer",
      "(d) had 0 connection errors and 1 timeouts",
      "(b) was rate limited 3 times: the pacing is wrong",
      "no Server-Timing header: the D1 statement count is missing",
      'the seeded object changed during the list cases: {"records":999000,"slotTables":2,"historyDays":1}, seeded 1000000 records in 2 slot tables',
    ]);
  });
});

describe("baselineSection", () => {
  it("judges req/s ratios against the larger drift of the two runs", () => {
    const lines = baselineSection(
      { source: "x", drift: 0.1, ratios: { "(b)": { rps: 0.2, p99: 2 }, "(c)": { rps: 0.5, p99: 1 } } },
      { "(b)": { rps: 0.21, p99: 2 }, "(c)": { rps: 0.3, p99: 1 }, "(d)": { rps: 1, p99: 1 } },
      0.02,
    ).join("\n");
    expect(lines).toContain("Verdict (req/s): (b) unchanged within noise; (c) **changed beyond the noise** (−40%).");
    expect(lines).toContain("| (d) | – | 1.00 | – | – | 1.00 | – |");
  });

  it("says when there is nothing to compare with", () => {
    expect(baselineSection(null, {}, 0)).toContain(
      "No earlier run saved on this machine (`--save-baseline`): nothing to compare with.",
    );
  });
});

describe("machineSection", () => {
  it("warns when the machine was busy before the run", () => {
    const m = run().machine;
    expect(machineSection(m, [0.5, 0.5, 0.5], [1, 1, 1]).join("\n")).not.toContain("busy with other work");
    expect(machineSection(m, [3.2, 2, 1], [1, 1, 1]).join("\n")).toContain("(1-min load 3.20 on 2 cores)");
  });
});
