#!/usr/bin/env node
// `npm run bench`, drain part: does one number keep up with its own acceptance
// rate (2 sends/s) when the operator is slow? A number object starts its next
// call without waiting for the previous answer (docs/architecture.md, "The
// outbox and the drain"); this measures it against a real local runtime.
//
// A fake operator on loopback answers each call after a fixed latency and
// records when each call arrives. The same run measures three cases on a fresh
// live number each, every one with sends accepted as fast as the number's
// 2/s window allows:
//   (f) baseline: the operator answers in 10 ms, every send to a new recipient;
//   (s) the operator answers in 700 ms, every send to a new recipient;
//   (c) the operator answers in 700 ms, every send to the same recipient: one
//       conversation is called one message at a time, by design (order per
//       recipient), so it cannot exceed 1 ÷ 0.7 s;
//   (v) the operator answers in 4 s, every send to a new recipient: at most 6
//       calls of a number wait on the operator (the runtime's limit in
//       production), so it cannot exceed 6 ÷ 4 s.
// The figure is the operator's call rate while the backlog lasts, as a ratio to
// (f), beside the most calls that waited on the operator at once. Writes
// bench/drain.md. Loopback only: Worker on 127.0.0.1:8880, operator on
// 127.0.0.1:8882; bounded (60 sends per case, 120 s per case at most).
import { createServer } from "node:http";
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { callApi } from "./lib/http-call.mjs";
import { onStop, startLocalWorker } from "./lib/local-worker.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const OUT = join(ROOT, "bench", "drain.md");
const WORKER_PORT = 8880;
const OPERATOR_PORT = 8882;
const SENDS = Number(process.env.BENCH_DRAIN_SENDS ?? 60);
const CASE_LIMIT_MS = 120_000;
const API_VERSION = "v26.0";
// The operator's burst per recipient (src/durable-objects/channel-number/pair-pace.ts): case (c) stays under it,
// so that it shows the conversation's order and not the pair rate.
const PAIR_BURST = 45;

/** @typedef {{ at: number, to: string, jobId: string }} Call */
/** A number at the fake operator. @typedef {{ latencyMs: number, calls: Call[], waiting: number, maxWaiting: number }} OperatorNumber */
/** @typedef {{ numbers: Map<string, OperatorNumber>, close: () => Promise<unknown> }} Operator */
/**
 * @typedef {{ label: string, latencyMs: number, sends: number, acceptRate: number, callRate: number, maxInOneSecond: number,
 *   maxWaiting: number, waitP50: number, waitMax: number, lastWait: number }} CaseResult
 */

const say = (/** @type {string} */ line) => process.stdout.write(`[bench-drain] ${line}\n`);
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** The fake operator: per phone number id, a latency and the arrival time of every send. @returns {Promise<Operator>} */
function startOperator() {
  /** @type {Map<string, OperatorNumber>} */
  const numbers = new Map();
  const server = createServer((req, res) => {
    // The call's arrival: its headers, before the body is read.
    const arrivedAt = Date.now();
    /** @type {Buffer[]} */
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", `http://${req.headers.host}`);
      const parts = url.pathname.split("/").filter(Boolean);
      const phoneNumberId = parts[1] ?? "";
      /** @param {number} status @param {unknown} body */
      const reply = (status, body) => {
        res.writeHead(status, { "Content-Type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (req.method === "GET" && parts.length === 2)
        return reply(200, { id: phoneNumberId, display_phone_number: "+1 555 0100" });
      const number = numbers.get(phoneNumberId);
      if (req.method !== "POST" || parts[2] !== "messages" || !number)
        return reply(404, { error: { code: 100, message: "unknown" } });
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      number.calls.push({ at: arrivedAt, to: body.to, jobId: body.biz_opaque_callback_data });
      number.waiting += 1;
      number.maxWaiting = Math.max(number.maxWaiting, number.waiting);
      setTimeout(() => {
        number.waiting -= 1;
        const waId = String(body.to).replace(/^\+/, "");
        reply(200, {
          messaging_product: "whatsapp",
          contacts: [{ input: body.to, wa_id: waId }],
          messages: [{ id: `wamid.${number.calls.length}.${phoneNumberId}` }],
        });
      }, number.latencyMs);
    });
  });
  return new Promise((resolve) =>
    server.listen(OPERATOR_PORT, "127.0.0.1", () =>
      resolve({ numbers, close: () => new Promise((r) => server.close(() => r(undefined))) }),
    ),
  );
}

/** @param {import("./lib/http-call.mjs").ApiAnswer} res @param {number} status @param {string} what */
async function expectStatus(res, status, what) {
  if (res.status !== status) throw new Error(`${what} answered ${res.status}: ${res.text.slice(0, 300)}`);
  return res.json;
}

/**
 * Sends `count` messages as fast as the number accepts them; a 429 is retried with the same key after its Retry-After.
 * @param {string} baseUrl @param {string} apiKey @param {string} numberId @param {(i: number) => string} recipientOf @param {number} count
 */
async function sendAll(baseUrl, apiKey, numberId, recipientOf, count) {
  /** @type {Array<{ at: number, jobId: string }>} */
  const accepted = [];
  for (let i = 0; i < count; i++) {
    const key = `drain-${numberId}-${i}`;
    for (;;) {
      const res = await fetch(`${baseUrl}/api/v1/messages`, {
        method: "POST",
        headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json", "Idempotency-Key": key },
        body: JSON.stringify({
          channelNumberId: numberId,
          to: recipientOf(i),
          text: { body: `drain bench message ${i}` },
        }),
      });
      const text = await res.text();
      if (res.status === 201) {
        accepted.push({ at: Date.now(), jobId: JSON.parse(text).jobId });
        break;
      }
      if (res.status !== 429) throw new Error(`send ${i} answered ${res.status}: ${text.slice(0, 300)}`);
      // Retry-After is whole seconds (rounded up); poll a little finer to keep the number's window full.
      await sleep(Math.min(Number(res.headers.get("retry-after")) * 1000 || 250, 250));
    }
  }
  return accepted;
}

/** Events per second from the first to the last of `times`. @param {number[]} times */
function rate(times) {
  if (times.length < 2) return 0;
  return (times.length - 1) / (((times.at(-1) ?? 0) - (times[0] ?? 0)) / 1000);
}

/** Largest number of calls that started within any 1,000 ms. @param {number[]} times (ascending) */
function maxInOneSecond(times) {
  let max = 0;
  /** @param {number} n */
  const at = (n) => /** @type {number} */ (times[n]);
  for (let i = 0, j = 0; i < times.length; i++) {
    while (at(i) - at(j) >= 1000) j++;
    max = Math.max(max, i - j + 1);
  }
  return max;
}

/** @param {number[]} xs @param {number} p */
const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

/**
 * @param {{ baseUrl: string, adminToken: string, workspaceId: string, apiKey: string, operator: Operator, next: number }} ctx
 * @param {string} label @param {number} latencyMs @param {(i: number) => string} recipientOf
 * @returns {Promise<CaseResult>}
 */
async function runCase(ctx, label, latencyMs, recipientOf, count = SENDS) {
  const phoneNumberId = `${Date.now()}${ctx.next}`;
  /** @type {OperatorNumber} */
  const number = { latencyMs, calls: [], waiting: 0, maxWaiting: 0 };
  ctx.operator.numbers.set(phoneNumberId, number);
  const created = await expectStatus(
    await callApi(ctx.baseUrl, "POST", `/admin/v1/workspaces/${ctx.workspaceId}/channel-numbers`, ctx.adminToken, {
      displayPhoneNumber: `+1555${String(ctx.next++).padStart(7, "0")}`,
      upstream: { type: "cloud", phoneNumberId, accessToken: "bench-drain-token" },
    }),
    201,
    "connecting a number",
  );
  const started = Date.now();
  const accepted = await sendAll(ctx.baseUrl, ctx.apiKey, created.id, recipientOf, count);
  while (number.calls.length < accepted.length && Date.now() - started < CASE_LIMIT_MS) await sleep(100);
  if (number.calls.length < accepted.length)
    throw new Error(
      `(${label}): ${number.calls.length} of ${accepted.length} sends reached the operator within ${CASE_LIMIT_MS / 1000} s`,
    );
  const jobIds = new Set(number.calls.map((c) => c.jobId));
  if (jobIds.size !== number.calls.length || number.calls.length !== accepted.length)
    throw new Error(`(${label}): ${number.calls.length} calls for ${accepted.length} messages`);

  const callTimes = number.calls.map((c) => c.at);
  if (process.env.BENCH_DRAIN_DEBUG)
    say(
      `(${label}) call gaps ms: ${callTimes
        .slice(1)
        .map((t, i) => t - (callTimes[i] ?? t))
        .join(" ")}`,
    );
  const acceptTimes = accepted.map((a) => a.at);
  const callAtByJob = new Map(number.calls.map((c) => [c.jobId, c.at]));
  const waits = accepted.map((a) => (callAtByJob.get(a.jobId) ?? NaN) - a.at);
  return {
    label,
    latencyMs,
    sends: accepted.length,
    acceptRate: rate(acceptTimes),
    callRate: rate(callTimes),
    maxInOneSecond: maxInOneSecond(callTimes),
    maxWaiting: number.maxWaiting,
    waitP50: percentile(waits, 50),
    waitMax: Math.max(...waits),
    lastWait: waits.at(-1) ?? NaN,
  };
}

async function main() {
  const operator = await startOperator();
  say(`fake operator on 127.0.0.1:${OPERATOR_PORT}; starting wrangler dev on 127.0.0.1:${WORKER_PORT}`);
  const worker = await startLocalWorker(WORKER_PORT, {
    UPSTREAM_CLOUD_API_BASE_URL: `http://127.0.0.1:${OPERATOR_PORT}`,
    UPSTREAM_CLOUD_API_VERSION: API_VERSION,
  });
  // On a signal the launcher runs this (the Worker and its temporary state), then exits 128 + n.
  onStop(() => worker.stop());
  try {
    const ws = await expectStatus(
      await callApi(worker.baseUrl, "POST", "/admin/v1/workspaces", worker.adminToken, {
        name: "Drain bench",
        plan: "scale",
      }),
      201,
      "creating a workspace",
    );
    const key = await expectStatus(
      await callApi(worker.baseUrl, "POST", `/admin/v1/workspaces/${ws.id}/api-keys`, worker.adminToken, {
        name: "drain",
      }),
      201,
      "creating a key",
    );
    const ctx = {
      baseUrl: worker.baseUrl,
      adminToken: worker.adminToken,
      workspaceId: ws.id,
      apiKey: key.key,
      operator,
      next: 1,
    };
    /** @type {CaseResult[]} */
    const results = [];
    results.push(await runCase(ctx, "f", 10, (i) => `5511970${String(i).padStart(6, "0")}`));
    say(`(f) ${results[0].callRate.toFixed(2)} calls/s`);
    results.push(await runCase(ctx, "s", 700, (i) => `5511971${String(i).padStart(6, "0")}`));
    say(`(s) ${results[1].callRate.toFixed(2)} calls/s`);
    results.push(await runCase(ctx, "c", 700, () => "5511972000000", Math.min(SENDS, PAIR_BURST - 5)));
    say(`(c) ${results[2].callRate.toFixed(2)} calls/s`);
    results.push(await runCase(ctx, "v", 4_000, (i) => `5511973${String(i).padStart(6, "0")}`));
    say(`(v) ${results[3].callRate.toFixed(2)} calls/s, at most ${results[3].maxWaiting} waiting`);
    write(results);
    const [f, s] = /** @type {[CaseResult, CaseResult]} */ (results);
    if (results.some((r) => r.maxInOneSecond > 2)) throw new Error("a number made more than 2 calls within 1 s");
    if (results.some((r) => r.maxWaiting > 6))
      throw new Error("more than 6 calls of a number waited on the operator at once");
    if (s.callRate < 0.95 * f.callRate)
      throw new Error(
        `(s) drained at ${(s.callRate / f.callRate).toFixed(2)}× the baseline: slow answers hold the drain back`,
      );
  } finally {
    await worker.stop();
    await operator.close();
  }
}

/** @param {CaseResult[]} results */
function write(results) {
  const [f] = /** @type {[CaseResult]} */ (results);
  const f2 = (/** @type {number} */ x) => x.toFixed(2);
  const ms = (/** @type {number} */ x) => `${Math.round(x)}`;
  /** @type {Record<string, string>} */
  const describe = {
    f: "operator answers in 10 ms, a new recipient per send (baseline)",
    s: "operator answers in 700 ms, a new recipient per send",
    c: "operator answers in 700 ms, one recipient for all sends",
    v: "operator answers in 4 s, a new recipient per send",
  };
  const cpu = os.cpus();
  const lines = [
    "# Drain under a slow operator (`npm run bench`)",
    "",
    "Generated by `scripts/bench-drain.mjs`. One workspace, a fresh Cloud API number per case; a fake operator on loopback",
    "answers after a fixed latency and records the arrival of each call (its headers). Sends are accepted as fast as the",
    "number's 2/s window allows (a 429 is retried with the same key). The call rate runs from the first call to the last.",
    "",
    `- Date: ${new Date().toISOString()}; ${cpu[0]?.model ?? "CPU"} × ${cpu.length} logical cores; Node ${process.version}; wrangler dev (local workerd)`,
    "",
    "| case | operator | sends | accepted/s | operator calls/s | ÷ (f) | max calls in 1 s | max waiting at once | accepted → call p50 ms | max ms | last send's wait ms |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...results.map(
      (r) =>
        `| (${r.label}) | ${describe[r.label]} | ${r.sends} | ${f2(r.acceptRate)} | ${f2(r.callRate)} | ${f2(r.callRate / f.callRate)} | ${r.maxInOneSecond} | ${r.maxWaiting} | ${ms(r.waitP50)} | ${ms(r.waitMax)} | ${ms(r.lastWait)} |`,
    ),
    "",
    "Reading it:",
    "",
    "- (s) ÷ (f) near 1.00: a 700 ms operator does not slow the number down, because calls overlap (the next starts at the",
    "  pace, not after the previous answer). The number's pace is at most 2 call starts per 1,010 ms (1.98/s), so a number",
    "  accepting a full 2/s for a long time builds a backlog of about 1% of its sends; the wait column shows whether it grew.",
    "- (c) is bounded by one conversation's order: the next message to the same recipient is called only after the",
    "  operator answered the previous one, so at most 1 ÷ 0.7 s ≈ 1.43 calls/s. Messages to other recipients are not held.",
    `  (c) sends ${PAIR_BURST - 5}, under the operator's burst per recipient (${PAIR_BURST}): past it, the pair pace (one message`,
    "  per 6 s to one user) sets the rate instead.",
    "- (v): at most 6 calls of a number wait on the operator at once (`MAX_CALLS_IN_FLIGHT`; in production the runtime",
    "  queues a seventh request, which would then leave outside the pace), so a 4 s operator gets at most 6 ÷ 4 = 1.5",
    "  calls/s, and less: a drain session that ends (every 10 s) waits for its calls' answers before the next one starts.",
    "  Local workerd does not enforce the runtime's limit: the cap measured here is the drain's own.",
    "- Max calls in 1 s is measured at the operator's side: never above 2.",
    "",
  ];
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, lines.join("\n"));
  say(`wrote ${OUT}`);
}

main().catch((err) => {
  process.stderr.write(`[bench-drain] ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
