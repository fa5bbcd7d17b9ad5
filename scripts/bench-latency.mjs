#!/usr/bin/env node
// `npm run bench:latency`: how long a conversation waits on us, on a local `wrangler dev`.
//
// Three paths, each measured one message at a time (nothing queues behind anything), with p50 and p90:
//   (i) inbound: the operator's webhook POST of an inbound message → the customer's webhook receives
//       its `message.received` event (a chatbot's reply starts here);
//   (s) send: POST /api/v1/messages sent → the operator's API receives the call (it usually starts
//       before the 201 arrives);
//   (o) operator status: the operator's webhook POST of a `delivered` report → the customer's webhook
//       receives its `message.status` event (status events may wait up to 1 s to be packed).
// Targets (docs/customers/webhooks.md, "How soon events arrive"): (i) p50 ≤ 300 ms, (s) p50 ≤ 60 ms,
// (o) p50 ≤ 1,300 ms; the run fails when one is missed. Production adds the platform's own queue
// delivery (Cloudflare Queues) to (i) and (o), which local workerd does not have.
//
// Loopback only, ports 8910–8913: the Worker on 8910 (inspector 8911), a fake operator on 8912, the
// customer's receiver on 8913. Bounded: LATENCY_SAMPLES (30) per path, 10 s per sample at most.
// Writes bench/latency.md.
import { createServer } from "node:http";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { callApi } from "./lib/http-call.mjs";
import { operatorEnvelope, operatorSignature } from "./lib/operator-envelope.mjs";
import { LOCAL_SECRETS, LocalWorker, UNATTENDED_ENV, onStop, prepareState } from "./lib/local-worker.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const OUT = join(ROOT, "bench", "latency.md");
const WORKER_PORT = 8910;
const INSPECTOR_PORT = 8911;
const OPERATOR_PORT = 8912;
const RECEIVER_PORT = 8913;
const SAMPLES = Math.min(200, Number(process.env.LATENCY_SAMPLES ?? 30));
const SAMPLE_LIMIT_MS = 10_000;
const API_VERSION = "v26.0";
const TARGETS = { i: 300, s: 60, o: 1_300 };

const say = (/** @type {string} */ line) => process.stdout.write(`[bench-latency] ${line}\n`);
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** @param {number[]} xs @param {number} p */
const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

/** Arrival times of what a server got, by key; `waitFor(key)` resolves with the time it arrived. */
function arrivals() {
  /** @type {Map<string, number>} */
  const seen = new Map();
  /** @type {Map<string, (at: number) => void>} */
  const waiting = new Map();
  return {
    /** @param {string} key @param {number} at */
    arrived(key, at) {
      if (seen.has(key)) return;
      seen.set(key, at);
      waiting.get(key)?.(at);
      waiting.delete(key);
    },
    /** @param {string} key @returns {Promise<number>} */
    waitFor(key) {
      const at = seen.get(key);
      if (at !== undefined) return Promise.resolve(at);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(key);
          reject(new Error(`${key} did not arrive within ${SAMPLE_LIMIT_MS / 1000} s`));
        }, SAMPLE_LIMIT_MS);
        waiting.set(key, (t) => {
          clearTimeout(timer);
          resolve(t);
        });
      });
    },
  };
}

/**
 * A local HTTP server on loopback: `handle(method, path, body)` returns [status, json].
 * @param {number} port @param {(method: string, path: string, body: string, at: number) => [number, unknown]} handle
 */
function serve(port, handle) {
  const server = createServer((req, res) => {
    const at = Date.now();
    /** @type {Buffer[]} */
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const [status, body] = handle(req.method ?? "GET", req.url ?? "/", Buffer.concat(chunks).toString("utf8"), at);
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(body === null ? "" : JSON.stringify(body));
    });
  });
  return new Promise((resolve) =>
    server.listen(port, "127.0.0.1", () => resolve(() => new Promise((r) => server.close(() => r(undefined))))),
  );
}

/** @param {import("./lib/http-call.mjs").ApiAnswer} res @param {number} status @param {string} what */
function expectStatus(res, status, what) {
  if (res.status !== status) throw new Error(`${what} answered ${res.status}: ${res.text.slice(0, 300)}`);
  return res.json;
}

/** The operator's webhook envelope for one number. @param {string} phoneNumberId @param {Record<string, unknown>} value */
const operatorPayload = (phoneNumberId, value) => operatorEnvelope("WABA-LATENCY", phoneNumberId, value);

/** POSTs an operator webhook, signed, and returns when it was sent. @param {string} baseUrl @param {unknown} payload */
async function postOperator(baseUrl, payload) {
  const raw = JSON.stringify(payload);
  const signature = operatorSignature(LOCAL_SECRETS.UPSTREAM_APP_SECRET, raw);
  const at = Date.now();
  const res = await fetch(`${baseUrl}/upstream/cloud/webhook`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Hub-Signature-256": signature },
    body: raw,
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`the operator's webhook answered ${res.status}`);
  return at;
}

async function main() {
  const calls = arrivals();
  const events = arrivals();
  const closeOperator = await serve(OPERATOR_PORT, (method, path, body, at) => {
    const parts = path.split("?")[0].split("/").filter(Boolean);
    if (method === "GET" && parts.length === 2) return [200, { id: parts[1], display_phone_number: "+1 555 0100" }];
    if (method !== "POST" || parts[2] !== "messages") return [404, { error: { code: 100, message: "unknown" } }];
    const call = JSON.parse(body);
    calls.arrived(call.biz_opaque_callback_data, at);
    return [
      200,
      {
        messaging_product: "whatsapp",
        contacts: [{ input: call.to, wa_id: String(call.to) }],
        messages: [{ id: `wamid.${call.biz_opaque_callback_data}` }],
      },
    ];
  });
  const closeReceiver = await serve(RECEIVER_PORT, (_method, _path, body, at) => {
    const e = JSON.parse(body);
    if (e.type === "message.received") events.arrived(`received:${e.data.upstreamMessageId}`, at);
    if (e.type === "message.status" && e.data.deliveredAt) events.arrived(`delivered:${e.data.messageId}`, at);
    return [204, null];
  });

  const state = mkdtempSync(join(os.tmpdir(), "bench-latency-"));
  const worker = new LocalWorker({
    port: WORKER_PORT,
    inspectorPort: INSPECTOR_PORT,
    state,
    envFile: await prepareState(state),
    vars: { UPSTREAM_CLOUD_API_BASE_URL: `http://127.0.0.1:${OPERATOR_PORT}`, UPSTREAM_CLOUD_API_VERSION: API_VERSION },
    env: UNATTENDED_ENV,
    logLevel: "warn",
  });
  const stop = async () => {
    await worker.stop();
    rmSync(state, { recursive: true, force: true });
    await closeOperator();
    await closeReceiver();
  };
  onStop(stop);
  say(`wrangler dev on 127.0.0.1:${WORKER_PORT}; operator on ${OPERATOR_PORT}; receiver on ${RECEIVER_PORT}`);
  try {
    await worker.waitUntilReady();
    const base = worker.baseUrl;
    const admin = LOCAL_SECRETS.ADMIN_TOKEN;
    const ws = expectStatus(
      await callApi(base, "POST", "/admin/v1/workspaces", admin, { name: "Latency bench", plan: "scale" }),
      201,
      "creating a workspace",
    );
    const key = expectStatus(
      await callApi(base, "POST", `/admin/v1/workspaces/${ws.id}/api-keys`, admin, { name: "latency" }),
      201,
      "creating a key",
    ).key;
    const phoneNumberId = `${Date.now()}`;
    const number = expectStatus(
      await callApi(base, "POST", `/admin/v1/workspaces/${ws.id}/channel-numbers`, admin, {
        displayPhoneNumber: "+15550100000",
        upstream: { type: "cloud", phoneNumberId, accessToken: "bench-latency-token" },
      }),
      201,
      "connecting a number",
    );
    expectStatus(
      await callApi(base, "POST", "/api/v1/webhooks", key, {
        channelNumberId: number.id,
        url: `http://127.0.0.1:${RECEIVER_PORT}/hook`,
      }),
      201,
      "creating a webhook",
    );

    /** @type {{ i: number[], s: number[], o: number[] }} */
    const ms = { i: [], s: [], o: [] };
    const warmup = 3;
    for (let n = 0; n < SAMPLES + warmup; n++) {
      const record = n >= warmup;
      // (i) an inbound message from a user.
      const wamid = `wamid.IN.${n}.${Date.now()}`;
      const from = `55119${String(1000000 + n).padStart(7, "0")}`;
      const posted = await postOperator(
        base,
        operatorPayload(phoneNumberId, {
          contacts: [{ wa_id: from, profile: { name: "Ana" } }],
          messages: [
            { from, id: wamid, timestamp: String(Math.floor(Date.now() / 1000)), type: "text", text: { body: "hi" } },
          ],
        }),
      );
      const received = await events.waitFor(`received:${wamid}`);
      if (record) ms.i.push(received - posted);

      // (s) the reply: accepted → the operator's call.
      const sentAt = Date.now();
      const res = await fetch(`${base}/api/v1/messages`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${key}`,
          "Content-Type": "application/json",
          "Idempotency-Key": crypto.randomUUID(),
        },
        body: JSON.stringify({ channelNumberId: number.id, to: from, text: { body: `reply ${n}` } }),
      });
      const text = await res.text();
      if (res.status !== 201) throw new Error(`a send answered ${res.status}: ${text.slice(0, 300)}`);
      const { jobId } = JSON.parse(text);
      const called = await calls.waitFor(jobId);
      if (record) ms.s.push(called - sentAt);

      // (o) the operator reports it delivered.
      await sleep(100);
      const reported = await postOperator(
        base,
        operatorPayload(phoneNumberId, {
          statuses: [
            {
              id: `wamid.${jobId}`,
              status: "delivered",
              timestamp: String(Math.floor(Date.now() / 1000)),
              recipient_id: from,
              biz_opaque_callback_data: jobId,
            },
          ],
        }),
      );
      const delivered = await events.waitFor(`delivered:${jobId}`);
      if (record) ms.o.push(delivered - reported);
      // The number's 2/s window: the next reply is not held back by this one.
      await sleep(600);
    }
    const rows = /** @type {const} */ ([
      ["i", "inbound message: operator webhook → customer webhook"],
      ["s", "send: POST /messages → operator call"],
      ["o", "operator status (delivered) → customer webhook"],
    ]).map(([k, label]) => ({
      k,
      label,
      p50: percentile(ms[k], 50),
      p90: percentile(ms[k], 90),
      max: Math.max(...ms[k]),
      target: TARGETS[k],
    }));
    for (const r of rows) say(`(${r.k}) ${r.label}: p50 ${r.p50} ms, p90 ${r.p90} ms (target p50 ≤ ${r.target} ms)`);
    write(rows);
    const missed = rows.filter((r) => r.p50 > r.target);
    if (missed.length > 0) throw new Error(`missed: ${missed.map((r) => `(${r.k}) p50 ${r.p50} ms`).join(", ")}`);
  } finally {
    await stop();
  }
}

/** @param {{ k: string, label: string, p50: number, p90: number, max: number, target: number }[]} rows */
function write(rows) {
  const cpu = os.cpus();
  const lines = [
    "# Conversation latency (`npm run bench:latency`)",
    "",
    "Generated by `scripts/bench-latency.mjs` on a local `wrangler dev` (workerd, in-memory local queues). A fake operator",
    "and the customer's webhook receiver on loopback record when each request arrives; each path is measured one message",
    `at a time, ${SAMPLES} samples after 3 of warm-up.`,
    "",
    `- Date: ${new Date().toISOString()}; ${cpu[0]?.model ?? "CPU"} × ${cpu.length} logical cores; Node ${process.version}`,
    "",
    "| path | p50 ms | p90 ms | max ms | target p50 ms |",
    "| --- | ---: | ---: | ---: | ---: |",
    ...rows.map((r) => `| (${r.k}) ${r.label} | ${r.p50} | ${r.p90} | ${r.max} | ≤ ${r.target} |`),
    "",
    "Reading it: an inbound message is published to the webhook queue as it is recorded, and the webhook consumer takes",
    "a batch without waiting for it to fill (`max_batch_timeout = 0`). A status report waits up to 1 s so that the changes",
    "of that second go out packed in one queue message (`PUBLISH_DELAY_MS`). Production adds Cloudflare Queues' own",
    "delivery to the consumer (docs/customers/webhooks.md).",
    "",
  ];
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, lines.join("\n"));
  say(`wrote ${OUT}`);
}

main().catch((err) => {
  process.stderr.write(`[bench-latency] ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
