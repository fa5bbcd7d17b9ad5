// `npm run bench`, report: bench/results.md from what the cases measured (what each case and figure
// means: bench/README.md), and what makes a run fail whatever its figures.
import { createRequire } from "node:module";
import os from "node:os";
import { dirname } from "node:path";
import { ROOT } from "../lib/run.ts";
import {
  AGREE_WITHIN,
  BODY_CHARS,
  BUDGET_BYTES_PER_ROW,
  DURATION_S,
  NUMBER_LIMIT_PER_S,
  NUMBERS,
  SEND_RATE_CAP,
  SETTLE_LIMIT_MS,
  STORAGE_NUMBERS,
  WORKSPACE_LIMIT_PER_MIN,
  WORKSPACES,
  WORST_PER_WORKSPACE,
} from "./parameters.ts";
import { CONNECTIONS, type Accepted, type CaseRow } from "./requests.ts";
import type { Storage } from "./sqlite.ts";

type Settle = { settled: boolean; ms: number };
export interface BenchRun {
  /** (a), (b), (c), (d), (a'). */
  results: CaseRow[];
  acceptBaseline: CaseRow;
  accepted: Accepted[];
  warmAccepted: Accepted[];
  warmRow: CaseRow;
  warmSettle: Settle;
  bSettle: Settle;
  loadBefore: number[];
  loadAfter: number[];
  phases: string[];
  storage: {
    before: Storage;
    after: Storage;
    sends: number;
    rps: number;
    deliveryMs: number;
    deliveries: number;
    eventIds: number;
  };
  seed: {
    count: number;
    ms: number;
    oldest: number;
    newest: number;
    shapes: Record<string, number>;
    storage: Storage;
    firstListMs: number;
    retained: { records: number; slotTables: number; historyDays: number };
  };
  /** (a2), (e), (f), (g), (a2'). */
  listResults: CaseRow[];
  runMs: number;
}
type Figure = number | null | undefined;

export const f0 = (n: Figure) => (n === null || n === undefined ? "n/a" : Math.round(n).toLocaleString("en-US"));
export const f1 = (n: Figure) => (n === null || n === undefined ? "n/a" : n.toFixed(1));
export const f2 = (n: Figure) => (n === null || n === undefined ? "n/a" : n.toFixed(2));
export const f3 = (n: Figure) => (n === null || n === undefined ? "n/a" : n.toFixed(3));
/** A relative change: "+12%", "−3%", "±0%". */
export const pct = (x: number) =>
  Math.round(x * 100) === 0 ? "±0%" : `${x > 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(0)}%`;
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(2)} MiB`;
const ratio = (x: Figure, y: Figure) => (x === null || x === undefined || !y ? null : x / y);
const maxCount = (keys: string[]) => {
  const n = new Map<string, number>();
  for (const k of keys) n.set(k, (n.get(k) ?? 0) + 1);
  return Math.max(0, ...n.values());
};

const require = createRequire(import.meta.url);
const versionOf = (pkg: string, from = ROOT) => {
  try {
    return String(require(require.resolve(`${pkg}/package.json`, { paths: [from] })).version);
  } catch {
    return "unknown";
  }
};

/** The machine the run measured on; busy when its 1-minute load exceeded its cores before the run. */
export function machineLines(loadBefore: number[], loadAfter: number[], cpus: Array<{ model: string }> = os.cpus()) {
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(" / ");
  const wranglerDir = dirname(require.resolve("wrangler/package.json", { paths: [ROOT] }));
  return [
    `- ${new Date().toISOString()}; ${cpus[0]?.model.trim() ?? "CPU"} × ${cpus.length} logical cores; memory ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB; ${os.type()} ${os.release()} (${process.arch})`,
    `- Load average before the run ${load(loadBefore)}, after it ${load(loadAfter)} (1 / 5 / 15 min)${(loadBefore[0] ?? 0) > cpus.length ? ": **the machine was busy with other work**, so even the ratios are less reliable" : ""}`,
    `- Node ${process.version}; wrangler ${versionOf("wrangler")}; workerd ${versionOf("workerd", wranglerDir)}; autocannon ${versionOf("autocannon")}; ${CONNECTIONS} connections, pipelining 1`,
  ];
}

/** What makes a run fail (exit code 1), whatever its figures: one line per problem. */
export function runProblems({ results, listResults, seed }: Pick<BenchRun, "results" | "listResults" | "seed">) {
  const [a, b] = results as [CaseRow, CaseRow];
  const problems: string[] = [];
  for (const r of [...results, ...listResults]) {
    if (r.non2xx > 0) problems.push(`${r.label} had ${r.non2xx} non-2xx responses: ${JSON.stringify(r.statuses)}`);
    if (r.errors > 0 || r.timeouts > 0)
      problems.push(`${r.label} had ${r.errors} connection errors and ${r.timeouts} timeouts`);
    if (r.bad > 0) problems.push(`${r.label} had ${r.bad} responses that were not the expected answer`);
  }
  if (b.statuses["429"]) problems.push(`(b) was rate limited ${b.statuses["429"]} times: the pacing is wrong`);
  if (a.d1PerRequest === null) problems.push("no Server-Timing header: the D1 statement count is missing");
  const { retained, storage } = seed;
  if (
    retained.records !== storage.slots.rows ||
    retained.slotTables !== storage.slotTables ||
    retained.historyDays !== 0
  )
    problems.push(
      `the seeded object changed during the list cases: ${JSON.stringify(retained)}, seeded ${storage.slots.rows} records in ${storage.slotTables} slot tables`,
    );
  return problems;
}

/** bench/results.md's lines for a run (pure: the same run gives the same page but its date), and the run's problems. */
export function buildReport(run: BenchRun) {
  const { results, acceptBaseline: k, accepted, warmRow, storage: st, seed, listResults } = run;
  const [a, b, c, d, a1] = results as [CaseRow, CaseRow, CaseRow, CaseRow, CaseRow];
  const [a2, e, f, g, a2b] = listResults as [CaseRow, CaseRow, CaseRow, CaseRow, CaseRow];
  const statusList = (r: CaseRow) =>
    Object.entries(r.statuses)
      .map(([code, n]) => `${code}: ${f0(n)}`)
      .join(", ") || "none";
  const cores = (r: CaseRow) =>
    (r.coresByRole
      ? `${f2(r.coresByRole.runtime)} / ${f2(r.coresByRole.proxy)} / ${f2(r.coresByRole.wrangler)}`
      : "n/a") + ` / ${f2(r.clientCores)}`;
  // The list cases add a column: their ratio to (a) beside the one to their own baseline.
  const row = (r: CaseRow, base: CaseRow | null, toA = false) =>
    `| ${r.label} | ${r.what} | ${f0(r.rps)}${r.capped ? "¹" : ""} | ${f1(r.p50)} | ${f1(r.p99)} | ${statusList(r)} | ${f0(r.non2xx + r.bad)} | ${f2(base && r.rps / base.rps)} | ${f2(base && r.p99 / base.p99)} |${toA ? ` ${f2(r.rps / a.rps)} |` : ""} ${f3(r.d1PerRequest)} | ${f1(r.serverMs)} | ${f1(r.cpuPerRequest)} | ${f2(r.runtimeCores)} | ${cores(r)} |`;
  const header = (base: string, toA = false) => [
    `| case | request | req/s | p50 ms | p99 ms | statuses | non-2xx or unexpected | req/s ÷ ${base} | p99 ÷ ${base} |${toA ? " req/s ÷ (a) |" : ""} D1 statements / request | Worker ms (mean) | runtime CPU ms / request | runtime cores busy | cores: runtime / proxy / wrangler / client |`,
    `| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |${toA ? " ---: |" : ""} ---: | ---: | ---: | ---: | --- |`,
  ];
  const drift = a1.rps / a.rps - 1;
  const hist = [...b.d1Histogram]
    .sort(([x], [y]) => x - y)
    .map(([n, count]) => `${f0(count)} sends with ${n}`)
    .join(", ");
  const settled = (s: Settle) => (s.settled ? `${f1(s.ms / 1000)} s` : `not within ${SETTLE_LIMIT_MS / 1000} s`);
  const bk = { rps: b.rps / k.rps, p99: b.p99 / k.p99 };

  // Storage: bytes per message in the workspace object, from its file before and after the storage sends.
  const { before, after, sends } = st;
  const records = after.slots.rows - before.slots.rows;
  const slotGrowth = after.slots.bytes - before.slots.bytes;
  const logRows = after.deliveries.rows - before.deliveries.rows;
  const attempts = (after.deliveries.attempts ?? 0) - (before.deliveries.attempts ?? 0);
  const logGrowth = after.deliveries.bytes - before.deliveries.bytes;
  const perMessage = (after.bytes - before.bytes) / sends;
  const perRecord = records > 0 ? slotGrowth / records : null;
  const perAttempt = attempts > 0 ? logGrowth / attempts : null;
  const expectedPerMessage = BUDGET_BYTES_PER_ROW.record + (attempts / sends) * BUDGET_BYTES_PER_ROW.attempt;
  const others = Object.keys({ ...before.others, ...after.others }).sort();
  const otherBytes = (s: Storage) => others.reduce((sum, t) => sum + (s.others[t]?.bytes ?? 0), 0);
  // Every b-tree grows by whole pages: that is the resolution of a figure.
  const verdict = (what: string, measured: number | null, budget: number, resolution: number) => {
    if (measured === null) return `${what}: none added`;
    const diff = measured / budget - 1;
    const agree =
      Math.abs(diff) <= AGREE_WITHIN
        ? "they agree"
        : diff < 0
          ? "the bound is higher (on the safe side)"
          : "they do NOT agree: the bound is LOWER than measured";
    return `${what} ${f0(measured)} B against ${budget} (${pct(diff)}; resolution ±${f0(resolution * 100)}%): ${agree}`;
  };
  const btreeRows = [
    ["records", "the records (`WITHOUT ROWID`, key = id)"],
    ["_to", "index `_to` (recipient, id)"],
    ["_key", "index `_key` (idem_key, unique)"],
    ["_work", "index `_work` (channel_number_id, id) where pending = 1"],
    ["_failed", "index `_failed` (id) where status = failed"],
  ].map(([bt, what]) => {
    const [x, y] = [before.slots.btrees[bt as string] ?? 0, after.slots.btrees[bt as string] ?? 0];
    return `| ${what} | ${f0(x)} | ${f0(y)} | ${f0(y - x)} | per record | ${f0(ratio(y - x, records))} | |`;
  });
  const seeded = seed.storage.slots;
  const seededPerRecord = seeded.rows > 0 ? seeded.bytes / seeded.rows : 0;
  const sh = seed.shapes;
  const listDrift = a2b.rps / a2.rps - 1;

  const md = [
    "# Benchmark: local runtime (`npm run bench`)",
    "",
    "Generated by `bench/load/main.ts`; every figure below was measured in this run. What each case and figure means: bench/README.md.",
    "",
    ...machineLines(run.loadBefore, run.loadAfter),
    "",
    "## Request cases",
    "",
    ...header("(a)"),
    ...[...results, k].map((r) => row(r, a)),
    row(warmRow, null),
    "",
    `- Drift: (a') did ${f0(Math.abs(drift) * 100)}% ${drift >= 0 ? "more" : "fewer"} req/s than (a): ratio differences smaller than that are noise.`,
    `- ¹ (b) was offered at most ${f0(SEND_RATE_CAP)} sends/s and reached ${f0(b.rps)}/s, ${f0((100 * b.rps) / SEND_RATE_CAP)}% of the cap${b.rps >= 0.9 * SEND_RATE_CAP ? ": **this row measures the cap, not the server**" : ""}.`,
    `- D1 statements on the request path: (b) ${f0(b.d1Total)} over ${f0(b.statuses["201"] ?? 0)} accepted sends = **${f3(b.d1PerRequest)} per send** (${hist || "no data"}); key-cache refreshes expected ≈ ${f0((WORKSPACES * b.duration) / 5)}; (w) ${f0(warmRow.d1Total)} over ${f0(warmRow.completed)} sends; (a) ${f2(a.d1PerRequest)} per request.`,
    `- Limits: ${NUMBER_LIMIT_PER_S} sends/s per number, ${WORKSPACE_LIMIT_PER_MIN}/min per workspace; ${WORKSPACES} workspaces × ${NUMBERS / WORKSPACES} numbers = ${NUMBERS} numbers, each offered at most a send every ${f1(NUMBERS / SEND_RATE_CAP)} s. Measured: ${f2(b.rps / NUMBERS)} sends per number per second (back to each number every ${f1(NUMBERS / b.rps)} s); the busiest number accepted ${maxCount(accepted.map((s) => s.numberId))} sends in (b), the busiest workspace ${maxCount([...run.warmAccepted, ...accepted].map((s) => s.workspaceId))} in the run (planned worst case ${f0(WORST_PER_WORKSPACE)}); (c) replayed ${f0(accepted.length)} pairs.`,
    `- Settling before the next case (a sample of the sends sent or failed): warm-up ${settled(run.warmSettle)}, (b) ${settled(run.bSettle)}.`,
    `- (b) against (a): p50 ${f2(b.p50 / a.p50)}×, runtime CPU per send ${f2(ratio(b.cpuPerRequest, a.cpuPerRequest))}× a GET /me; Worker ms against the client's p50: (d) ${f1(d.serverMs)} vs ${f1(d.p50)}, (b) ${f1(b.serverMs)} vs ${f1(b.p50)}, (c) ${f1(c.serverMs)} vs ${f1(c.p50)}.`,
    "",
    "## The accept path, like with like",
    "",
    `- (b) ÷ (k): req/s **${f2(bk.rps)}×** (aim ≥ 0.5: ${bk.rps >= 0.5 ? "met" : "missed"}), p50 ${f2(b.p50 / k.p50)}×, p99 **${f2(bk.p99)}×** (aim ≤ 2: ${bk.p99 <= 2 ? "met" : "missed"}); runtime CPU per request ${f1(b.cpuPerRequest)} vs ${f1(k.cpuPerRequest)} ms.`,
    `- The delivery pipeline apart: (b)'s ${f0(accepted.length)} sends, released at once, ${
      run.bSettle.settled
        ? `delivered ${f1(run.bSettle.ms / 1000)} s later: ${f0(accepted.length / Math.max(run.bSettle.ms / 1000, 0.001))} messages/s`
        : `not all delivered within ${SETTLE_LIMIT_MS / 1000} s`
    } (the numbers' pace allows ${f0(NUMBERS * NUMBER_LIMIT_PER_S)}/s).`,
    "",
    "## Storage: bytes per message in the workspace object",
    "",
    `${f0(sends)} accepted sends (${BODY_CHARS}-character bodies, ${f0(st.rps)}/s over ${STORAGE_NUMBERS} numbers) after one per number; quiet ${f1(st.deliveryMs / 1000)} s after the last; the receiver took ${f0(st.deliveries)} deliveries of ${f0(st.eventIds)} distinct events (${f2(st.eventIds / (STORAGE_NUMBERS + sends))} per message); ${after.slotTables} slot table(s), ${after.deliveryTables} delivery-log table(s) at the end.`,
    "",
    "| b-tree | bytes before | bytes after | growth | rows | bytes per row added | engine's bound |",
    "| --- | ---: | ---: | ---: | --- | ---: | ---: |",
    ...btreeRows,
    `| **slot tables \`m_<slot>\`** | ${f0(before.slots.bytes)} | ${f0(after.slots.bytes)} | ${f0(slotGrowth)} | ${f0(before.slots.rows)} → ${f0(after.slots.rows)} records (+${f0(records)}) | **${f0(perRecord)} per record** | ~${BUDGET_BYTES_PER_ROW.record} |`,
    `| **delivery log \`d_<day>\`** | ${f0(before.deliveries.bytes)} | ${f0(after.deliveries.bytes)} | ${f0(logGrowth)} | ${f0(before.deliveries.rows)} → ${f0(after.deliveries.rows)} rows (+${f0(logRows)}), ${f0(before.deliveries.attempts)} → ${f0(after.deliveries.attempts)} attempts (+${f0(attempts)}) | **${f0(ratio(logGrowth, logRows))} per row, ${f0(perAttempt)} per attempt** | ~${BUDGET_BYTES_PER_ROW.attempt} per attempt |`,
    `| other tables (${others.map((t) => `\`${t}\``).join(", ") || "none"}) | ${f0(otherBytes(before))} | ${f0(otherBytes(after))} | ${f0(otherBytes(after) - otherBytes(before))} | – | – | – |`,
    `| **whole file** (page count × ${after.pageSize} B; free pages ${f0(before.freePages)} → ${f0(after.freePages)}) | ${f0(before.bytes)} | ${f0(after.bytes)} | ${f0(after.bytes - before.bytes)} | ${f0(sends)} messages | **${f0(perMessage)} per message** | ${f0(expectedPerMessage)} for this mix |`,
    "",
    `- Per message, everything included: **${f0(perMessage)} B** (${mib(after.bytes - before.bytes)} for ${f0(sends)} messages) against ${f0(expectedPerMessage)} B from the engine's bounds (one record and ${f2(attempts / sends)} logged attempts): ${pct(perMessage / expectedPerMessage - 1)}.`,
    `- ${verdict("A record with its index entries", perRecord, BUDGET_BYTES_PER_ROW.record, (5 * after.pageSize) / Math.max(1, slotGrowth))}; ${verdict("a logged attempt", perAttempt, BUDGET_BYTES_PER_ROW.attempt, after.pageSize / Math.max(1, logGrowth))}; ${f1(ratio(attempts, logRows))} attempts a row.`,
    `- The ${f0(seed.count)} seeded records below (operator ids, a mix of statuses): **${f0(seededPerRecord)} B per record** (${pct(seededPerRecord / BUDGET_BYTES_PER_ROW.record - 1)} against ~${BUDGET_BYTES_PER_ROW.record}).`,
    "",
    `## GET /messages on a workspace object with ${f0(seed.count)} messages`,
    "",
    `- Seeded through \`POST /bench/seed\` (production's own code, bench/seed.ts) in **${f1(seed.ms / 1000)} s**: ${f0(seed.count - (sh.inbound ?? 0))} outbound (${f0(sh.sent)} sent, ${f0(sh.delivered)} delivered, ${f0(sh.read)} read, ${f0(sh.failed)} failed while processing, ${f0(sh["failed-after-sent"])} failed after sent), ${f0(sh.inbound)} inbound; created over ${f1((seed.newest - seed.oldest) / 3_600_000)} hours in ${f0(seed.storage.slotTables)} slot tables.`,
    `- File after seeding: ${mib(seed.storage.bytes)}; the slot tables ${mib(seeded.bytes)} over ${f0(seeded.rows)} records. The first list request after the seed took ${f0(seed.firstListMs)} ms.`,
    `- After the run the object held ${f0(seed.retained.records)} records in ${f0(seed.retained.slotTables)} slot tables, ${f0(seed.retained.historyDays)} days moved or archived; unexpected answers in (e), (f), (g): ${f0(e.bad + f.bad + g.bad)}.`,
    "",
    ...header("(a2)", true),
    ...listResults.map((r) => row(r, a2, true)),
    "",
    `Drift: (a2') did ${f0(Math.abs(listDrift) * 100)}% ${listDrift >= 0 ? "more" : "fewer"} req/s than (a2).`,
    "",
    `Run time: ${f0(run.runMs / 1000)} s: ${run.phases.join(", ")}; the rest is the ${DURATION_S} s cases, their warm-ups and stopping.`,
  ];
  return { lines: md, problems: runProblems(run) };
}
