// `npm run bench`, drain part: does one number keep up with its own acceptance rate (2 sends/s) when
// the operator is slow? A number object starts its next call without waiting for the previous answer
// (docs/architecture.md, "The outbox and the drain"); this measures it on a local runtime. Four cases
// on a fresh live number each, sends accepted as fast as the number's 2/s window allows (the cases and
// how to read them: bench/README.md). Options: --sends N (BENCH_DRAIN_SENDS, 60), --port P
// (BENCH_DRAIN_PORT, 8880: the Worker on P, its inspector P+1, the fake operator P+2; loopback only).
// 120 s per case at most. Writes bench/drain.md.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { onStop } from "../scripts/lib/local-worker.mjs";
import { startOperator, type Operator, type OperatorCall } from "./lib/operator.ts";
import * as run from "./lib/run.ts";
import { startRuntime, type Runtime } from "./lib/runtime.ts";

const { fail, fig, sleep } = run;
const opts = run.options({
  sends: { env: "BENCH_DRAIN_SENDS", fallback: 60 },
  port: { env: "BENCH_DRAIN_PORT", fallback: 8880 },
});
const CASE_LIMIT_MS = 120_000;
const VERSION = "v26.0";
const recipients = (prefix: string) => (i: number) => `${prefix}${String(i).padStart(6, "0")}`;
const CASES = [
  {
    label: "f",
    latencyMs: 10,
    to: recipients("5511970"),
    what: "operator answers in 10 ms, a new recipient per send (baseline)",
  },
  {
    label: "s",
    latencyMs: 700,
    to: recipients("5511971"),
    what: "operator answers in 700 ms, a new recipient per send",
  },
  // Under the operator's burst per recipient (45, channel-number/pair-pace.ts): the conversation's order, not the pair rate.
  {
    label: "c",
    latencyMs: 700,
    to: () => "5511972000000",
    what: "operator answers in 700 ms, one recipient for all sends",
    sends: 40,
  },
  {
    label: "v",
    latencyMs: 4_000,
    to: recipients("5511973"),
    what: "operator answers in 4 s, a new recipient per send",
  },
];
const say = run.sayAs("bench-drain");
const state = mkdtempSync(join(os.tmpdir(), "bench-drain-"));
let operator: Operator | undefined;
let runtime: Runtime | undefined;
const cleanup = async () => {
  await runtime?.stop();
  await operator?.stop();
  rmSync(state, { recursive: true, force: true });
};
onStop(cleanup);

/** Events per second from the first to the last of `times`. */
const rate = (times: number[]) =>
  times.length < 2 ? 0 : (times.length - 1) / (((times.at(-1) ?? 0) - (times[0] ?? 0)) / 1000);

/** The most calls waiting on the operator at once: each from its arrival to its answer. */
function maxWaiting(calls: OperatorCall[]) {
  const edges = calls.flatMap((c) => [[c.hr, 1] as const, [c.answeredHr ?? c.hr, -1] as const]);
  let [now, max] = [0, 0];
  for (const [, d] of edges.sort((a, b) => a[0] - b[0] || a[1] - b[1])) max = Math.max(max, (now += d));
  return max;
}

async function main() {
  operator = await startOperator({ port: opts.port + 2, version: VERSION, faults: false, latencyMs: [10, 10] });
  say(`fake operator on 127.0.0.1:${opts.port + 2}; starting wrangler dev on 127.0.0.1:${opts.port}`);
  const vars = {
    UPSTREAM_CLOUD_API_BASE_URL: `http://127.0.0.1:${opts.port + 2}`,
    UPSTREAM_CLOUD_API_VERSION: VERSION,
  };
  runtime = await startRuntime({ port: opts.port, state, logFile: join(state, "wrangler.log"), vars });
  const base = runtime.baseUrl;
  const ws = await run.workspace(base, "Drain bench");
  const rows = [];
  const callRates: number[] = [];
  const problems: string[] = [];
  for (const [n, c] of CASES.entries()) {
    const phoneNumberId = `${Date.now()}${n}`;
    await operator.addNumber(phoneNumberId, "bench-drain-token", [c.latencyMs, c.latencyMs]);
    const display = `+1555${String(n + 1).padStart(7, "0")}`;
    const numberId = await run.liveNumber(base, ws.id, display, phoneNumberId, "bench-drain-token");
    const accepted: Array<{ at: number; jobId: string }> = [];
    const started = Date.now();
    for (let i = 0; i < Math.min(opts.sends, c.sends ?? opts.sends); i++) {
      for (;;) {
        const body = { channelNumberId: numberId, to: c.to(i), text: { body: `drain bench message ${i}` } };
        const res = await run.postSend(base, ws.apiKey, body, `drain-${numberId}-${i}`);
        if (res.status === 201) {
          accepted.push({ at: Date.now(), jobId: String(res.json.jobId) });
          break;
        }
        if (res.status !== 429) fail(`send ${i} answered ${res.status}: ${res.text.slice(0, 300)}`);
        // Retry-After is whole seconds (rounded up); poll a little finer to keep the number's window full.
        await sleep(Math.min(res.retryAfter * 1000 || 250, 250));
      }
    }
    const calls = () => operator?.calls.filter((call) => call.phoneNumberId === phoneNumberId) ?? [];
    while (calls().length < accepted.length && Date.now() - started < CASE_LIMIT_MS) await sleep(100);
    const got = calls().sort((a, b) => a.hr - b.hr);
    if (got.length !== accepted.length || new Set(got.map((call) => call.jobId)).size !== got.length)
      fail(`(${c.label}): ${got.length} calls for ${accepted.length} messages within ${CASE_LIMIT_MS / 1000} s`);
    const callAt = new Map(got.map((call) => [call.jobId, call.at]));
    const waits = accepted.map((a) => (callAt.get(a.jobId) ?? NaN) - a.at);
    const callRate = rate(got.map((call) => call.at));
    const [inOneSecond, waiting] = [run.maxInWindow(got.map((call) => call.at)), maxWaiting(got)];
    if (inOneSecond > 2) problems.push(`(${c.label}): a number made more than 2 calls within 1 s`);
    if (waiting > 6) problems.push(`(${c.label}): more than 6 calls of a number waited on the operator at once`);
    callRates.push(callRate);
    const [p50, max] = [run.percentile(waits, 50), Math.max(...waits)];
    const figures = [fig(rate(accepted.map((a) => a.at)), 2), fig(callRate, 2), fig(callRate / callRates[0]!, 2)];
    rows.push([
      `(${c.label})`,
      c.what,
      accepted.length,
      ...figures,
      inOneSecond,
      waiting,
      fig(p50),
      fig(max),
      fig(waits.at(-1)),
    ]);
    say(`(${c.label}) ${callRate.toFixed(2)} calls/s`);
  }
  run.writeResult("drain.md", [
    "# Drain under a slow operator (`npm run bench`)",
    "",
    "Generated by `bench/drain.ts` (how it measures and how to read it: bench/README.md).",
    "",
    `- ${run.machine()}`,
    "",
    ...run.table(
      [
        ...["case", "operator", "sends:", "accepted/s:", "operator calls/s:", "÷ (f):", "max calls in 1 s:"],
        ...["max waiting at once:", "accepted → call p50 ms:", "max ms:", "last send's wait ms:"],
      ],
      rows,
    ),
  ]);
  const [f, s] = callRates as [number, number];
  if (s < 0.95 * f)
    problems.push(`(s) drained at ${(s / f).toFixed(2)}× the baseline: slow answers hold the drain back`);
  if (problems.length) fail(problems.join("; "));
}

run.runMain("bench-drain", main, cleanup, 15 * 60_000);
