// `npm run bench:latency`: how long a conversation waits on us, through a local `wrangler dev` with the fake operator
// (lib/operator.ts), one message at a time (nothing queues behind anything), p50 and p90 of three paths:
//   (i) inbound: the operator's webhook POST of an inbound message → the customer's webhook receives its
//       `message.received` event (a chatbot's reply starts here);
//   (s) send: POST /api/v1/messages sent → the operator's API receives the call (it usually starts before the 201);
//   (o) operator status: the operator's webhook POST of a `delivered` report → the customer's webhook receives its
//       `message.status` event (status events may wait up to 1 s to be packed).
// Targets (docs/customers/webhooks.md, "How soon events arrive"): (i) p50 ≤ 300 ms, (s) p50 ≤ 60 ms, (o) p50 ≤
// 1,300 ms; the run fails when one is missed. --samples N (LATENCY_SAMPLES, 30; at most 200), --port P (LATENCY_PORT,
// 8910): the Worker on P, its inspector P+1, the fake operator P+2, the receiver P+3, loopback only. 10 s per sample
// at most. Writes bench/latency.md.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { onStop } from "../scripts/lib/local-worker.mjs";
import { startOperator, type Operator } from "./lib/operator.ts";
import { startReceiver, type Receiver } from "./lib/receiver.ts";
import * as run from "./lib/run.ts";
import { startRuntime, type Runtime } from "./lib/runtime.ts";

const { fail, sleep } = run;
const opts = run.options({
  samples: { env: "LATENCY_SAMPLES", fallback: 30 },
  port: { env: "LATENCY_PORT", fallback: 8910 },
});
const VERSION = "v26.0";
const say = run.sayAs("bench-latency");
const state = mkdtempSync(join(os.tmpdir(), "bench-latency-"));
let operator: Operator | undefined;
let receiver: Receiver | undefined;
let runtime: Runtime | undefined;
const cleanup = async () => {
  for (const part of [runtime, operator, receiver]) await part?.stop();
  rmSync(state, { recursive: true, force: true });
};
onStop(cleanup);

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
  const op = (operator = await startOperator({
    ...{ port: opts.port + 2, version: VERSION, faults: false, latencyMs: [0, 0] },
    onCall: (c) => c.jobId && calls.arrived(c.jobId, Math.round(c.at)),
  }));
  say(`fake operator on 127.0.0.1:${opts.port + 2}; starting wrangler dev on 127.0.0.1:${opts.port}`);
  const vars = {
    UPSTREAM_CLOUD_API_BASE_URL: `http://127.0.0.1:${opts.port + 2}`,
    UPSTREAM_CLOUD_API_VERSION: VERSION,
  };
  runtime = await startRuntime({ port: opts.port, state, logFile: join(state, "wrangler.log"), vars });
  const base = runtime.baseUrl;
  const ws = await run.workspace(base, "latency bench");
  const phoneNumberId = `${Date.now()}`;
  op.addNumber(phoneNumberId, "bench-latency-token");
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
    `Generated by \`bench/latency.ts\` (how it measures: bench/README.md), ${SAMPLES} samples per path after ${WARMUP} of warm-up.`,
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

run.runMain("bench-latency", latency, cleanup, 30 * 60_000);
