#!/usr/bin/env node
// `npm run soak`: a fault and soak run against the real local runtime (`wrangler dev`).
//
// It seeds a few workspaces with live numbers that send through a fake operator on loopback
// (slow, failing, dropping connections, reporting statuses by signed webhook), a webhook per number
// pointing at a customer receiver that refuses ~30% of deliveries, then runs a mixed load (sends,
// replays, conflicting replays, reads, lists, inbound messages) for --duration seconds while it
// SIGKILLs the runtime's whole process group at random moments and restarts it on the same state,
// and, between those, restarts the Durable Objects alone (DEV_OBJECT_RESTARTS: the Worker process
// and its in-memory queues stay up), as a deploy restarts them.
// Then it stops the load, waits (bounded) until every accepted message is terminal and every
// event delivered, checks the invariants, prints the figures, writes a JSON summary, and exits 1
// when an invariant failed (the failing items are listed). The invariants are checked on what a
// customer and the operator see (soak-checks.mjs): the records through the API, the fake
// operator's calls, the customer receiver's deliveries; nothing reads the objects' storage.
//
// An event tap (DEV_EVENT_TAP_URL) tells it which events the queue accepted, so that an event the
// engine never published (must be none) is told from one the in-memory queue lost at a kill.
// Options (or environment): --duration S (SOAK_DURATION_S, 180), --kills N (SOAK_KILLS, 3),
// --restarts N (SOAK_RESTARTS, 3: restarts of the objects alone),
// --seed N (SOAK_SEED, random), --workspaces N (4), --numbers N per workspace (3),
// --settle S (SOAK_SETTLE_S, 360), --port P (SOAK_PORT, 8830: uses P…P+3), --summary FILE.
// Loopback only. Everything it starts (wrangler dev's process group, two servers, a thread) it
// stops, also on error and on Ctrl+C. wrangler's output: .wrangler/soak/wrangler.log.
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes, randomInt } from "node:crypto";
import { parseArgs } from "node:util";
import { callApi } from "./lib/http-call.mjs";
import { LOCAL_SECRETS, onStop } from "./lib/local-worker.mjs";
import { seededRandom } from "./lib/soak-random.mjs";
import { startOperator } from "./lib/soak-operator.mjs";
import { startReceiver } from "./lib/soak-receiver.mjs";
import { createOperatorWebhooks } from "./lib/soak-operator-webhooks.mjs";
import { createRuntime, KILL_MARGIN_MS } from "./lib/soak-runtime.mjs";
import { createLoad, wasAccepted } from "./lib/soak-load.mjs";
import {
  checkClientErrors,
  checkConversationOrder,
  checkEvents,
  checkNumberRate,
  checkOperatorCalls,
  checkTerminal,
  queuedTimes,
} from "./lib/soak-checks.mjs";
import { mapLimit } from "./lib/map-limit.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const WORK_DIR = join(ROOT, ".wrangler", "soak");
const API_VERSION = "v26.0"; // wrangler.toml UPSTREAM_CLOUD_API_VERSION
const say = (/** @type {string} */ msg) => console.log(`[soak] ${msg}`);
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

const { values: args } = parseArgs({
  options: {
    duration: { type: "string" },
    kills: { type: "string" },
    restarts: { type: "string" },
    seed: { type: "string" },
    workspaces: { type: "string" },
    numbers: { type: "string" },
    settle: { type: "string" },
    port: { type: "string" },
    summary: { type: "string" },
  },
});
/** @param {string | undefined} v @param {number} fallback */
const num = (v, fallback) => (v === undefined || v === "" ? fallback : Number(v));
const OPTIONS = {
  durationS: num(args.duration ?? process.env.SOAK_DURATION_S, 180),
  kills: num(args.kills ?? process.env.SOAK_KILLS, 3),
  restarts: num(args.restarts ?? process.env.SOAK_RESTARTS, 3),
  seed: num(args.seed ?? process.env.SOAK_SEED, randomInt(1, 2 ** 31)),
  workspaces: num(args.workspaces, 4),
  numbersPerWorkspace: num(args.numbers, 3),
  settleS: num(args.settle ?? process.env.SOAK_SETTLE_S, 360),
  port: num(args.port ?? process.env.SOAK_PORT, 8830),
  summary: args.summary ?? join(WORK_DIR, "summary.json"),
};
for (const [k, v] of Object.entries(OPTIONS))
  if (k !== "summary" && !(typeof v === "number" && Number.isInteger(v) && v >= 0))
    throw new Error(`--${k}: a whole number, got ${v}`);
if (OPTIONS.durationS < 30) throw new Error("--duration: at least 30 s");

/** The Worker's vars for this run: the fake operator, and the short delays that fit a soak (see README). */
const WORKER_VARS = (/** @type {number} */ operatorPort, /** @type {number} */ receiverPort) => ({
  UPSTREAM_CLOUD_API_BASE_URL: `http://127.0.0.1:${operatorPort}`,
  // Events are not stored (engine v2): local Queues are in memory, so a kill loses the events they
  // hold, and nothing publishes them again (production queues are durable). The event check
  // counts those apart: see lossWindow in soak-checks.mjs.
  // The receiver refuses 30%: retries within seconds instead of the documented 5 min … 10 h.
  WEBHOOK_RETRY_DELAYS_SECONDS: "0,1,2,3,5,5,5,5",
  // A call whose answer a kill cut off while the operator refused it ("not processed": no status
  // webhook will ever come) fails with upstream_outcome_unknown after 60 s instead of 7 days.
  UNKNOWN_OUTCOME_WINDOW_MS: "60000",
  // Each operator call carries the time its number object started it: the pace invariant is checked on it.
  UPSTREAM_STAMP_CALLS: "true",
  // Restarts of the objects alone (POST /admin/v1/dev/object-restarts), and the event tap (the receiver's /tap).
  DEV_OBJECT_RESTARTS: "true",
  DEV_EVENT_TAP_URL: `http://127.0.0.1:${receiverPort}/tap`,
});

// ---------------------------------------------------------------- what the run started

/** @type {Array<() => unknown>} */
const cleanups = [];
let cleaning = null;
const cleanup = () =>
  (cleaning ??= (async () => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        console.error(`[soak] cleanup: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  })());
// On a signal, the launcher runs this, then stops the Worker's process group and exits 128 + n.
onStop((signal) => {
  console.error(`[soak] ${signal}: stopping what the soak started`);
  return cleanup();
});

// ---------------------------------------------------------------- API helpers

/** A read for the checks: retried through the read limit, bounded (then `status: null`). */
/**
 * @param {string} baseUrl @param {string} path @param {string} key
 * @returns {Promise<import("./lib/http-call.mjs").ApiAnswer | { status: null, json: null, text: string }>}
 */
async function read(baseUrl, path, key, limitMs = 10_000) {
  const started = Date.now();
  while (true) {
    try {
      const res = await callApi(baseUrl, "GET", path, key);
      if (res.status === 429) {
        await sleep(1_000);
      } else if (res.status < 500) return res;
    } catch {
      // restarting
    }
    if (Date.now() - started > limitMs) return { status: null, json: null, text: "" };
    await sleep(500);
  }
}

/** @param {string} baseUrl @param {string} path @param {unknown} body */
async function admin(baseUrl, path, body) {
  const res = await callApi(baseUrl, "POST", `/admin/v1${path}`, LOCAL_SECRETS.ADMIN_TOKEN, body);
  if (res.status !== 201) throw new Error(`POST /admin/v1${path} answered ${res.status}: ${res.text.slice(0, 300)}`);
  return res.json;
}

// ---------------------------------------------------------------- the run

async function main() {
  const runStarted = Date.now();
  const runId = randomBytes(3).toString("hex");
  const random = seededRandom(OPTIONS.seed);
  const [workerPort, inspectorPort, operatorPort, receiverPort] = [0, 1, 2, 3].map((i) => OPTIONS.port + i);
  mkdirSync(WORK_DIR, { recursive: true });
  say(
    `run ${runId}, seed ${OPTIONS.seed}: ${OPTIONS.workspaces} workspaces × ${OPTIONS.numbersPerWorkspace} numbers, ${OPTIONS.durationS} s of load, ${OPTIONS.kills} kills, ${OPTIONS.restarts} object restarts`,
  );

  // Numbers and their operator credentials, known to the fake operator before anything connects.
  const tenants = Array.from({ length: OPTIONS.workspaces }, (_, w) => ({
    index: w,
    workspaceId: "",
    loadKey: "",
    checkKey: "",
    numbers: Array.from({ length: OPTIONS.numbersPerWorkspace }, (_, n) => ({
      id: "",
      phoneNumberId: `1${String(w).padStart(2, "0")}${String(n).padStart(2, "0")}${randomInt(1e9, 1e10)}`,
      token: `EAAGsoak${randomBytes(16).toString("hex")}`,
      // 60 recipients: the last digit is the recipient's fault class at the operator (soak-operator.mjs).
      recipients: Array.from(
        { length: 60 },
        (_, i) => `5511${String(w)}${String(n)}${String(randomInt(0, 1e6)).padStart(6, "0")}${i % 10}`,
      ),
    })),
  }));
  const byPhone = new Map(tenants.flatMap((t) => t.numbers.map((n) => [n.phoneNumberId, { tenant: t, number: n }])));

  const secrets = new Map();
  const receiver = await startReceiver({
    port: receiverPort,
    failShare: 0.3,
    random: seededRandom(OPTIONS.seed + 1),
    secrets,
  });
  cleanups.push(() => receiver.stop());

  const runtime = await createRuntime({
    port: workerPort,
    inspectorPort,
    state: join(WORK_DIR, "state"),
    vars: WORKER_VARS(operatorPort, receiverPort),
    logFile: join(WORK_DIR, "wrangler.log"),
  });
  const baseUrl = runtime.baseUrl;
  cleanups.push(() => runtime.stop());

  const operatorWebhooks = createOperatorWebhooks({
    baseUrl,
    appSecret: LOCAL_SECRETS.UPSTREAM_APP_SECRET,
    tenantOf: (phoneNumberId) => {
      const known = byPhone.get(phoneNumberId);
      if (!known) throw new Error(`no soak number has the phone number id ${phoneNumberId}`);
      return known.tenant;
    },
    random: seededRandom(OPTIONS.seed + 2),
  });
  cleanups.push(() => operatorWebhooks.stop());

  const operator = await startOperator({
    port: operatorPort,
    seed: OPTIONS.seed + 3,
    version: API_VERSION,
    numbers: Object.fromEntries([...byPhone].map(([id, { number }]) => [id, number.token])),
    onCall: (call) => operatorWebhooks.onCall(call),
  });
  cleanups.push(() => operator.stop());

  say(
    `starting wrangler dev on ${baseUrl} (fake operator :${operatorPort}, receiver :${receiverPort}; log .wrangler/soak/wrangler.log)`,
  );
  const readyMs = await runtime.start();
  say(`ready after ${(readyMs / 1000).toFixed(1)} s`);

  // ---- tenants
  for (const t of tenants) {
    t.workspaceId = (await admin(baseUrl, "/workspaces", { name: `Soak ${runId} #${t.index}`, plan: "scale" })).id;
    t.loadKey = (await admin(baseUrl, `/workspaces/${t.workspaceId}/api-keys`, { name: "soak load" })).key;
    t.checkKey = (await admin(baseUrl, `/workspaces/${t.workspaceId}/api-keys`, { name: "soak checks" })).key;
    for (const [n, number] of t.numbers.entries()) {
      number.id = (
        await admin(baseUrl, `/workspaces/${t.workspaceId}/channel-numbers`, {
          displayPhoneNumber: `1555${t.index}${n}${randomInt(10000, 99999)}`,
          upstream: { type: "cloud", phoneNumberId: number.phoneNumberId, accessToken: number.token },
        })
      ).id;
      const hook = await callApi(baseUrl, "POST", "/api/v1/webhooks", t.loadKey, {
        channelNumberId: number.id,
        url: `http://127.0.0.1:${receiverPort}/hooks/${number.id}`,
      });
      if (hook.status !== 201) throw new Error(`POST /webhooks answered ${hook.status}: ${hook.text.slice(0, 300)}`);
      secrets.set(number.id, hook.json.secret);
    }
  }
  say(
    `seeded ${tenants.length} workspaces, ${byPhone.size} live numbers (connected through the fake operator), ${tenants.length * 2} API keys, ${byPhone.size} webhooks`,
  );

  // ---- load, with kills
  const load = createLoad({ baseUrl, tenants, random: seededRandom(OPTIONS.seed + 4), runId, operatorWebhooks });
  const loadStarted = Date.now();
  load.start();
  say(`load for ${OPTIONS.durationS} s`);
  // One disruption at a random moment in each slice of the load (not in its first or last 15%):
  // object restarts and process kills take turns, restarts first.
  const plan = [
    ...Array.from({ length: Math.max(OPTIONS.kills, OPTIONS.restarts) }, (_, i) => [
      ...(i < OPTIONS.restarts ? ["restart"] : []),
      ...(i < OPTIONS.kills ? ["kill"] : []),
    ]).flat(),
  ];
  const slice = (OPTIONS.durationS * 1000) / Math.max(1, plan.length);
  const allObjects = {
    workspaceIds: tenants.map((t) => t.workspaceId),
    channelNumberIds: tenants.flatMap((t) => t.numbers.map((n) => n.id)),
  };
  for (const [k, what] of plan.entries()) {
    const at = loadStarted + k * slice + random.between(0.15, 0.85) * slice;
    await sleep(Math.max(0, at - Date.now()));
    if (what === "kill") {
      const w = await runtime.killAndRestart();
      say(
        `kill ${runtime.windows.length}: SIGKILL at +${((w.killedAt - loadStarted) / 1000).toFixed(1)} s, answering again ${((w.readyAt - w.killedAt) / 1000).toFixed(1)} s later`,
      );
      continue;
    }
    // A deploy restarts every object; an eviction one side only: which one, by the seed.
    const scope = random.pick(["all", "workspaces", "numbers"]);
    const w = await runtime.restartObjects(scope, {
      workspaceIds: scope === "numbers" ? [] : allObjects.workspaceIds,
      channelNumberIds: scope === "workspaces" ? [] : allObjects.channelNumberIds,
    });
    say(
      `object restart ${runtime.restarts.length} (${scope}): ${w.restarted} objects ended at +${((w.at - loadStarted) / 1000).toFixed(1)} s (the Worker and its queues stay up)`,
    );
  }
  await sleep(Math.max(0, loadStarted + OPTIONS.durationS * 1000 - Date.now()));
  say("load stopped; waiting for the last answers");
  const waiting = setInterval(
    () => say(`still waiting: ${JSON.stringify(load.inFlight())}, ${load.answers.length} answers so far`),
    10_000,
  );
  await load.stop();
  clearInterval(waiting);
  const loadEnded = Date.now();
  const accepted = load.sends.filter(wasAccepted);
  say(`${accepted.length} sends accepted; settling (at most ${OPTIONS.settleS} s)`);

  // ---- settle: every accepted message terminal, the operator's webhooks all confirmed, every event delivered
  /** @typedef {import("./lib/soak-load.mjs").AcceptedLoadSend} AcceptedLoadSend */
  /** @type {Map<string, import("./lib/soak-checks.mjs").MessageRecord>} */
  const records = new Map();
  /** @type {Map<string, import("./lib/soak-checks.mjs").TimelineEntry[]>} */
  const timelines = new Map();
  const keyOf = (/** @type {AcceptedLoadSend} */ s) => s.tenant.checkKey;
  const fetchRecords = async (/** @type {AcceptedLoadSend[]} */ list) => {
    await mapLimit(list, 8, async (s) => {
      const r = await read(baseUrl, `/api/v1/messages/${s.jobId}`, keyOf(s));
      if (r.status === 200) records.set(s.jobId, r.json);
    });
  };
  const fetchTimelines = async () => {
    await mapLimit(accepted, 8, async (s) => {
      const r = await read(baseUrl, `/api/v1/messages/${s.jobId}/events`, keyOf(s));
      if (r.status === 200) timelines.set(s.jobId, r.json.timeline);
    });
  };
  const isTerminal = (/** @type {AcceptedLoadSend} */ s) =>
    ["sent", "failed"].includes(records.get(s.jobId)?.status ?? "");
  const settleDeadline = Date.now() + OPTIONS.settleS * 1000;
  const killTimes = () => runtime.windows.map((w) => w.killedAt);
  // An event counted as lost with a killed queue may only be slow: settled once the receiver has been quiet this long.
  const QUIET_MS = 20_000;
  let settled = false;
  let lastReport = Date.now();
  let snapshotAt = 0;
  await fetchRecords(accepted);
  while (Date.now() < settleDeadline) {
    const open = accepted.filter((s) => !isTerminal(s));
    if (open.length) await fetchRecords(open);
    const stillOpen = accepted.filter((s) => !isTerminal(s)).length;
    const busy = operatorWebhooks.busy();
    let progress = `${stillOpen} not terminal yet, operator webhooks ${busy ? `pending (${operatorWebhooks.stats.pending})` : "all confirmed"}`;
    if (stillOpen === 0 && !busy) {
      // Nothing changes the records any more: one snapshot against the events as they arrive.
      if (snapshotAt === 0) {
        await fetchRecords(accepted);
        await fetchTimelines();
        snapshotAt = Date.now();
      }
      const events = checkEvents(
        accepted,
        records,
        timelines,
        receiver.deliveries,
        operatorWebhooks.inbound,
        killTimes(),
        receiver.published,
      );
      const lost = events.figures.lostWithQueueAtKill.reduce((a, b) => a + b, 0) + events.figures.inboundLostWithQueue;
      const lastDelivery = receiver.deliveries.at(-1)?.at ?? 0;
      const quiet = lost === 0 || Date.now() - lastDelivery >= QUIET_MS;
      if (events.failures.length === 0 && accepted.every(isTerminal) && quiet) {
        settled = true;
        break;
      }
      progress =
        events.failures.length > 0
          ? `all terminal; ${events.failures.length} messages' events not (yet) complete`
          : `all terminal; every event in, but ${lost} the kills may have lost: waiting until the receiver is quiet for ${QUIET_MS / 1000} s`;
    }
    if (Date.now() - lastReport > 15_000) {
      say(`settling: ${progress}`);
      lastReport = Date.now();
    }
    await sleep(2_000);
  }
  const settleMs = Date.now() - loadEnded;
  operatorWebhooks.stop();
  // The final figures read every record once more (a record that changed after the snapshot shows here).
  await fetchRecords(accepted);
  await fetchTimelines();
  say(
    settled
      ? `settled ${(settleMs / 1000).toFixed(1)} s after the load stopped`
      : `NOT settled within ${OPTIONS.settleS} s`,
  );

  // ---- checks
  const calls = operator.calls.slice();
  const checks = {
    terminal: checkTerminal(accepted, records),
    operatorCalls: checkOperatorCalls(calls, accepted, records),
    events: checkEvents(
      accepted,
      records,
      timelines,
      receiver.deliveries,
      operatorWebhooks.inbound,
      killTimes(),
      receiver.published,
    ),
    clientErrors: checkClientErrors(
      load.answers,
      (a, b) => runtime.inKillWindow(a, b) || runtime.inRestartWindow(a, b),
    ),
    numberRate: checkNumberRate(calls),
    conversationOrder: checkConversationOrder(accepted, calls),
    clientExpectations: { figures: load.counts, failures: load.mismatches },
  };
  const queued = queuedTimes(accepted, calls);
  /** @type {Record<string, number>} */
  const outcomes = {};
  for (const s of load.sends) outcomes[s.outcome] = (outcomes[s.outcome] ?? 0) + 1;

  const failing = Object.entries(checks).filter(([, c]) => c.failures.length > 0);
  const summary = {
    runId,
    seed: OPTIONS.seed,
    date: new Date(runStarted).toISOString(),
    machine: {
      platform: `${os.type()} ${os.release()} ${os.arch()}`,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? null,
      memoryGb: +(os.totalmem() / 2 ** 30).toFixed(1),
      node: process.version,
    },
    options: { ...OPTIONS, summary: undefined },
    vars: WORKER_VARS(operatorPort, receiverPort),
    killWindows: runtime.windows.map((w) => ({
      killedAtS: +((w.killedAt - loadStarted) / 1000).toFixed(1),
      downS: +(((w.readyAt ?? NaN) - w.killedAt) / 1000).toFixed(1),
      marginBeforeKillMs: KILL_MARGIN_MS,
    })),
    objectRestarts: runtime.restarts.map((w) => ({
      atS: +((w.at - loadStarted) / 1000).toFixed(1),
      scope: w.scope,
      objectsEnded: w.restarted,
    })),
    eventTap: { posts: receiver.tapPosts(), eventsHeard: receiver.published.byEventId.size },
    settled,
    settleS: +(settleMs / 1000).toFixed(1),
    sends: { offered: load.sends.length, outcomes },
    queuedToOperatorMs: queued,
    operatorWebhooks: operatorWebhooks.stats,
    figures: Object.fromEntries(Object.entries(checks).map(([k, c]) => [k, c.figures])),
    failures: Object.fromEntries(failing.map(([k, c]) => [k, c.failures.slice(0, 50)])),
    failureCounts: Object.fromEntries(failing.map(([k, c]) => [k, c.failures.length])),
    passed: failing.length === 0 && settled,
    runS: +((Date.now() - runStarted) / 1000).toFixed(1),
  };
  // Everything recorded, for looking into a failure (not printed).
  writeFileSync(
    join(WORK_DIR, "raw.json"),
    JSON.stringify({
      killWindows: runtime.windows,
      calls,
      sends: load.sends.map(({ tenant, ...s }) => s),
      answers: load.answers,
      deliveries: receiver.deliveries,
      records: Object.fromEntries(records),
      timelines: Object.fromEntries(timelines),
    }),
  );
  mkdirSync(dirname(OPTIONS.summary), { recursive: true });
  writeFileSync(OPTIONS.summary, JSON.stringify(summary, null, 2));

  const f = checks;
  /** @param {string} label @param {string} value @param {boolean} [ok] */
  const line = (label, value, ok) =>
    console.log(`  ${ok === undefined ? " " : ok ? "✓" : "✗"} ${label.padEnd(64)} ${value}`);
  console.log("");
  console.log(
    `soak ${runId} (seed ${OPTIONS.seed}), ${new Date(runStarted).toISOString()}, ${OPTIONS.durationS} s of load, settled in ${summary.settleS} s`,
  );
  line(
    "kills (SIGKILL to the process group) / seconds down each",
    `${runtime.windows.length} / ${summary.killWindows.map((w) => w.downS).join(", ")}`,
    runtime.windows.length >= OPTIONS.kills,
  );
  line(
    "object restarts (the objects alone; the Worker and its queues stay up)",
    `${runtime.restarts.length}: ${summary.objectRestarts.map((w) => `${w.scope} ${w.objectsEnded}`).join(", ")}`,
    runtime.restarts.length >= OPTIONS.restarts,
  );
  line(
    "sends offered / accepted (201, or 200 on a retry after a lost answer)",
    `${load.sends.length} / ${accepted.length}`,
  );
  line(
    "sends refused 429 (limits) / other",
    `${outcomes.refused_429 ?? 0} / ${load.sends.length - accepted.length - (outcomes.refused_429 ?? 0)}`,
  );
  line(
    "accepted sends that reached a terminal status",
    `${f.terminal.figures.terminal} of ${accepted.length} ${JSON.stringify(f.terminal.figures.byStatus)}`,
    f.terminal.failures.length === 0,
  );
  line(
    "operator calls / calls for one jobId, at most",
    `${f.operatorCalls.figures.calls} / ${f.operatorCalls.figures.maxCallsPerJob} ${JSON.stringify(f.operatorCalls.figures.answers)}`,
  );
  line(
    "deliveries to the operator per jobId (processed or outcome lost), at most",
    `${f.operatorCalls.figures.maxDeliveriesPerJob} (must be ≤ 1; payloads equal to the record)`,
    f.operatorCalls.failures.length === 0,
  );
  line(
    "status changes / customer events for them (distinct webhook-id)",
    `${f.events.figures.statusChanges} / ${f.events.figures.statusEvents}`,
  );
  line(
    "status changes without exactly one customer event (failing items)",
    `${f.events.failures.length}`,
    f.events.failures.length === 0,
  );
  line(
    "events the engine never published (changes and inbound; must be 0)",
    `${f.events.figures.neverPublished} (the event tap heard ${receiver.published.byEventId.size} events in ${receiver.tapPosts()} posts)`,
    f.events.figures.neverPublished === 0,
  );
  line(
    "  events lost with the in-memory queue at a process kill (accepted, then killed)",
    `${f.events.figures.lostWithQueueAtKill.join(" / ")} per kill; inbound ${f.events.figures.inboundLostWithQueue}`,
  );
  line(
    "inbound messages injected / with exactly one message.received",
    `${f.events.figures.inboundInjected} / ${f.events.figures.inboundWithOneEvent} (lost with the queue at a kill: ${f.events.figures.inboundLostWithQueue})`,
    f.events.figures.inboundInjected === f.events.figures.inboundWithOneEvent + f.events.figures.inboundLostWithQueue,
  );
  line(
    "webhook deliveries / refused by the receiver (5xx)",
    `${f.events.figures.deliveries} / ${f.events.figures.refusedByReceiver}`,
  );
  line(
    "client answers / 5xx or network errors inside kill or restart windows",
    `${f.clientErrors.figures.answers} / ${f.clientErrors.figures.errorsInKillWindows}`,
  );
  line(
    "5xx or network errors outside kill or restart windows",
    `${f.clientErrors.figures.errorsOutsideKillWindows}`,
    f.clientErrors.failures.length === 0,
  );
  line(
    "replays 200 with the original jobId / conflicting replays 409",
    `${load.counts.replayOk} / ${load.counts.conflictOk} (unexpected answers: ${load.mismatches.length})`,
    load.mismatches.length === 0,
  );
  const rate = f.numberRate.figures;
  line(
    "max calls per number started in any 1 s (number object's X-Call-Started-At)",
    `${rate.maxCallsPerNumberIn1sAsStarted} (closest 3 consecutive starts ${rate.minStartedSpanOf3ConsecutiveCallsMs} ms apart; unstamped calls ${rate.unstampedCalls})`,
    f.numberRate.failures.length === 0,
  );
  line(
    "  as received by the operator (± its measured lateness)",
    `${rate.maxCallsPerNumberIn1sAsReceived}, ${rate.windowsOver2AsReceived} window(s) over 2 (by receive time alone ${rate.maxCallsPerNumberIn1sByReceiveTimeAlone}; lateness p50/p99/max ${Object.values(rate.receiveTimeUncertaintyMs).join("/")} ms)`,
  );
  line(
    "  transit, started → received: p50 / p99 / max",
    `${rate.transitMs.p50} / ${rate.transitMs.p99} / ${rate.transitMs.max} ms`,
  );
  line(
    "conversation order: ordered pairs checked / violations",
    `${f.conversationOrder.figures.orderedPairsChecked} / ${f.conversationOrder.failures.length}`,
    f.conversationOrder.failures.length === 0,
  );
  line(
    "queued time, accepted → operator call: p50 / p99 / max",
    `${queued.p50Ms} / ${queued.p99Ms} / ${queued.maxMs} ms`,
  );
  line(
    "operator webhooks: posts / repeated after no effect / inbound duplicates",
    `${operatorWebhooks.stats.posts} / ${operatorWebhooks.stats.repeats} / ${operatorWebhooks.stats.inboundDuplicates}`,
  );
  console.log("");
  if (!settled) console.log("FAILED: the system did not settle within the bound");
  for (const [name, c] of failing) {
    console.log(`FAILED ${name}: ${c.failures.length} item(s)`);
    for (const item of c.failures.slice(0, 20)) console.log(`  ${JSON.stringify(item)}`);
  }
  for (const w of rate.arrivalWindows.slice(0, 10)) console.log(`  received within 1 s: ${JSON.stringify(w)}`);
  console.log(
    `${summary.passed ? "PASSED" : "FAILED"}; summary: ${OPTIONS.summary.startsWith(ROOT) ? OPTIONS.summary.slice(ROOT.length + 1) : OPTIONS.summary}`,
  );
  return summary.passed;
}

const watchdog = setTimeout(
  () => {
    console.error("[soak] the run exceeded its time limit; stopping");
    cleanup().then(() => process.exit(1));
  },
  (OPTIONS.durationS + OPTIONS.settleS + 600) * 1000,
);
watchdog.unref();

main()
  .then((passed) => (process.exitCode = passed ? 0 : 1))
  .catch((err) => {
    console.error(`[soak] ${err?.stack ?? err}`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await cleanup();
    clearTimeout(watchdog);
    // The operator thread and keep-alive sockets must not hold the process open.
    setTimeout(() => process.exit(process.exitCode ?? 0), 200).unref();
  });
