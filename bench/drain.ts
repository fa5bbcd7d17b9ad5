// `npm run bench`, drain part: does one number keep up with its own acceptance rate (2 sends/s) when
// the operator is slow? A number object starts its next call without waiting for the previous answer
// (docs/architecture.md, "The outbox and the drain"); this measures it on a local runtime.
// Four cases on a fresh live number each, sends accepted as fast as the number's 2/s window allows:
//   (f) baseline: the operator answers in 10 ms, every send to a new recipient;
//   (s) the operator answers in 700 ms, every send to a new recipient;
//   (c) the operator answers in 700 ms, every send to the same recipient (one conversation is called
//       one message at a time, by design: at most 1 ÷ 0.7 s);
//   (v) the operator answers in 4 s, every send to a new recipient (at most 6 calls of a number wait
//       on the operator: at most 6 ÷ 4 s).
// Options: --sends N (BENCH_DRAIN_SENDS, 60), --port P (BENCH_DRAIN_PORT, 8880: the Worker on P, its
// inspector P+1, the fake operator P+2; loopback only). 120 s per case at most. Writes bench/drain.md.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { onStop } from "../scripts/lib/local-worker.mjs";
import { startOperator, type Operator, type OperatorCall } from "./lib/operator.ts";
import {
  liveNumber,
  fail,
  machine,
  maxInWindow,
  options,
  percentile,
  runMain,
  sayAs,
  sleep,
  workspace,
  writeResult,
} from "./lib/run.ts";
import { startRuntime, type Runtime } from "./lib/runtime.ts";

const opts = options({
  sends: { env: "BENCH_DRAIN_SENDS", fallback: 60 },
  port: { env: "BENCH_DRAIN_PORT", fallback: 8880 },
});
const CASE_LIMIT_MS = 120_000;
const VERSION = "v26.0";
// The operator's burst per recipient (src/durable-objects/channel-number/pair-pace.ts): case (c) stays under it,
// so that it shows the conversation's order and not the pair rate.
const PAIR_BURST = 45;
const CASES = [
  {
    label: "f",
    latencyMs: 10,
    to: (i: number) => `5511970${String(i).padStart(6, "0")}`,
    what: "operator answers in 10 ms, a new recipient per send (baseline)",
  },
  {
    label: "s",
    latencyMs: 700,
    to: (i: number) => `5511971${String(i).padStart(6, "0")}`,
    what: "operator answers in 700 ms, a new recipient per send",
  },
  {
    label: "c",
    latencyMs: 700,
    to: () => "5511972000000",
    what: "operator answers in 700 ms, one recipient for all sends",
    sends: PAIR_BURST - 5,
  },
  {
    label: "v",
    latencyMs: 4_000,
    to: (i: number) => `5511973${String(i).padStart(6, "0")}`,
    what: "operator answers in 4 s, a new recipient per send",
  },
];
const say = sayAs("bench-drain");
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
  const edges = calls
    .flatMap((c) => [[c.hr, 1] as const, [c.answeredHr ?? c.hr, -1] as const])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let max = 0;
  for (const [, d] of edges) max = Math.max(max, (now += d));
  return max;
}

async function main() {
  operator = await startOperator({ port: opts.port + 2, version: VERSION, faults: false, latencyMs: [10, 10] });
  say(`fake operator on 127.0.0.1:${opts.port + 2}; starting wrangler dev on 127.0.0.1:${opts.port}`);
  runtime = await startRuntime({
    port: opts.port,
    state,
    logFile: join(state, "wrangler.log"),
    vars: { UPSTREAM_CLOUD_API_BASE_URL: `http://127.0.0.1:${opts.port + 2}`, UPSTREAM_CLOUD_API_VERSION: VERSION },
  });
  const base = runtime.baseUrl;
  const ws = await workspace(base, "Drain bench");
  const results = [];
  for (const [n, c] of CASES.entries()) {
    const phoneNumberId = `${Date.now()}${n}`;
    await operator.addNumber(phoneNumberId, "bench-drain-token", [c.latencyMs, c.latencyMs]);
    const numberId = await liveNumber(
      base,
      ws.id,
      `+1555${String(n + 1).padStart(7, "0")}`,
      phoneNumberId,
      "bench-drain-token",
    );
    const count = Math.min(opts.sends, c.sends ?? opts.sends);
    const accepted: Array<{ at: number; jobId: string }> = [];
    const started = Date.now();
    for (let i = 0; i < count; i++) {
      for (;;) {
        const res = await fetch(`${base}/api/v1/messages`, {
          method: "POST",
          headers: {
            Authorization: `Bearer ${ws.apiKey}`,
            "Content-Type": "application/json",
            "Idempotency-Key": `drain-${numberId}-${i}`,
          },
          body: JSON.stringify({ channelNumberId: numberId, to: c.to(i), text: { body: `drain bench message ${i}` } }),
        });
        const text = await res.text();
        if (res.status === 201) {
          accepted.push({ at: Date.now(), jobId: String(JSON.parse(text).jobId) });
          break;
        }
        if (res.status !== 429) fail(`send ${i} answered ${res.status}: ${text.slice(0, 300)}`);
        // Retry-After is whole seconds (rounded up); poll a little finer to keep the number's window full.
        await sleep(Math.min(Number(res.headers.get("retry-after")) * 1000 || 250, 250));
      }
    }
    const calls = () => operator?.calls.filter((call) => call.phoneNumberId === phoneNumberId) ?? [];
    while (calls().length < accepted.length && Date.now() - started < CASE_LIMIT_MS) await sleep(100);
    const got = calls().sort((a, b) => a.hr - b.hr);
    if (got.length !== accepted.length || new Set(got.map((call) => call.jobId)).size !== got.length)
      fail(`(${c.label}): ${got.length} calls for ${accepted.length} messages within ${CASE_LIMIT_MS / 1000} s`);
    const callAt = new Map(got.map((call) => [call.jobId, call.at]));
    const waits = accepted.map((a) => (callAt.get(a.jobId) ?? NaN) - a.at);
    const callTimes = got.map((call) => call.at);
    results.push({
      ...c,
      sends: accepted.length,
      acceptRate: rate(accepted.map((a) => a.at)),
      callRate: rate(callTimes),
      maxInOneSecond: maxInWindow(callTimes),
      maxWaiting: maxWaiting(got),
      waitP50: percentile(waits, 50) ?? NaN,
      waitMax: Math.max(...waits),
      lastWait: waits.at(-1) ?? NaN,
    });
    say(`(${c.label}) ${results.at(-1)?.callRate.toFixed(2)} calls/s`);
  }
  const f = results[0]?.callRate ?? NaN;
  writeResult("drain.md", [
    "# Drain under a slow operator (`npm run bench`)",
    "",
    "Generated by `bench/drain.ts` (how it measures and how to read it: bench/README.md).",
    "",
    `- ${machine()}`,
    "",
    "| case | operator | sends | accepted/s | operator calls/s | ÷ (f) | max calls in 1 s | max waiting at once | accepted → call p50 ms | max ms | last send's wait ms |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...results.map(
      (r) =>
        `| (${r.label}) | ${r.what} | ${r.sends} | ${r.acceptRate.toFixed(2)} | ${r.callRate.toFixed(2)} | ${(r.callRate / f).toFixed(2)} | ${r.maxInOneSecond} | ${r.maxWaiting} | ${Math.round(r.waitP50)} | ${Math.round(r.waitMax)} | ${Math.round(r.lastWait)} |`,
    ),
  ]);
  if (results.some((r) => r.maxInOneSecond > 2)) fail("a number made more than 2 calls within 1 s");
  if (results.some((r) => r.maxWaiting > 6)) fail("more than 6 calls of a number waited on the operator at once");
  const s = results[1]?.callRate ?? 0;
  if (s < 0.95 * f) fail(`(s) drained at ${(s / f).toFixed(2)}× the baseline: slow answers hold the drain back`);
}

runMain("bench-drain", main, cleanup, 15 * 60_000);
