// `npm run bench`, report: bench/results.md from what the cases measured. Pure: the same
// measurements give the same page (test/node/bench/report.test.mjs).
import { PRICES } from "../../../bench/cost/prices.mjs";
import {
  CONNECTIONS,
  DURATION_S,
  NUMBER_LIMIT_PER_S,
  NUMBERS,
  NUMBERS_PER_WORKSPACE,
  SEED_MESSAGES,
  SEND_RATE_CAP,
  SETTLE_LIMIT_MS,
  WORKSPACE_LIMIT_PER_MIN,
  WORKSPACES,
  WORST_PER_WORKSPACE,
} from "../parameters.mjs";
import { baselineSection } from "./baseline-section.mjs";
import { runProblems } from "./checks.mjs";
import { f0, f1, f2, f3 } from "./format.mjs";
import { listSection } from "./list-section.mjs";
import { machineSection } from "./machine.mjs";
import { storageSection } from "./storage-section.mjs";

/** @typedef {import("../statistics.mjs").CaseRow} CaseRow */

/**
 * Everything a run measured.
 * @typedef {object} BenchRun
 * @property {CaseRow[]} results (a), (b), (c), (d), (a')
 * @property {CaseRow} acceptBaseline (k)
 * @property {import("../requests.mjs").Accepted[]} accepted (b)'s accepted sends
 * @property {CaseRow} warmRow (w)
 * @property {{ settled: boolean, ms: number }} warmSettle
 * @property {number[]} loadBefore
 * @property {number[]} loadAfter
 * @property {string[]} phases
 * @property {boolean} settled
 * @property {number} settleMs
 * @property {Map<string, number>} perWorkspaceAccepted
 * @property {import("../cases/storage.mjs").StorageMeasure} storage
 * @property {import("../cases/list.mjs").Seed & { retained: ReturnType<typeof import("../workspace-file.mjs").retentionState> }} seed
 * @property {CaseRow[]} listResults (a2), (e), (f), (g), (a2')
 * @property {import("./baseline-section.mjs").Baseline | null} baseline
 * @property {number} runMs
 * @property {import("./machine.mjs").Machine} machine
 */

/** The price pages of bench/cost/prices.mjs, each with the date it was read. */
export function priceCitations() {
  const pages = new Map(Object.values(PRICES).map((p) => [p.cite.url, p.cite.readOn]));
  return [...pages].map(([url, readOn]) => `${url} (read on ${readOn})`).join(", ");
}

/**
 * @param {BenchRun} run
 * @returns {{ markdown: string, problems: string[], baselineOut: { source: string, drift: number, ratios: Record<string, { rps: number, p99: number }> } }}
 */
export function buildReport({
  results,
  acceptBaseline: k,
  accepted,
  warmRow,
  warmSettle,
  loadBefore,
  loadAfter,
  phases,
  settled,
  settleMs,
  perWorkspaceAccepted,
  storage,
  seed,
  listResults,
  baseline,
  runMs,
  machine,
}) {
  const [a, b, c, d, a2] = /** @type {[CaseRow, CaseRow, CaseRow, CaseRow, CaseRow]} */ (results);

  /** @param {CaseRow} r */
  const statusList = (r) =>
    Object.entries(r.statuses)
      .map(([code, n]) => `${code}: ${f0(n)}`)
      .join(", ") || "none";
  /** @param {CaseRow} r */
  const row = (r, ratios = true) => {
    const statuses = statusList(r);
    return `| ${r.label} | ${r.what} | ${f0(r.rps)}${r.capped ? "¹" : ""} | ${f1(r.p50)} | ${f1(r.p99)} | ${statuses} | ${f0(r.non2xx)} | ${ratios ? f2(r.rps / a.rps) : "–"} | ${ratios ? f2(r.p99 / a.p99) : "–"} | ${f3(r.d1PerRequest)} | ${f1(r.serverMs)} | ${f1(r.cpuPerRequest)} | ${f2(r.runtimeCores)} |`;
  };
  /** @param {CaseRow} r @param {CaseRow} base */
  const listRow = (r, base) => {
    const statuses = statusList(r);
    return `| ${r.label} | ${r.what} | ${f0(r.rps)} | ${f1(r.p50)} | ${f1(r.p99)} | ${statuses} | ${f0(r.non2xx + r.bad)} | ${f2(r.rps / base.rps)} | ${f2(r.p99 / base.p99)} | ${f2(r.rps / a.rps)} | ${f1(r.serverMs)} | ${f1(r.cpuPerRequest)} | ${f2(r.runtimeCores)} |`;
  };
  const listHeader = [
    "| case | request | req/s | p50 ms | p99 ms | statuses | non-2xx or unexpected | req/s ÷ (a2) | p99 ÷ (a2) | req/s ÷ (a) | Worker ms (mean) | runtime CPU ms / request | runtime cores busy |",
    "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  const sendRatios = Object.fromEntries([b, c, d].map((r) => [r.label, { rps: r.rps / a.rps, p99: r.p99 / a.p99 }]));
  const table = [
    "| case | request | req/s | p50 ms | p99 ms | statuses | non-2xx | req/s ÷ (a) | p99 ÷ (a) | D1 statements / request | Worker ms (mean) | runtime CPU ms / request | runtime cores busy |",
    "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...results.map((r) => row(r)),
    row(k),
    row(warmRow, false),
  ];

  const bSends = b.statuses["201"] ?? 0;
  const hist = [...b.d1Histogram]
    .sort(([x], [y]) => x - y)
    .map(([k, n]) => `${f0(n)} sends with ${k}`)
    .join(", ");
  const maxWs = Math.max(...perWorkspaceAccepted.values());
  /** @type {Map<string, number>} */
  const perNumberB = new Map();
  for (const s of accepted) perNumberB.set(s.numberId, (perNumberB.get(s.numberId) ?? 0) + 1);
  const maxNumberB = Math.max(...perNumberB.values());
  const capHit = b.rps >= 0.9 * SEND_RATE_CAP;
  const drift = a2.rps / a.rps - 1;
  const capPerWorkspacePerMin = (SEND_RATE_CAP / WORKSPACES) * 60;
  const expectedKeyLookups = (WORKSPACES * b.duration) / 5;

  const md = [
    "# Benchmark: local runtime (`npm run bench`)",
    "",
    "Generated by `scripts/bench.mjs`; every figure below was measured in the run described here. Absolute figures depend on the",
    "machine and on `wrangler dev`; compare cases only through the ratios to the baseline (a) of the same run.",
    "What a message costs in money is in [`bench/cost.md`](cost.md) (`npm run bench:cost`), at Cloudflare's published prices",
    `(Workers Paid) as read from these pages: ${priceCitations()}.`,
    "",
    "Sections: the request cases (a)–(d) and their arithmetic; the accept path against its own baseline (k), and the delivery apart; bytes per message in the workspace object; GET /messages on a",
    `workspace object with ${f0(SEED_MESSAGES)} messages; this run's send ratios against an earlier run's, when one was saved here.`,
    "",
    "## Machine",
    "",
    ...machineSection(machine, loadBefore, loadAfter),
    "",
    "## Results",
    "",
    ...table,
    "",
    `Each case ran ${DURATION_S} s with the same ${CONNECTIONS} connections; latency is per request as the client saw it (no coordinated-omission`,
    'correction). "D1 statements / request" and "Worker ms" come from the `Server-Timing` header the Worker adds when',
    "`SERVER_TIMING=true` (`src/middleware/server-timing.ts`); Worker ms runs from the middleware's start to its end and is coarse,",
    'because the Workers clock only advances on I/O. "Runtime CPU" is the CPU time of `wrangler dev`\'s processes during the case',
    "(Linux /proc), divided by the requests completed, and as cores kept busy; it includes background work the case caused.",
    `(w) is the warm-up, not a measured case: the first send to each of the ${NUMBERS} numbers, which creates its object.`,
    "",
    `Drift: (a') repeats the baseline after the other cases and did ${f0(Math.abs(drift) * 100)}% ${drift >= 0 ? "more" : "fewer"} req/s than (a)` +
      (Math.abs(drift) > 0.15
        ? `: in this run, ratio differences smaller than that are noise.`
        : `; ratio differences smaller than that are noise.`),
    "",
    `¹ (b) is offered at most ${f0(SEND_RATE_CAP)} sends/s by design (see the arithmetic); ` +
      (capHit
        ? `it reached ${f0(b.rps)}/s, i.e. the cap: this row measures the cap, not the server.`
        : `it reached ${f0(b.rps)}/s, ${f0((100 * b.rps) / SEND_RATE_CAP)}% of the cap, so the runtime, not the cap, set its pace.`),
    "",
    "## D1 statements per accepted send (request path)",
    "",
    `- (b): ${f0(b.d1Total)} D1 statements over ${f0(bSends)} accepted sends = **${f3(b.d1PerRequest)} per send** (${hist || "no data"}).`,
    `- Warm-up (w): ${f0(warmRow.d1Total)} statements over ${f0(warmRow.completed)} sends.`,
    `- For comparison, the baseline GET /me runs ${f2(a.d1PerRequest)} per request (its two D1 reads: workspace and keys).`,
    "- What this counts: the Worker's own statements on `c.env.DB` while it handles the request. A send's only D1 access there is the",
    "  API-key lookup when the per-isolate key cache (5 s TTL, `src/domain/key-cache.ts`) misses: one SELECT per key per 5 s, i.e.",
    `  about ${f0(WORKSPACES)} keys × ${f0(b.duration)} s ÷ 5 s ≈ ${f0(expectedKeyLookups)} in (b), whatever the send rate. So the count per send`,
    "  falls as the rate per key rises; a send with a warm key cache runs 0 D1 statements.",
    "- Not counted (by design of the measurement): the workspace object re-reads its config from D1 (workspace + numbers) at most once",
    "  per 5 s per workspace (`src/durable-objects/workspace-config.ts`), amortized over all its sends; and the work after the response",
    "  (the number's calls, the events published to the webhook queue, the daily counts shipped to D1 once a minute per workspace),",
    "  which is off the request path.",
    "",
    "## Arithmetic: why (b) reaches no limit",
    "",
    `- Limits: ${NUMBER_LIMIT_PER_S} sends/s per number (sliding 1 s window), ${WORKSPACE_LIMIT_PER_MIN} sends/min per workspace (sliding 60 s).`,
    `- ${WORKSPACES} workspaces × ${NUMBERS_PER_WORKSPACE} numbers = ${NUMBERS} numbers; (b) sends round-robin over all of them (consecutive sends`,
    `  go to different workspaces), each with a fresh Idempotency-Key. Offered at most ${NUMBERS} × 1/s = ${f0(SEND_RATE_CAP)} sends/s`,
    `  (autocannon overallRate), each number gets at most one send every ${f1(NUMBERS / SEND_RATE_CAP)} s, half its limit; the number limit`,
    `  alone would allow ${NUMBERS} × ${NUMBER_LIMIT_PER_S} = ${f0(NUMBERS * NUMBER_LIMIT_PER_S)}/s.`,
    `- Measured: ${f0(b.rps)} sends/s → ${f2(b.rps / NUMBERS)} per number per second, i.e. (b) came back to each number every`,
    `  ${f1(NUMBERS / b.rps)} s; the busiest number accepted ${maxNumberB} sends in the ${DURATION_S} s of (b). Coming back often matters`,
    "  as much as staying under the limit: the local runtime evicts an object that stays idle for some seconds, and a send that",
    "  restarts its number object costs what (w) shows.",
    `- Workspace: planned worst case ${f0(NUMBERS_PER_WORKSPACE)} warm-up sends + ${f0(SEND_RATE_CAP)}/s × ${DURATION_S} s ÷ ${WORKSPACES} = ${f0(WORST_PER_WORKSPACE)}`,
    `  per workspace in the whole run, under ${WORKSPACE_LIMIT_PER_MIN}. Measured: the busiest workspace accepted ${f0(maxWs)} sends in the`,
    `  whole run (warm-up included). ` +
      (capPerWorkspacePerMin < WORKSPACE_LIMIT_PER_MIN
        ? `Even at the cap a workspace gets ${f0(SEND_RATE_CAP)} ÷ ${WORKSPACES} × 60 = ${f0(capPerWorkspacePerMin)} sends/min, so (b) could run`
        : `At the cap a workspace gets ${f0(capPerWorkspacePerMin)} sends/min: (b) must stay short, or use more workspaces.`),
    ...(capPerWorkspacePerMin < WORKSPACE_LIMIT_PER_MIN
      ? ["  for any length without reaching the workspace limit."]
      : []),
    `- (c) replays the ${f0(accepted.length)} accepted (key, body) pairs of (b) in the same order; a replay is answered before any limit is`,
    "  checked. (d) reads the same jobIds.",
    "- (a) ran before any send, on a quiet runtime. After the warm-up sends and after (b) the bench waited until a sample of those",
    "  sends had been delivered (sandbox operator), so that their delivery did not overlap the next case: warm-up " +
      (warmSettle.settled ? `${f1(warmSettle.ms / 1000)} s` : `not reached within ${SETTLE_LIMIT_MS / 1000} s`) +
      ", (b) " +
      (settled ? `${f1(settleMs / 1000)} s.` : `not reached within ${SETTLE_LIMIT_MS / 1000} s.`),
    "",
    "## Where the time goes",
    "",
    "Measured in this run:",
    "",
    `- (a) GET /me: 0 Durable Object hops, ${f2(a.d1PerRequest)} D1 statements per request: ${f0(a.rps)} req/s, ${f1(a.cpuPerRequest)} ms of runtime CPU`,
    `  per request, ${f2(a.runtimeCores)} cores busy.`,
    `- (d) GET /messages/{id}: 1 hop (Worker → workspace object, one SQLite read), ${f3(d.d1PerRequest)} D1 statements: ${f2(d.rps / a.rps)}× the`,
    `  baseline's req/s, ${f1(d.cpuPerRequest)} ms CPU per request.`,
    "- (c) replay: 1 hop (Worker → workspace object: the idempotency lookup), plus body validation and SHA-256 of the canonical body",
    `  in the Worker, ${f3(c.d1PerRequest)} D1 statements: ${f2(c.rps / a.rps)}× the baseline's req/s, ${f1(c.cpuPerRequest)} ms CPU per request.`,
    "- (b) accepted send: 2 sequential hops (Worker → workspace object → number object, whose 2/s window and queue are in memory),",
    `  one SQLite insert in the workspace object (the record, its key and its place in the number's work list), ${f3(b.d1PerRequest)} D1 statements: ${f2(b.rps / a.rps)}× the baseline's req/s, p50 ${f2(b.p50 / a.p50)}× and p99 ${f2(b.p99 / a.p99)}× the`,
    `  baseline's, ${f1(b.cpuPerRequest)} ms CPU per send (${f1(b.cpuPerRequest === null || a.cpuPerRequest === null ? null : b.cpuPerRequest / a.cpuPerRequest)}× a GET /me). The numbers' delivery was held during (b)`,
    "  (bench/worker.ts: each number queues what it is handed and calls no one), so that this is the accept path alone.",
    "",
    `- Worker ms vs client latency: for (d) the Worker's own handling took ${f1(d.serverMs)} ms on average while the client's p50 was`,
    `  ${f1(d.p50)} ms; for (b) ${f1(b.serverMs)} ms vs ${f1(b.p50)} ms. The rest is waiting for the runtime (local workerd runs all`,
    '  objects and the Worker on one thread: see "runtime cores busy"), wrangler dev\'s proxy in front of the Worker, and the client.',
    "- Every request pays the same fixed costs in all cases: the proxy hop and one access-log line (`src/middleware/access-log.ts`)",
    "  that wrangler prints. Cores busy by process (Worker runtime workerd / proxy workerd / wrangler's Node / bench client):",
    ...results.map(
      (r) =>
        `  ${r.label} ${r.coresByRole ? `${f2(r.coresByRole.runtime)} / ${f2(r.coresByRole.proxy)} / ${f2(r.coresByRole.wrangler)}` : "n/a"} / ${f2(r.clientCores)}`,
    ),
    `  The machine has ${machine.cores} cores. In (a), (c) and (d) the runtime, its proxy and wrangler together keep about`,
    `  ${f1(a.runtimeCores)} cores busy (in (a), ${a.coresByRole ? f2(a.coresByRole.proxy + a.coresByRole.wrangler) : "n/a"} of them in the proxy and wrangler, i.e. the local harness). In (b) the`,
    `  runtime used ${f2(b.runtimeCores)} cores in all, ${b.coresByRole ? f2(b.coresByRole.runtime) : "n/a"} of them in the workerd that runs the Worker and every object on one`,
    "  thread: (b) leaves cores idle and is limited by that one thread (and what it waits on), which serves the request path and the",
    "  background delivery of the sends alike.",
    "",
    "What the design does about it (this bench changes nothing on the request path; it measures):",
    "",
    "- No D1 on the send path: admission (idempotency, both rate limits, quota, the message record) is local SQLite in the workspace",
    "  object plus the number object's window (in memory); D1 gets the daily counts once a minute per workspace through the usage",
    "  queue, and no row per message. Measured above: 0 statements per send except the key-cache refreshes.",
    "- The D1 reads that remain are cached: API keys per isolate (5 s), a workspace's quota and connected numbers in its object (5 s;",
    "  admin changes invalidate it at once).",
    "- The second hop is the price of a per-number 2/s window and a per-number ordered queue; replays and reads never take it.",
    "- Delivery is asynchronous (alarms, queues): the client's 201 does not wait for it, though locally it shares the one runtime.",
    "",
    "## The accept path, like with like",
    "",
    "(k) is the accept path's baseline (`POST /bench/accept-baseline`, bench/worker.ts): the same bodies over the same API keys, offered",
    "at the same pace, through the same authentication, the body's SHA-256 fingerprint, a new job id, one hop to the workspace object",
    "and one row written there in a transaction, then 201. A send adds the idempotency lookup, both rate windows, the hop to its",
    "number object and the record's insert with its index entries. Aim: accepted sends at 0.5× (k)'s req/s or more, p99 at 2× or less.",
    "Before (k) existed, (b) ran with its delivery on the same runtime and was compared with GET /me only: 0.29× (a)'s req/s and",
    "4.19× its p99 (the run of 2026-11-23, commit dc83545), a ratio that charged each send for the whole pipeline.",
    "",
    `- (b) ÷ (k): req/s **${f2(b.rps / k.rps)}×** (${b.rps / k.rps >= 0.5 ? "meets" : "misses"} the aim), p50 ${f2(b.p50 / k.p50)}×, p99 **${f2(b.p99 / k.p99)}×** (${b.p99 / k.p99 <= 2 ? "meets" : "misses"} the aim);`,
    `  runtime CPU per request ${f1(b.cpuPerRequest)} vs ${f1(k.cpuPerRequest)} ms.`,
    `- The delivery pipeline, measured apart: (b)'s ${f0(accepted.length)} accepted sends were released at once after (b) and were`,
    (settled
      ? `  delivered (a sample of them sent or failed at the sandbox operator) ${f1(settleMs / 1000)} s later: ${f0(accepted.length / Math.max(settleMs / 1000, 0.001))} messages/s,`
      : `  not all delivered within ${SETTLE_LIMIT_MS / 1000} s,`) +
      ` under the numbers' pace of ${NUMBER_LIMIT_PER_S} calls/s each (${f0(NUMBERS * NUMBER_LIMIT_PER_S)}/s over ${NUMBERS} numbers).`,
    "",
    ...storageSection(storage, seed),
    ...listSection(seed, listResults, listRow, a, listHeader),
    ...baselineSection(baseline, sendRatios, drift),
    `Run time: ${f0(runMs / 1000)} s: ${phases.join(", ")}; the rest is the ten ${DURATION_S} s cases, their warm-ups and stopping.`,
    "",
  ].join("\n");
  const baselineOut = {
    source: `bench/results.md of the run of ${machine.date}`,
    drift,
    ratios: sendRatios,
  };
  return { markdown: md, problems: runProblems({ results, listResults, seed }), baselineOut };
}
