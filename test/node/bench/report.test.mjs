import { describe, expect, it } from "vitest";
import { buildReport, f0, f1, f2, f3, machineLines, pct, runProblems } from "../../../bench/load/report.ts";

/** @typedef {import("../../../bench/load/requests.ts").CaseRow} CaseRow */
/** @typedef {import("../../../bench/load/report.ts").BenchRun} BenchRun */

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
  capped: false,
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
  warmAccepted: [{ apiKey: "k", workspaceId: "w1", numberId: "n1", key: "i0", body: "{}", jobId: "j0" }],
  warmSettle: { settled: true, ms: 1_500 },
  bSettle: { settled: true, ms: 2_000 },
  loadBefore: [0.5, 0.4, 0.3],
  loadAfter: [1.5, 1.0, 0.5],
  phases: ["migrations 3.0 s"],
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
  runMs: 200_000,
  ...over,
});

describe("the report's figures", () => {
  it("write n/a for what was not measured", () => {
    expect([f0(null), f1(undefined), f2(null), f3(undefined)]).toEqual(["n/a", "n/a", "n/a", "n/a"]);
    expect([f0(1234.5), f1(1.25), f2(0.005), f3(1)]).toEqual(["1,235", "1.3", "0.01", "1.000"]);
  });

  it("write changes with their sign, and ±0% below half a percent", () => {
    expect([pct(0.123), pct(-0.03), pct(0.004)]).toEqual(["+12%", "−3%", "±0%"]);
  });
});

describe("buildReport", () => {
  it("renders every section with the ratios to the baseline of the same run", () => {
    const { lines, problems } = buildReport(run());
    const markdown = lines.join("\n");
    expect(problems).toEqual([]);
    for (const heading of ["## Request cases", "## The accept path, like with like", "## Storage", "## GET /messages"])
      expect(markdown).toContain(heading);
    // (b) at 180 req/s against (a) at 1,000: 0.18 of its rate, 3× its p99.
    expect(markdown).toContain("| (b) | the request of (b) | 180¹ | 2.0 | 30.0 | 201: 1,800 | 0 | 0.18 | 3.00 |");
    expect(markdown).toContain("- Drift: (a') did 5% fewer req/s than (a)");
    // (b) at 180 req/s against its own baseline (k) at 300: 0.6 of its rate, 1.5× its p99, both within the aim.
    expect(markdown).toContain(
      "- (b) ÷ (k): req/s **0.60×** (aim ≥ 0.5: met), p50 1.00×, p99 **1.50×** (aim ≤ 2: met);",
    );
    // 1,000 records grew the slot tables by 800,000 B; 2,000 attempts the log by 300,000 B.
    expect(markdown).toContain("**800 per record**");
    expect(markdown).toContain("**3,000 per row, 150 per attempt**");
    expect(markdown).toContain("| index `_to` (recipient, id) | 10,000 | 110,000 | 100,000 | per record | 100 | |");
    expect(markdown).toContain("Run time: 200 s: migrations 3.0 s;");
  });

  it("renders the same page for the same run, but for its date", () => {
    const page = () => buildReport(run()).lines.slice(5);
    expect(page()).toEqual(page());
  });

  it("writes n/a where the runtime's CPU could not be measured (not Linux)", () => {
    const unmeasured = run({
      results: run().results.map((r) => ({ ...r, cpuPerRequest: null, runtimeCores: null, coresByRole: null })),
    });
    expect(buildReport(unmeasured).lines.join("\n")).toContain("runtime CPU per send n/a× a GET /me");
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

describe("machineLines", () => {
  it("warns when the machine was busy before the run", () => {
    const cpus = [{ model: "Test CPU" }, { model: "Test CPU" }];
    expect(machineLines([0.5, 0.5, 0.5], [1, 1, 1], cpus).join("\n")).not.toContain("busy with other work");
    expect(machineLines([3.2, 2, 1], [1, 1, 1], cpus).join("\n")).toContain("busy with other work");
  });
});
