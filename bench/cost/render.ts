// Writes bench/cost.md from the counts of the last cost run (.wrangler/cost-results.json, written by
// bench/cost/lifecycle.cost.ts through the COST_SINK binding) and the prices in prices.ts. What the
// run does, the assumptions' reasons and the figures before each cut are prose in bench/README.md.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, writeResult } from "../lib/run.ts";
import { PRICES, perMillion, type Price } from "./prices.ts";
import type { Rows, Usage } from "./usage.ts";

interface Scenario {
  name: string;
  description: string;
  messages: number;
  steps: Array<{ step: string; usage: Usage }>;
}
const run: { measuredAt: string; results: Scenario[]; objectStart?: Usage } = JSON.parse(
  readFileSync(join(ROOT, ".wrangler", "cost-results.json"), "utf8"),
);

// What the local runtime cannot measure (bench/README.md says why each).
const ASSUME = { workerCpuMsPerInvocation: 5, doActiveMsPerRequest: 10, operatorLatencyMs: 300, gbPerObject: 0.128 };
// Bytes per row measured for docs/architecture.md ("Storage budget"), and how long each is kept.
const STORED = [
  { what: "slot table record with its index entries (`npm run bench`, Storage)", bytes: 938, days: 30 },
  { what: "delivery-log attempts (3, packed; kept 3 days after their day)", bytes: 3 * 205, days: 4 },
];
const R2_BYTES_PER_MESSAGE = 130;
const R2_DAYS = 400;

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const values = (rec: Record<string, number> | undefined) => sum(Object.values(rec ?? {}));
const fmt = (n: number, digits = 2) =>
  n === 0
    ? "0"
    : n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: n < 10 ? digits : 0 });
const usd = (n: number) => `$${n < 1 ? n.toFixed(3) : n.toFixed(2)}`;

/** A scenario's counts added up over its steps. */
function totals(scenario: Scenario) {
  const t = {
    workerRequests: 0,
    doRpc: 0,
    alarms: 0,
    rowsRead: 0,
    rowsWrittenSql: 0,
    setAlarm: 0,
    queueOps: 0,
    d1Read: 0,
    d1Written: 0,
    r2A: 0,
    r2B: 0,
    operatorCalls: 0,
    byClass: {} as Record<string, Rows & { setAlarm: number }>,
    byStep: [] as Array<{ step: string; written: number; read: number }>,
    byStatement: {} as Record<string, Rows & { calls: number }>,
  };
  const classOf = (cls: string) => (t.byClass[cls] ??= { read: 0, written: 0, setAlarm: 0 });
  for (const { step, usage: u } of scenario.steps) {
    t.workerRequests += values(u.workerRequests);
    t.doRpc += values(u.doRequests);
    t.alarms += values(u.alarms);
    t.setAlarm += values(u.setAlarm);
    let stepWritten = values(u.setAlarm);
    for (const [cls, rows] of Object.entries(u.sql)) {
      t.rowsRead += rows.read;
      t.rowsWrittenSql += rows.written;
      stepWritten += rows.written;
      classOf(cls).read += rows.read;
      classOf(cls).written += rows.written;
    }
    for (const [cls, n] of Object.entries(u.setAlarm)) classOf(cls).setAlarm += n;
    for (const q of Object.values(u.queues)) t.queueOps += q.writes + q.reads + q.deletes;
    t.d1Read += u.d1.read;
    t.d1Written += u.d1.written;
    t.r2A += u.r2.classA;
    t.r2B += u.r2.classB;
    t.operatorCalls += u.outbound["operator call"] ?? 0;
    t.byStep.push({ step, written: stepWritten, read: sum(Object.values(u.sql).map((r) => r.read)) });
    for (const [k, s] of Object.entries(u.sqlByStatement)) {
      const b = (t.byStatement[k] ??= { read: 0, written: 0, calls: 0 });
      b.read += s.read;
      b.written += s.written;
      b.calls += s.calls;
    }
  }
  return t;
}
type Totals = ReturnType<typeof totals>;

function costRows(t: Totals, n: number) {
  const per = (x: number) => x / n;
  const doDurationGbS =
    (((t.doRpc + t.alarms) * ASSUME.doActiveMsPerRequest + t.operatorCalls * ASSUME.operatorLatencyMs) / 1000) *
    ASSUME.gbPerObject;
  const storedGbMonth = sum(STORED.map((s) => (s.bytes / 1e9) * (s.days / 30)));
  const r2GbMonth = (R2_BYTES_PER_MESSAGE / 1e9) * (R2_DAYS / 30);
  const rows: Array<[string, number, Price, string]> = [
    [
      "Worker requests (API call, operator webhooks, queue consumer invocations)",
      per(t.workerRequests),
      PRICES.workerRequests,
      "measured",
    ],
    [
      "Worker CPU ms",
      per(t.workerRequests) * ASSUME.workerCpuMsPerInvocation,
      PRICES.workerCpuMs,
      `estimate: ${ASSUME.workerCpuMsPerInvocation} ms per invocation`,
    ],
    ["Durable Object requests: RPC calls", per(t.doRpc), PRICES.doRequests, "measured"],
    ["Durable Object requests: alarm invocations", per(t.alarms), PRICES.doRequests, "measured"],
    [
      "Durable Object duration (GB-s)",
      per(doDurationGbS),
      PRICES.doDurationGbS,
      `estimate: ${ASSUME.doActiveMsPerRequest} ms active per request or alarm, + ${ASSUME.operatorLatencyMs} ms per operator call`,
    ],
    ["SQLite rows read", per(t.rowsRead), PRICES.sqliteRowsRead, "measured"],
    ["SQLite rows written: SQL", per(t.rowsWrittenSql), PRICES.sqliteRowsWritten, "measured"],
    ["SQLite rows written: setAlarm()", per(t.setAlarm), PRICES.sqliteRowsWritten, "measured"],
    [
      "SQLite storage (GB-month)",
      storedGbMonth,
      PRICES.sqliteStorageGbMonth,
      "estimate: bytes per row × days kept (below)",
    ],
    ["Queue operations (write + read + delete per 64 KB)", per(t.queueOps), PRICES.queueOperations, "measured"],
    ["D1 rows read", per(t.d1Read), PRICES.d1RowsRead, "measured"],
    ["D1 rows written", per(t.d1Written), PRICES.d1RowsWritten, "measured"],
    ["R2 Class A operations", per(t.r2A), PRICES.r2ClassA, "measured"],
    ["R2 Class B operations", per(t.r2B), PRICES.r2ClassB, "measured"],
    [
      "R2 storage (GB-month)",
      r2GbMonth,
      PRICES.r2StorageGbMonth,
      `estimate: ${R2_BYTES_PER_MESSAGE} B gzip per message × ${R2_DAYS} days`,
    ],
  ];
  return rows.map(([what, perMessage, price, basis]) => ({
    what,
    perMessage,
    dollars: perMillion(price, perMessage),
    basis,
  }));
}

const out: string[] = [];
const p = (...lines: string[]) => out.push(...(lines.length ? lines : [""]));
p(
  "# Cost per message (`npm run bench:cost`)",
  "",
  `Generated by \`bench/cost/render.ts\` from the counts of \`bench/cost/lifecycle.cost.ts\` (run ${run.measuredAt}).`,
  "What the run does, what is counted and how, the assumptions and the cuts so far: bench/README.md.",
  "",
  "## Prices",
  "",
  "| price | per | included monthly (Workers Paid) | page | read on | source |",
  "| --- | --- | --- | --- | --- | --- |",
);
for (const [name, pr] of Object.entries(PRICES))
  p(
    `| ${name}: $${pr.usd} | ${pr.per === 1 ? "" : `${pr.per.toLocaleString("en-US")} `}${pr.unit} | ${pr.included} | ${pr.cite.url} | ${pr.cite.readOn} | ${pr.cite.source} |`,
  );
p("", "Dollars below are marginal (after the included usage), per **million messages**.", "");

const summary: Array<{ description: string; total: number; written: number; queueOps: number }> = [];
for (const scenario of run.results) {
  const t = totals(scenario);
  const n = scenario.messages;
  const rows = costRows(t, n);
  const total = sum(rows.map((r) => r.dollars));
  const written = (t.rowsWrittenSql + t.setAlarm) / n;
  summary.push({ description: scenario.description, total, written, queueOps: t.queueOps / n });
  p(
    `## ${scenario.description}`,
    "",
    "| component | per message | $ / million messages | basis |",
    "| --- | ---: | ---: | --- |",
  );
  for (const r of rows)
    p(
      `| ${r.what} | ${r.perMessage > 0 && r.perMessage < 0.001 ? r.perMessage.toExponential(2) : fmt(r.perMessage, 3)} | ${usd(r.dollars)} | ${r.basis} |`,
    );
  p(`| **total** | | **${usd(total)}** | |`, "");
  p(
    `Rows written per message: **${fmt(written)}** (SQL ${fmt(t.rowsWrittenSql / n)}, setAlarm ${fmt(t.setAlarm / n)}), ${fmt((100 * perMillion(PRICES.sqliteRowsWritten, written)) / total, 0)}% of the total.`,
    "",
    "Rows per message, per object class:",
    "",
    "| object | rows read | rows written (SQL) | setAlarm() |",
    "| --- | ---: | ---: | ---: |",
  );
  for (const [cls, c] of Object.entries(t.byClass).sort())
    p(`| ${cls} | ${fmt(c.read / n)} | ${fmt(c.written / n)} | ${fmt(c.setAlarm / n)} |`);
  p(
    "",
    "Rows written per message, per step of the life (SQL and setAlarm):",
    "",
    "| step | rows written | rows read |",
    "| --- | ---: | ---: |",
  );
  for (const s of t.byStep) p(`| ${s.step} | ${fmt(s.written / n)} | ${fmt(s.read / n)} |`);
  p(
    "",
    "Statements writing the most rows per message (object: statement, cut at 110 characters):",
    "",
    "| statement | calls / message | rows written / message | rows read / message |",
    "| --- | ---: | ---: | ---: |",
  );
  const top = Object.entries(t.byStatement)
    .filter(([, s]) => s.written > 0)
    .sort(([, a], [, b]) => b.written - a.written)
    .slice(0, 15);
  for (const [k, s] of top)
    p(`| \`${k.replaceAll("|", "\\|")}\` | ${fmt(s.calls / n)} | ${fmt(s.written / n)} | ${fmt(s.read / n)} |`);
  p();
}
if (run.objectStart) {
  p(
    "## Waking an object",
    "",
    "Not per message: a new object's first start.",
    "",
    "| object | rows read | rows written |",
    "| --- | ---: | ---: |",
  );
  for (const [cls, r] of Object.entries(run.objectStart.sql).sort()) p(`| ${cls} | ${r.read} | ${r.written} |`);
  p();
}
p(
  "## Summary",
  "",
  "| scenario | rows written / message | queue operations / message | total $ / million messages |",
  "| --- | ---: | ---: | ---: |",
);
for (const s of summary) p(`| ${s.description} | ${fmt(s.written)} | ${fmt(s.queueOps)} | ${usd(s.total)} |`);
p(
  "",
  "## Assumptions",
  "",
  `- Durable Object duration: ${ASSUME.doActiveMsPerRequest} ms of activity per request or alarm, plus ${ASSUME.operatorLatencyMs} ms per operator call, at ${ASSUME.gbPerObject} GB per object.`,
  `- Worker CPU: ${ASSUME.workerCpuMsPerInvocation} ms per invocation.`,
  ...STORED.map((s) => `- Storage: ${s.what}: ${s.bytes} B × ${s.days} days.`),
  `- R2: ${R2_BYTES_PER_MESSAGE} B per message compressed × ${R2_DAYS} days.`,
);
writeResult("cost.md", out);
