// The pipeline behind one number, timed on a local `wrangler dev` with the fake operator (lib/operator.ts):
//
// `tsx bench/pipeline.ts drain` (part of `npm run bench`): does one number keep up with its own acceptance
// rate (2 sends/s) when the operator is slow? A number object starts its next call without waiting for the
// previous answer (docs/architecture.md, "The outbox and the drain"). Four cases on a fresh live number
// each, sends accepted as fast as the number's 2/s window allows. --sends N (BENCH_DRAIN_SENDS, 60),
// --port P (BENCH_DRAIN_PORT, 8880). 120 s per case at most. Writes bench/drain.md.
//
// `tsx bench/pipeline.ts latency` (`npm run bench:latency`): how long a conversation waits on us, one
// message at a time (nothing queues behind anything), p50 and p90 of three paths:
//   (i) inbound: the operator's webhook POST of an inbound message → the customer's webhook receives
//       its `message.received` event (a chatbot's reply starts here);
//   (s) send: POST /api/v1/messages sent → the operator's API receives the call (it usually starts
//       before the 201 arrives);
//   (o) operator status: the operator's webhook POST of a `delivered` report → the customer's webhook
//       receives its `message.status` event (status events may wait up to 1 s to be packed).
// Targets (docs/customers/webhooks.md, "How soon events arrive"): (i) p50 ≤ 300 ms, (s) p50 ≤ 60 ms,
// (o) p50 ≤ 1,300 ms; the run fails when one is missed. --samples N (LATENCY_SAMPLES, 30; at most 200),
// --port P (LATENCY_PORT, 8910). 10 s per sample at most. Writes bench/latency.md.
//
// Ports, loopback only: the Worker on P, its inspector P+1, the fake operator P+2, the receiver P+3.
// How to read the results: bench/README.md.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { onStop } from "../scripts/lib/local-worker.mjs";
import { startOperator, type Operator, type OperatorCall } from "./lib/operator.ts";
import { startReceiver, type Receiver } from "./lib/receiver.ts";
import * as run from "./lib/run.ts";
import { startRuntime, type Runtime } from "./lib/runtime.ts";

const { fail, fig, sleep } = run;
const MODE =
  process.argv[2] === "latency" ? "latency" : process.argv[2] === "drain" ? "drain" : fail("drain or latency");
const opts = run.options({
  sends: { env: "BENCH_DRAIN_SENDS", fallback: 60 },
  samples: { env: "LATENCY_SAMPLES", fallback: 30 },
  port: MODE === "drain" ? { env: "BENCH_DRAIN_PORT", fallback: 8880 } : { env: "LATENCY_PORT", fallback: 8910 },
});
const VERSION = "v26.0";
const say = run.sayAs(`bench-${MODE}`);
const state = mkdtempSync(join(os.tmpdir(), `bench-${MODE}-`));
let operator: Operator | undefined;
let receiver: Receiver | undefined;
let runtime: Runtime | undefined;
const cleanup = async () => {
  await runtime?.stop();
  await operator?.stop();
  await receiver?.stop();
  rmSync(state, { recursive: true, force: true });
};
onStop(cleanup);

/** The fake operator on P+2 and the runtime pointed at it. */
async function start(onCall?: (c: OperatorCall) => void) {
  operator = await startOperator({ port: opts.port + 2, version: VERSION, faults: false, latencyMs: [0, 0], onCall });
  say(`fake operator on 127.0.0.1:${opts.port + 2}; starting wrangler dev on 127.0.0.1:${opts.port}`);
  const vars = {
    UPSTREAM_CLOUD_API_BASE_URL: `http://127.0.0.1:${opts.port + 2}`,
    UPSTREAM_CLOUD_API_VERSION: VERSION,
  };
  runtime = await startRuntime({ port: opts.port, state, logFile: join(state, "wrangler.log"), vars });
  const base = runtime.baseUrl;
  return { op: operator, base, ws: await run.workspace(base, `${MODE} bench`) };
}

// ---- drain

const CASE_LIMIT_MS = 120_000;
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

async function drain() {
  const { op, base, ws } = await start();
  const rows = [];
  const callRates: number[] = [];
  const problems: string[] = [];
  for (const [n, c] of CASES.entries()) {
    const phoneNumberId = `${Date.now()}${n}`;
    await op.addNumber(phoneNumberId, "bench-drain-token", [c.latencyMs, c.latencyMs]);
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
    const calls = () => op.calls.filter((call) => call.phoneNumberId === phoneNumberId);
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
    const figures = [fig(rate(accepted.map((a) => a.at)), 2), fig(callRate, 2), fig(callRate / callRates[0]!, 2)];
    const waited = [fig(run.percentile(waits, 50)), fig(Math.max(...waits)), fig(waits.at(-1))];
    rows.push([`(${c.label})`, c.what, accepted.length, ...figures, inOneSecond, waiting, ...waited]);
    say(`(${c.label}) ${callRate.toFixed(2)} calls/s`);
  }
  run.writeResult("drain.md", [
    "# Drain under a slow operator (`npm run bench`)",
    "",
    "Generated by `bench/pipeline.ts drain` (how it measures and how to read it: bench/README.md).",
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

// ---- latency

const SAMPLES = Math.min(200, opts.samples);
const WARMUP = 3;
const SAMPLE_LIMIT_MS = 10_000;
const PATHS = [
  { k: "i", label: "inbound message: operator webhook → customer webhook", target: 300 },
  { k: "s", label: "send: POST /messages → operator call", target: 60 },
  { k: "o", label: "operator status (delivered) → customer webhook", target: 1_300 },
] as const;

/** When what `key` names arrived; waits for it (bounded). */
function arrivals() {
  const seen = new Map<string, number>();
  return {
    arrived: (key: string, at: number) => void (seen.has(key) || seen.set(key, at)),
    async waitFor(key: string) {
      for (const started = Date.now(); Date.now() - started < SAMPLE_LIMIT_MS; await sleep(2)) {
        const at = seen.get(key);
        if (at !== undefined) return at;
      }
      return fail(`${key} did not arrive within ${SAMPLE_LIMIT_MS / 1000} s`);
    },
  };
}

async function latency() {
  const [calls, events] = [arrivals(), arrivals()];
  const secrets = new Map<string, string>();
  receiver = await startReceiver({
    port: opts.port + 3,
    secrets,
    onDelivery: ({ at, body }) => {
      if (body?.type === "message.received") events.arrived(`received:${body.data.upstreamMessageId}`, at);
      if (body?.type === "message.status" && body.data.deliveredAt)
        events.arrived(`delivered:${body.data.messageId}`, at);
    },
  });
  const { op, base, ws } = await start((c) => c.jobId && calls.arrived(c.jobId, c.at));
  const phoneNumberId = `${Date.now()}`;
  await op.addNumber(phoneNumberId, "bench-latency-token");
  const numberId = await run.liveNumber(base, ws.id, "+15550100000", phoneNumberId, "bench-latency-token");
  secrets.set(numberId, await run.webhook(base, ws.apiKey, numberId, receiver.url(numberId)));
  const post = async (value: Record<string, unknown>) => {
    const at = Date.now();
    const status = await run.postOperatorWebhook(base, JSON.stringify(run.operatorEnvelope(phoneNumberId, value)));
    if (status !== 200) fail(`the operator's webhook answered ${status}`);
    return at;
  };

  const ms = { i: [] as number[], s: [] as number[], o: [] as number[] };
  for (let n = 0; n < SAMPLES + WARMUP; n++) {
    const record = n >= WARMUP;
    const timestamp = () => String(Math.floor(Date.now() / 1000));
    // (i) an inbound message from a user.
    const wamid = `wamid.IN.${n}.${Date.now()}`;
    const from = `55119${String(1000000 + n).padStart(7, "0")}`;
    const posted = await post({
      contacts: [{ wa_id: from, profile: { name: "Ana" } }],
      messages: [{ from, id: wamid, timestamp: timestamp(), type: "text", text: { body: "hi" } }],
    });
    const received = await events.waitFor(`received:${wamid}`);
    if (record) ms.i.push(received - posted);

    // (s) the reply: accepted → the operator's call.
    const sentAt = Date.now();
    const res = await run.postSend(base, ws.apiKey, {
      channelNumberId: numberId,
      to: from,
      text: { body: `reply ${n}` },
    });
    if (res.status !== 201) fail(`a send answered ${res.status}: ${res.text.slice(0, 300)}`);
    const jobId = String(res.json.jobId);
    const called = await calls.waitFor(jobId);
    if (record) ms.s.push(called - sentAt);

    // (o) the operator reports it delivered.
    await sleep(100);
    const id = op.calls.find((c) => c.jobId === jobId)?.wamid;
    const report = {
      id,
      status: "delivered",
      timestamp: timestamp(),
      recipient_id: from,
      biz_opaque_callback_data: jobId,
    };
    const reported = await post({ statuses: [report] });
    const delivered = await events.waitFor(`delivered:${jobId}`);
    if (record) ms.o.push(delivered - reported);
    // The number's 2/s window: the next reply is not held back by this one.
    await sleep(600);
  }
  const rows = PATHS.map((p) => ({
    ...p,
    p50: run.percentile(ms[p.k], 50) ?? NaN,
    p90: run.percentile(ms[p.k], 90) ?? NaN,
    max: Math.max(...ms[p.k]),
  }));
  run.writeResult("latency.md", [
    "# Conversation latency (`npm run bench:latency`)",
    "",
    `Generated by \`bench/pipeline.ts latency\` (how it measures: bench/README.md), ${SAMPLES} samples per path after ${WARMUP} of warm-up.`,
    "",
    `- ${run.machine()}`,
    "",
    ...run.table(
      ["path", "p50 ms:", "p90 ms:", "max ms:", "target p50 ms:"],
      rows.map((r) => [`(${r.k}) ${r.label}`, r.p50, r.p90, r.max, `≤ ${r.target}`]),
    ),
  ]);
  const missed = rows.filter((r) => r.p50 > r.target);
  if (missed.length > 0) fail(`missed: ${missed.map((r) => `(${r.k}) p50 ${r.p50} ms`).join(", ")}`);
}

run.runMain(`bench-${MODE}`, MODE === "drain" ? drain : latency, cleanup, (MODE === "drain" ? 15 : 30) * 60_000);
