#!/usr/bin/env node
// `npm run bench`: load-tests the local runtime (`wrangler dev`) with one client
// (autocannon), in one run, and reports every case as a ratio to a baseline
// measured in that same run:
//   (a) GET /api/v1/me                  baseline authenticated route
//   (b) POST /api/v1/messages           accepted sends, round-robin over many numbers and
//                                       workspaces, paced so that no limit is reached
//   (c) POST /api/v1/messages           replays of (b)'s (key, body) pairs: 200 duplicado_identico
//   (d) GET /api/v1/messages/{id}       jobIds from (b)
//   (a') GET /api/v1/me                 the baseline again at the end, to show drift
// then, on one more workspace (100 numbers):
//   storage                             the workspace object's SQLite file before and after
//                                       STORAGE_SENDS accepted sends: bytes per message
//   (stop, write SEED_MESSAGES message records into that file, start again on the same state)
//   (a2) GET /api/v1/me                 the baseline of the restarted runtime
//   (e) (f) (g) GET /api/v1/messages    first page, a filtered page, the second page (cursor),
//                                       on the workspace with a million messages
//   (a2') GET /api/v1/me                its drift check
// It also counts the D1 statements the Worker runs per accepted send (Server-Timing,
// SERVER_TIMING=true), compares the send ratios with bench/baseline.json, and writes
// the tables, the arithmetic and the machine to bench/results.md.
// `node scripts/bench.mjs --save-baseline` also writes this run's ratios to bench/baseline.json.
//
// Everything it starts is its own: wrangler dev on 127.0.0.1 (port BENCH_PORT and the
// next one for the inspector when set, free ports otherwise) with its own state
// (.wrangler/bench-state, deleted at start), its own tenants, and it stops the whole
// process group at the end, on error, on Ctrl+C and on its time limit.
// wrangler's output goes to .wrangler/bench-wrangler.log.
import { spawn, spawnSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import os from "node:os";
import { randomBytes } from "node:crypto";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureDevVars } from "./lib/dev-vars.mjs";
import { callApi } from "./lib/http-call.mjs";
import { PRICES } from "../bench/cost/prices.mjs";
import { BODY_CHARS, HOT_WINDOW_MARGIN_MS, RATE_WINDOW_MARGIN_MS, seedMessages } from "./lib/bench-seed-messages.mjs";
import { expectedPages, findWorkspaceFile, pendingWork, retentionState, storageOf } from "./lib/bench-workspace-file.mjs";
import { mapLimit } from "./lib/map-limit.mjs";

/** An answer's JSON, or null when it is not JSON (such an answer counts as bad). */
const parseJsonOrNull = (body) => {
  try {
    return JSON.parse(body);
  } catch {
    return null;
  }
};

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const BIN_DIR = join(ROOT, "node_modules", ".bin");
const IS_WINDOWS = process.platform === "win32";
const WRANGLER = join(BIN_DIR, IS_WINDOWS ? "wrangler.cmd" : "wrangler");
const STATE_DIR = join(ROOT, ".wrangler", "bench-state");
const LOG_FILE = join(ROOT, ".wrangler", "bench-wrangler.log");
const RESULTS_FILE = join(ROOT, "bench", "results.md");
const BASELINE_FILE = join(ROOT, "bench", "baseline.json");
const SAVE_BASELINE = process.argv.includes("--save-baseline");
const HOST = "127.0.0.1";

// ---------------------------------------------------------------- parameters

const WORKSPACES = 20;
// Not more: (b) must come back to each number while its object is still live. Tried while
// building this bench: with 500 numbers each number came round only every ~16 s, the local
// runtime had evicted its object meanwhile, and (b) measured object restarts (like (w)).
const NUMBERS_PER_WORKSPACE = 10; // the "scale" plan allows 100
const NUMBERS = WORKSPACES * NUMBERS_PER_WORKSPACE;
const NUMBER_LIMIT_PER_S = 2; // src/domain/rate-window.ts
const WORKSPACE_LIMIT_PER_MIN = 1200;
/** (b) never offers more than 1 send per second per number: half the number's limit. */
const SEND_RATE_CAP = NUMBERS * 1;
const CONNECTIONS = 10; // the same for every case
const DURATION_S = 10; // per measured case
const WARMUP_S = 3;
/**
 * Pause after the warm-up sends. Not needed for the limits ((b) comes back to a number at most
 * once per second, so a warm-up send and (b)'s sends never make three in one second); short,
 * so that the objects stay live.
 */
const AFTER_WARMUP_MS = 500;
const SETTLE_LIMIT_MS = 20_000;
const READY_LIMIT_MS = 90_000;
// A safety net, well above the ~4 minutes of a run on an idle machine: a busy one makes every phase slower.
const RUN_LIMIT_MS = 600_000;

// The storage and list workspace: its own, so that (b)–(d) are what they were before it existed.
const STORAGE_NUMBERS = 100; // the scale plan's maximum
/** Sends measured for bytes per message: with the warm-up send per number, under the 1200/min window. */
const STORAGE_SENDS = 1_000;
/** One send per number per second at most (half the number's limit). */
const STORAGE_RATE = STORAGE_NUMBERS;
if (STORAGE_NUMBERS + STORAGE_SENDS >= WORKSPACE_LIMIT_PER_MIN) throw new Error("the storage sends would reach the workspace limit");
const SEED_MESSAGES = 1_000_000;
/** Numbers the seeded messages are spread over: a busy workspace's few numbers. */
const SEED_NUMBERS = 10;
const LIST_LIMIT = 20; // GET /messages' default page
const LIST_FILTER_STATUS = "sent";
/** What docs/architecture.md ("Storage budget") gives per row, indexes included. */
const BUDGET_BYTES_PER_ROW = { messages: 836, events: 936, idempotency_keys: 198 };
/** A measured figure this close to the budget's agrees with it (rows differ in their optional fields and id lengths). */
const AGREE_WITHIN = 0.15;

// Worst case per workspace in this run: one warm-up send per number, then (b) at the cap.
const WORST_PER_WORKSPACE = NUMBERS_PER_WORKSPACE + (SEND_RATE_CAP * DURATION_S) / WORKSPACES;
if (WORST_PER_WORKSPACE >= WORKSPACE_LIMIT_PER_MIN) throw new Error("bench parameters would reach the workspace limit");

const require = createRequire(import.meta.url);
const say = (msg) => console.log(`[bench] ${msg}`);
class Fatal extends Error {}
const fail = (msg) => {
  throw new Fatal(msg);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- processes we started

/** Children started by this script; each leads its own process group (POSIX). */
const children = new Set();
let logFd = null;

function childEnv(extra = {}) {
  return {
    ...process.env,
    // The devDependency `node` (22) first, as in scripts/dev.mjs.
    PATH: `${BIN_DIR}${delimiter}${process.env.PATH ?? ""}`,
    WRANGLER_SEND_METRICS: "false",
    ...extra,
  };
}

function startWrangler(args, env = {}) {
  const child = spawn(WRANGLER, args, {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ["ignore", logFd, logFd],
    detached: !IS_WINDOWS, // own process group: stopping it stops workerd too
    shell: IS_WINDOWS,
  });
  children.add(child);
  const exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
    child.on("error", (err) => {
      children.delete(child);
      resolve({ code: 1, signal: null, error: err });
    });
  });
  return { child, exited };
}

function groupAlive(pid) {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops one child and everything in its process group; waits until they are gone. */
async function stopChild(child) {
  const pid = child.pid;
  if (pid === undefined) return;
  if (IS_WINDOWS) {
    spawnSync("taskkill", ["/pid", String(pid), "/T", "/F"], { stdio: "ignore" });
    return;
  }
  try {
    process.kill(-pid, "SIGTERM");
  } catch {
    return; // already gone
  }
  for (let i = 0; i < 50 && groupAlive(pid); i++) await sleep(100);
  if (groupAlive(pid)) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
    for (let i = 0; i < 30 && groupAlive(pid); i++) await sleep(100);
  }
}

let cleaning = null;
function cleanup() {
  cleaning ??= (async () => {
    for (const child of [...children]) await stopChild(child);
    if (logFd !== null) {
      closeSync(logFd);
      logFd = null;
    }
  })();
  return cleaning;
}

function onSignal(signal) {
  console.error(`[bench] ${signal}: stopping what the bench started`);
  cleanup().then(() => process.exit(128 + (os.constants.signals[signal] ?? 1)));
}
process.on("SIGINT", () => onSignal("SIGINT"));
process.on("SIGTERM", () => onSignal("SIGTERM"));

function tailOfLog(lines = 30) {
  try {
    return readFileSync(LOG_FILE, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, HOST, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The price pages of bench/cost/prices.mjs, each with the date it was read. */
function priceCitations() {
  const pages = new Map(Object.values(PRICES).map((p) => [p.cite.url, p.cite.readOn]));
  return [...pages].map(([url, readOn]) => `${url} (read on ${readOn})`).join(", ");
}

// ---------------------------------------------------------------- HTTP helpers (setup only)

let BASE_URL = "";

const call = (method, path, token, body) => callApi(BASE_URL, method, path, token, body);

async function admin(adminToken, path, body) {
  const res = await call("POST", `/admin/v1${path}`, adminToken, body);
  if (res.status !== 201) fail(`POST /admin/v1${path} answered ${res.status}: ${res.text.slice(0, 300)}`);
  return res.json;
}

async function waitUntilReady(exited) {
  let done = false;
  exited.then(() => (done = true));
  const started = Date.now();
  while (!done && Date.now() - started < READY_LIMIT_MS) {
    try {
      const res = await fetch(`${BASE_URL}/api/v1/openapi.json`, { signal: AbortSignal.timeout(5000) });
      await res.arrayBuffer();
      if (res.status === 200) return Date.now() - started;
    } catch {
      // not listening yet
    }
    await sleep(300);
  }
  fail(done ? `wrangler dev exited before it was ready:\n${tailOfLog()}` : `wrangler dev was not ready within ${READY_LIMIT_MS / 1000} s:\n${tailOfLog()}`);
}

// ---------------------------------------------------------------- measurement

const autocannon = require("autocannon");

/** `Server-Timing: d1;desc="D1 statements";dur=N, total;dur=M` → { d1: N, total: M }. */
function parseServerTiming(headers) {
  let value;
  for (const [name, v] of Object.entries(headers)) if (name.toLowerCase() === "server-timing") value = Array.isArray(v) ? v.join(", ") : v;
  if (!value) return null;
  const out = {};
  for (const metric of String(value).split(",")) {
    const name = metric.split(";")[0].trim();
    const dur = /;\s*dur=([0-9.]+)/.exec(metric);
    if (dur) out[name] = Number(dur[1]);
  }
  return out;
}

/** Per-case counters filled from every response (autocannon's onResponse). */
function newTally() {
  return { responses: 0, d1: 0, d1Histogram: new Map(), serverMs: 0, timed: 0, bad: 0 };
}
function tallyResponse(tally, headers) {
  tally.responses++;
  const timing = parseServerTiming(headers);
  if (!timing) return;
  if (timing.d1 !== undefined) {
    tally.d1 += timing.d1;
    tally.d1Histogram.set(timing.d1, (tally.d1Histogram.get(timing.d1) ?? 0) + 1);
  }
  if (timing.total !== undefined) {
    tally.serverMs += timing.total;
    tally.timed++;
  }
}

/** Process group of `wrangler dev` (wrangler, its workerd processes): whose CPU time is the runtime's. */
let runtimeGroup = null;
let clockTicks = null;

/**
 * CPU time (ms) used so far by the processes of `wrangler dev`'s group, from /proc
 * (Linux only; null elsewhere), in total and by role: the workerd that runs the
 * Worker and its objects, the workerd of wrangler's proxy (it listens on our port),
 * and wrangler's own Node process (which also prints every request's log line).
 */
function runtimeCpuMs() {
  if (process.platform !== "linux" || runtimeGroup === null) return null;
  if (clockTicks === null) {
    const out = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" });
    clockTicks = Number(out.stdout) > 0 ? Number(out.stdout) : 100;
  }
  const parts = { runtime: 0, proxy: 0, wrangler: 0, other: 0 };
  let entries;
  try {
    entries = readdirSync("/proc");
  } catch {
    return null;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    let cmdline;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
    } catch {
      continue; // exited meanwhile
    }
    // pid (comm) state ppid pgrp … utime stime: fields after the command name.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) !== runtimeGroup) continue;
    const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
    const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const role =
      comm === "workerd"
        ? cmdline.includes(`entry=${HOST}:${new URL(BASE_URL).port} `) ? "proxy" : "runtime"
        : comm === "node" || comm.startsWith("MainThread") ? "wrangler" : "other";
    parts[role] += ms;
  }
  return { total: parts.runtime + parts.proxy + parts.wrangler + parts.other, parts };
}

/** One autocannon run; adds the CPU time the runtime and this client used during it. */
async function runAutocannon(opts) {
  const runtimeBefore = runtimeCpuMs();
  const clientBefore = process.cpuUsage();
  const result = await new Promise((resolve, reject) => {
    autocannon(
      { url: BASE_URL, connections: CONNECTIONS, pipelining: 1, timeout: 10, ...opts },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
  });
  const runtimeAfter = runtimeCpuMs();
  const client = process.cpuUsage(clientBefore);
  const known = runtimeBefore !== null && runtimeAfter !== null;
  result.runtimeCpuMs = known ? runtimeAfter.total - runtimeBefore.total : null;
  result.runtimeCpuParts = known ? Object.fromEntries(Object.keys(runtimeAfter.parts).map((k) => [k, runtimeAfter.parts[k] - runtimeBefore.parts[k]])) : null;
  result.clientCpuMs = (client.user + client.system) / 1000;
  return result;
}

function summarize(label, what, result, tally, extra = {}) {
  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count]));
  // requests.total counts completed responses (latency.totalCount may hold corrected samples).
  const completed = result.requests.total;
  return {
    label,
    what,
    duration: result.duration,
    completed,
    rps: completed / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statuses,
    d1Total: tally.d1,
    d1PerRequest: tally.responses > 0 ? tally.d1 / tally.responses : null,
    d1Histogram: tally.d1Histogram,
    serverMs: tally.timed > 0 ? tally.serverMs / tally.timed : null,
    bad: tally.bad,
    // Runtime CPU per request, and as a share of one core over the case.
    cpuPerRequest: result.runtimeCpuMs === null || completed === 0 ? null : result.runtimeCpuMs / completed,
    runtimeCores: result.runtimeCpuMs === null ? null : result.runtimeCpuMs / (result.duration * 1000),
    clientCores: result.clientCpuMs / (result.duration * 1000),
    coresByRole:
      result.runtimeCpuParts === null
        ? null
        : Object.fromEntries(Object.entries(result.runtimeCpuParts).map(([k, ms]) => [k, ms / (result.duration * 1000)])),
    ...extra,
  };
}

// ---------------------------------------------------------------- main

async function main() {
  const runStarted = Date.now();
  const runId = randomBytes(4).toString("hex");
  const loadBefore = os.loadavg();
  /** Where the run's wall time went, for the report. */
  const phases = [];
  const { adminToken } = ensureDevVars(ROOT, { say, fail });
  try {
    require.resolve("autocannon");
  } catch {
    fail("autocannon is not installed: run `npm install` first.");
  }

  rmSync(STATE_DIR, { recursive: true, force: true });
  mkdirSync(STATE_DIR, { recursive: true });
  logFd = openSync(LOG_FILE, "w");

  say(`applying D1 migrations to ${STATE_DIR.slice(ROOT.length + 1)} (its own state; the dev data is untouched)`);
  const migrate = startWrangler(["d1", "migrations", "apply", "DB", "--local", "--persist-to", STATE_DIR], { CI: "true" });
  const migrateStarted = Date.now();
  const migrated = await migrate.exited;
  phases.push(`migrations ${((Date.now() - migrateStarted) / 1000).toFixed(1)} s`);
  if (migrated.code !== 0) fail(`migrations failed (${migrated.error?.message ?? `exit ${migrated.code}`}):\n${tailOfLog()}`);

  const fixedPort = Number(process.env.BENCH_PORT);
  if (process.env.BENCH_PORT && !(Number.isInteger(fixedPort) && fixedPort > 0 && fixedPort < 65535)) fail(`BENCH_PORT=${process.env.BENCH_PORT} is not a port`);
  const port = fixedPort || (await freePort());
  const inspectorPort = fixedPort ? fixedPort + 1 : await freePort();
  BASE_URL = `http://${HOST}:${port}`;

  /** wrangler dev on the bench's state and ports; the second start (after seeding) finds the same state. */
  async function startDev(label) {
    say(`starting wrangler dev on ${BASE_URL} (SERVER_TIMING=true; log: ${LOG_FILE.slice(ROOT.length + 1)})`);
    const started = startWrangler([
      "dev",
      "--ip", HOST,
      "--port", String(port),
      "--inspector-ip", HOST,
      "--inspector-port", String(inspectorPort),
      "--persist-to", STATE_DIR,
      "--var", "SERVER_TIMING:true",
      "--show-interactive-dev-session=false",
    ]);
    if (!IS_WINDOWS) runtimeGroup = started.child.pid ?? null;
    const instance = { ...started, hasExited: false };
    started.exited.then(() => (instance.hasExited = true));
    const readyMs = await waitUntilReady(started.exited);
    say(`ready after ${(readyMs / 1000).toFixed(1)} s`);
    phases.push(`${label} ${(readyMs / 1000).toFixed(1)} s`);
    return instance;
  }
  let dev = await startDev("wrangler dev ready");

  // ---- tenants: WORKSPACES × NUMBERS_PER_WORKSPACE sandbox numbers, one API key each
  const setupStarted = Date.now();
  const workspaces = await mapLimit(Array.from({ length: WORKSPACES }, (_, w) => w), 4, async (w) => {
    const ws = await admin(adminToken, "/workspaces", { name: `Bench ${runId} #${w}`, plan: "scale" });
    const key = await admin(adminToken, `/workspaces/${ws.id}/api-keys`, { name: "bench" });
    return { id: ws.id, apiKey: key.key, numbers: [] };
  });
  const numberJobs = workspaces.flatMap((ws, w) => Array.from({ length: NUMBERS_PER_WORKSPACE }, (_, n) => ({ ws, w, n })));
  await mapLimit(numberJobs, 8, async ({ ws, w, n }) => {
    const display = `1555${String(w).padStart(3, "0")}${String(n).padStart(4, "0")}`;
    const number = await admin(adminToken, `/workspaces/${ws.id}/channel-numbers`, { displayPhoneNumber: display, upstream: { type: "sandbox" } });
    ws.numbers[n] = number.id;
  });
  // The storage and list workspace: STORAGE_NUMBERS numbers, measured after (a').
  const store = await (async () => {
    const ws = await admin(adminToken, "/workspaces", { name: `Bench ${runId} storage`, plan: "scale" });
    const key = await admin(adminToken, `/workspaces/${ws.id}/api-keys`, { name: "bench" });
    const numbers = await mapLimit(Array.from({ length: STORAGE_NUMBERS }, (_, n) => n), 8, async (n) => {
      const number = await admin(adminToken, `/workspaces/${ws.id}/channel-numbers`, {
        displayPhoneNumber: `1556000${String(n).padStart(4, "0")}`,
        upstream: { type: "sandbox" },
      });
      return number.id;
    });
    return { id: ws.id, apiKey: key.key, numbers };
  })();
  // Round-robin order: consecutive sends go to different workspaces and numbers.
  const targets = [];
  for (let n = 0; n < NUMBERS_PER_WORKSPACE; n++) for (const ws of workspaces) targets.push({ ws, numberId: ws.numbers[n] });
  phases.push(`tenants ${((Date.now() - setupStarted) / 1000).toFixed(1)} s`);
  say(`created ${WORKSPACES + 1} workspaces (plan scale), ${WORKSPACES + 1} API keys, ${NUMBERS + STORAGE_NUMBERS} sandbox numbers in ${((Date.now() - setupStarted) / 1000).toFixed(1)} s`);

  const auth = (apiKey) => `Bearer ${apiKey}`;
  const sendBody = (numberId, j) => JSON.stringify({ channelNumberId: numberId, to: `5511${900000000 + (j % 99_999_999)}`, text: { body: `bench ${runId} message ${j}` } });
  const perWorkspaceAccepted = new Map(workspaces.map((ws) => [ws.id, 0]));

  /** A send request that goes round-robin over `over`; every request has a fresh Idempotency-Key. */
  function sendRequests(prefix, tally, accepted, over = targets, bodyOf = sendBody) {
    let j = 0;
    return [
      {
        method: "POST",
        path: "/api/v1/messages",
        setupRequest: (req, context) => {
          const i = j++;
          const { ws, numberId } = over[i % over.length];
          const key = `bench-${runId}-${prefix}-${i}`;
          const body = bodyOf(numberId, i);
          context.sent = { apiKey: ws.apiKey, workspaceId: ws.id, numberId, key, body };
          return { ...req, headers: { ...req.headers, authorization: auth(ws.apiKey), "content-type": "application/json", "idempotency-key": key }, body };
        },
        onResponse: (status, body, context, headers) => {
          tallyResponse(tally, headers);
          if (status !== 201) {
            tally.bad++;
            return;
          }
          const sent = context.sent;
          let jobId = null;
          try {
            jobId = JSON.parse(body).jobId;
          } catch {
            // counted below
          }
          if (!sent || !jobId) {
            tally.bad++;
            return;
          }
          if (perWorkspaceAccepted.has(sent.workspaceId)) perWorkspaceAccepted.set(sent.workspaceId, perWorkspaceAccepted.get(sent.workspaceId) + 1);
          accepted?.push({ ...sent, jobId });
        },
      },
    ];
  }

  function meRequests(tally) {
    let j = 0;
    return [
      {
        method: "GET",
        path: "/api/v1/me",
        setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: auth(workspaces[j++ % workspaces.length].apiKey) } }),
        onResponse: (status, _body, _context, headers) => {
          tallyResponse(tally, headers);
          if (status !== 200) tally.bad++;
        },
      },
    ];
  }

  const results = [];
  const phase = async (name, fn) => {
    const t0 = Date.now();
    const out = await fn();
    phases.push(`${name} ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return out;
  };

  /**
   * Waits until a sample of `sends` has left the number outboxes (status sent or failed),
   * so that the next case does not share the runtime with their delivery. Bounded.
   */
  async function settle(sends) {
    const started = Date.now();
    const step = Math.max(1, Math.floor(sends.length / 30));
    const probe = [...sends.filter((_, i) => i % step === 0), ...sends.slice(-10)];
    while (Date.now() - started < SETTLE_LIMIT_MS) {
      const states = await mapLimit(probe, 8, (s) => call("GET", `/api/v1/messages/${s.jobId}`, s.apiKey).then((r) => r.json?.status));
      if (states.every((st) => st === "sent" || st === "failed")) return { settled: true, ms: Date.now() - started };
      await sleep(500);
    }
    return { settled: false, ms: Date.now() - started };
  }

  // ---- warm-up of the isolate and the key cache, then (a) on a quiet runtime
  await runAutocannon({ duration: WARMUP_S, requests: meRequests(newTally()) });
  say(`(a) GET /api/v1/me, ${CONNECTIONS} connections, ${DURATION_S} s`);
  let tally = newTally();
  results.push(summarize("(a)", "GET /api/v1/me (baseline)", await runAutocannon({ duration: DURATION_S, requests: meRequests(tally) }), tally));

  // ---- warm-up sends: one per number, so that (b) measures live objects, not their creation
  say(`warm-up: one send to each of the ${NUMBERS} numbers (creates every workspace and number object)`);
  const warmTally = newTally();
  const warmAccepted = [];
  const warm = await phase("warm-up sends", () => runAutocannon({ amount: NUMBERS, requests: sendRequests("warm", warmTally, warmAccepted) }));
  if (warm.non2xx > 0 || warmTally.bad > 0) fail(`warm-up sends were not all accepted: ${JSON.stringify(warm.statusCodeStats)}`);
  const warmRow = summarize("(w)", "POST /api/v1/messages, first send to each number (warm-up)", warm, warmTally);
  const warmSettle = await phase("warm-up delivery", () => settle(warmAccepted));
  await sleep(AFTER_WARMUP_MS);

  // ---- (b) accepted sends
  say(`(b) POST /api/v1/messages, round-robin over ${NUMBERS} numbers in ${WORKSPACES} workspaces, at most ${SEND_RATE_CAP}/s, ${DURATION_S} s`);
  const accepted = [];
  tally = newTally();
  // Coordinated-omission correction off: like the other cases, latency is that of each request made.
  const bRaw = await runAutocannon({ duration: DURATION_S, overallRate: SEND_RATE_CAP, ignoreCoordinatedOmission: true, requests: sendRequests("b", tally, accepted) });
  const b = summarize("(b)", "POST /api/v1/messages, accepted (201)", bRaw, tally, { capped: true });
  results.push(b);
  if (accepted.length === 0) fail(`(b) accepted no send: ${JSON.stringify(bRaw.statusCodeStats)}`);

  // ---- settle: let the number outboxes deliver what (b) queued before measuring (c) and (d)
  const { settled, ms: settleMs } = await phase("(b) delivery", () => settle(accepted));
  say(settled ? `(b)'s sends were delivered upstream (sandbox) ${(settleMs / 1000).toFixed(1)} s after (b) ended` : `(b)'s sends were not all delivered after ${SETTLE_LIMIT_MS / 1000} s; measuring anyway`);

  // ---- (c) replays
  say(`(c) POST /api/v1/messages replaying (b)'s ${accepted.length} (key, body) pairs, ${DURATION_S} s`);
  tally = newTally();
  {
    let j = 0;
    const t = tally;
    results.push(
      summarize(
        "(c)",
        "POST /api/v1/messages, replay (200 duplicado_identico)",
        await runAutocannon({
          duration: DURATION_S,
          requests: [
            {
              method: "POST",
              path: "/api/v1/messages",
              setupRequest: (req, context) => {
                const s = accepted[j++ % accepted.length];
                context.sent = s;
                return { ...req, headers: { ...req.headers, authorization: auth(s.apiKey), "content-type": "application/json", "idempotency-key": s.key }, body: s.body };
              },
              onResponse: (status, body, context, headers) => {
                tallyResponse(t, headers);
                const parsed = parseJsonOrNull(body);
                if (status !== 200 || parsed?.status !== "duplicado_identico" || parsed?.jobId !== context.sent?.jobId) t.bad++;
              },
            },
          ],
        }),
        t,
      ),
    );
  }

  // ---- (d) reads
  say(`(d) GET /api/v1/messages/{id} over (b)'s jobIds, ${DURATION_S} s`);
  tally = newTally();
  {
    let j = 0;
    const t = tally;
    results.push(
      summarize(
        "(d)",
        "GET /api/v1/messages/{id}",
        await runAutocannon({
          duration: DURATION_S,
          requests: [
            {
              method: "GET",
              setupRequest: (req, context) => {
                const s = accepted[j++ % accepted.length];
                context.sent = s;
                return { ...req, path: `/api/v1/messages/${s.jobId}`, headers: { ...req.headers, authorization: auth(s.apiKey) } };
              },
              onResponse: (status, body, context, headers) => {
                tallyResponse(t, headers);
                const parsed = parseJsonOrNull(body);
                if (status !== 200 || parsed?.id !== context.sent?.jobId) t.bad++;
              },
            },
          ],
        }),
        t,
      ),
    );
  }

  // ---- (a') the baseline again
  say(`(a') GET /api/v1/me again (drift check), ${DURATION_S} s`);
  tally = newTally();
  results.push(summarize("(a')", "GET /api/v1/me again, at the end (drift check)", await runAutocannon({ duration: DURATION_S, requests: meRequests(tally) }), tally));

  if (dev.hasExited) fail(`wrangler dev exited during the run:\n${tailOfLog()}`);

  // ---- storage: the workspace object's SQLite file before and after STORAGE_SENDS sends
  const storeTargets = store.numbers.map((numberId) => ({ ws: store, numberId }));
  // A body of BODY_CHARS characters, like the storage budget's average message.
  const storeBody = (numberId, j) => {
    const text = `Bench ${runId} storage message ${j}: your order has shipped and should arrive within two business days. `;
    return JSON.stringify({ channelNumberId: numberId, to: `5511${910000000 + j}`, text: { body: text.repeat(3).slice(0, BODY_CHARS) } });
  };
  /** Waits until the object has nothing left to write about its messages (all settled, every event reported). */
  async function quiet(file) {
    const started = Date.now();
    while (Date.now() - started < SETTLE_LIMIT_MS) {
      const left = pendingWork(file);
      if (left.active === 0 && left.events === 0) return Date.now() - started;
      await sleep(250);
    }
    fail(`the storage workspace still had work after ${SETTLE_LIMIT_MS / 1000} s: ${JSON.stringify(pendingWork(file))}`);
  }
  const storeSend = async (prefix, amount, into) => {
    const t = newTally();
    const out = await runAutocannon({ amount, overallRate: STORAGE_RATE, ignoreCoordinatedOmission: true, requests: sendRequests(prefix, t, into, storeTargets, storeBody) });
    if (into.length !== amount) fail(`storage sends (${prefix}): ${into.length} of ${amount} accepted: ${JSON.stringify(out.statusCodeStats)}`);
    return out;
  };
  say(`storage: one send to each of the storage workspace's ${STORAGE_NUMBERS} numbers (creates its objects)`);
  await phase("storage warm-up sends", () => storeSend("store-warm", STORAGE_NUMBERS, []));
  const storeFile = findWorkspaceFile(STATE_DIR, store.id) ?? fail("the storage workspace's SQLite file was not found in the bench state");
  await phase("storage warm-up delivery", () => quiet(storeFile));
  const storageBefore = storageOf(storeFile);
  say(`storage: ${STORAGE_SENDS} sends with ${BODY_CHARS}-character bodies at ${STORAGE_RATE}/s over its numbers`);
  const storeAccepted = [];
  const storeRaw = await phase("storage sends", () => storeSend("store", STORAGE_SENDS, storeAccepted));
  const storeDeliveryMs = await phase("storage delivery", () => quiet(storeFile));
  const storageAfter = storageOf(storeFile);

  // ---- a million messages in that object: stop the runtime, write them into its file, start again
  await stopChild(dev.child);
  say("stopped wrangler dev");
  say(`seeding ${SEED_MESSAGES.toLocaleString("en-US")} message records into ${storeFile.slice(ROOT.length + 1)}`);
  const seeded = seedMessages({ file: storeFile, count: SEED_MESSAGES, numberIds: store.numbers.slice(0, SEED_NUMBERS), now: Date.now() });
  phases.push(`seeding ${(seeded.ms / 1000).toFixed(1)} s`);
  say(`seeded in ${(seeded.ms / 1000).toFixed(1)} s`);
  const readStarted = Date.now();
  const storageSeeded = storageOf(storeFile);
  const filterNumber = store.numbers[0];
  const expected = expectedPages(storeFile, { status: LIST_FILTER_STATUS, channelNumberId: filterNumber, limit: LIST_LIMIT });
  phases.push(`reading the seeded file ${((Date.now() - readStarted) / 1000).toFixed(1)} s`);
  if (expected.filtered.length !== LIST_LIMIT) fail(`the filtered page would hold ${expected.filtered.length} messages, not ${LIST_LIMIT}: the seed's mix is wrong`);
  dev = await startDev("wrangler dev restart");

  // The pages once each, checked against the file: the cases below then assert every answer.
  const listPath = (query) => `/api/v1/messages${query ? `?${query}` : ""}`;
  const filterQuery = `status=${LIST_FILTER_STATUS}&channelNumberId=${filterNumber}`;
  const sameIds = (data, ids) => Array.isArray(data) && data.length === ids.length && data.every((m, i) => m?.id === ids[i]);
  const firstListStarted = Date.now();
  const first = await call("GET", listPath(""), store.apiKey);
  const firstListMs = Date.now() - firstListStarted;
  if (first.status !== 200 || !sameIds(first.json?.data, expected.first) || !first.json?.nextCursor) fail(`GET /messages did not answer the expected first page: ${first.status} ${first.text.slice(0, 300)}`);
  const cursorQuery = `cursor=${encodeURIComponent(first.json.nextCursor)}`;
  for (const [query, ids] of [[filterQuery, expected.filtered], [cursorQuery, expected.second]]) {
    const res = await call("GET", listPath(query), store.apiKey);
    if (res.status !== 200 || !sameIds(res.json?.data, ids)) fail(`GET ${listPath(query)} did not answer the expected page: ${res.status} ${res.text.slice(0, 300)}`);
  }

  function listRequests(path, ids, tally) {
    return [
      {
        method: "GET",
        path,
        headers: { authorization: auth(store.apiKey) },
        onResponse: (status, body, _context, headers) => {
          tallyResponse(tally, headers);
          const parsed = parseJsonOrNull(body);
          if (status !== 200 || !sameIds(parsed?.data, ids)) tally.bad++;
        },
      },
    ];
  }

  const listResults = [];
  await runAutocannon({ duration: WARMUP_S, requests: meRequests(newTally()) });
  say(`(a2) GET /api/v1/me on the restarted runtime, ${DURATION_S} s`);
  tally = newTally();
  listResults.push(summarize("(a2)", "GET /api/v1/me (baseline after the restart)", await runAutocannon({ duration: DURATION_S, requests: meRequests(tally) }), tally));
  const listCases = [
    ["(e)", `GET ${listPath("")} (first page)`, listPath(""), expected.first],
    ["(f)", `GET /api/v1/messages?status=${LIST_FILTER_STATUS}&channelNumberId=… (filtered page)`, listPath(filterQuery), expected.filtered],
    ["(g)", "GET /api/v1/messages?cursor=… (second page)", listPath(cursorQuery), expected.second],
  ];
  for (const [label, what, path, ids] of listCases) {
    say(`${label} ${what}, ${DURATION_S} s`);
    tally = newTally();
    listResults.push(summarize(label, what, await runAutocannon({ duration: DURATION_S, requests: listRequests(path, ids, tally) }), tally));
  }
  say(`(a2') GET /api/v1/me again (drift check), ${DURATION_S} s`);
  tally = newTally();
  listResults.push(summarize("(a2')", "GET /api/v1/me again (drift check after the list cases)", await runAutocannon({ duration: DURATION_S, requests: meRequests(tally) }), tally));

  if (dev.hasExited) fail(`wrangler dev exited during the run:\n${tailOfLog()}`);
  await cleanup();
  say("stopped wrangler dev");
  // The retention alarm must have left the seeded rows where they were for the whole measurement.
  const retained = retentionState(storeFile);

  // ---- report
  const report = buildReport({
    results,
    accepted,
    warmRow,
    warmSettle,
    loadBefore,
    loadAfter: os.loadavg(),
    phases,
    settled,
    settleMs,
    perWorkspaceAccepted,
    storage: { before: storageBefore, after: storageAfter, sends: storeAccepted.length, rps: storeRaw.requests.total / storeRaw.duration, deliveryMs: storeDeliveryMs },
    seed: { ...seeded, storage: storageSeeded, filterScanned: expected.filterScanned, firstListMs, retained },
    listResults,
    baseline: readBaseline(),
    runMs: Date.now() - runStarted,
  });
  mkdirSync(dirname(RESULTS_FILE), { recursive: true });
  writeFileSync(RESULTS_FILE, report.markdown);
  if (SAVE_BASELINE) {
    writeFileSync(BASELINE_FILE, `${JSON.stringify(report.baselineOut, null, 2)}\n`);
    say(`wrote ${BASELINE_FILE.slice(ROOT.length + 1)} (this run's ratios are now the baseline)`);
  }
  console.log(`\n${report.markdown}`);
  say(`wrote ${RESULTS_FILE.slice(ROOT.length + 1)}`);
  if (report.problems.length > 0) {
    console.error(`[bench] checks failed:\n  - ${report.problems.join("\n  - ")}`);
    process.exitCode = 1;
  }
}

// ---------------------------------------------------------------- report

const f0 = (n) => (n === null || n === undefined ? "n/a" : Math.round(n).toLocaleString("en-US"));
const f1 = (n) => (n === null || n === undefined ? "n/a" : n.toFixed(1));
const f2 = (n) => (n === null || n === undefined ? "n/a" : n.toFixed(2));
const f3 = (n) => (n === null || n === undefined ? "n/a" : n.toFixed(3));

function versionOf(pkg, from) {
  try {
    return require(require.resolve(`${pkg}/package.json`, { paths: [from] })).version;
  } catch {
    return "unknown";
  }
}

/** The ratios of a previous run that this run's send ratios are compared with (bench/baseline.json), or null. */
function readBaseline() {
  try {
    return JSON.parse(readFileSync(BASELINE_FILE, "utf8"));
  } catch {
    return null;
  }
}

const pct = (x) => (Math.round(x * 100) === 0 ? "±0%" : `${x > 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(0)}%`);
const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(2)} MiB`;

/** Bytes per message in the workspace object, from its file before and after the storage sends. */
function storageSection(st, seed) {
  const { before, after, sends } = st;
  const grew = (t) => (after.tables[t] ?? 0) - (before.tables[t] ?? 0);
  const added = (t) => after.rows[t] - before.rows[t];
  const growth = after.bytes - before.bytes;
  const perMessage = growth / sends;
  const eventsPerMessage = added("events") / sends;
  const expectedPerMessage =
    BUDGET_BYTES_PER_ROW.messages + eventsPerMessage * BUDGET_BYTES_PER_ROW.events + BUDGET_BYTES_PER_ROW.idempotency_keys;
  const named = ["messages", "events", "idempotency_keys", "event_attempts", "daily_counts"];
  const others = Object.keys({ ...before.tables, ...after.tables }).filter((t) => !named.includes(t));
  const otherGrowth = others.reduce((sum, t) => sum + grew(t), 0);
  const row = (label, t, budget) => {
    const n = added(t);
    const perRow = n > 0 ? grew(t) / n : null;
    return `| ${label} | ${f0(before.tables[t] ?? 0)} | ${f0(after.tables[t] ?? 0)} | ${f0(grew(t))} | ${f0(before.rows[t])} → ${f0(after.rows[t])} (+${f0(n)}) | ${perRow === null ? "–" : f0(perRow)} | ${budget ?? "–"} |`;
  };
  const verdict = (t) => {
    const n = added(t);
    if (n === 0) return `${t}: no rows added`;
    const perRow = grew(t) / n;
    const diff = perRow / BUDGET_BYTES_PER_ROW[t] - 1;
    // Each of the table's b-trees grows by whole pages: that is the resolution of the figure.
    const btrees = t === "messages" ? 9 : t === "events" ? 5 : 2;
    const resolution = (btrees * after.pageSize) / grew(t);
    const agreement =
      Math.abs(diff) <= AGREE_WITHIN
        ? "they agree"
        : diff < 0
          ? "they do not agree: the budget is higher than measured (on the safe side)"
          : "they do NOT agree: the budget is LOWER than measured";
    return `${t} ${f0(perRow)} B/row against ${BUDGET_BYTES_PER_ROW[t]} (${pct(diff)}; resolution ±${f0(resolution * 100)}%, whole pages in ${btrees} b-trees): ${agreement}`;
  };
  return [
    "## Storage: bytes per message in the workspace object",
    "",
    `Measured on the storage workspace (its own, ${STORAGE_NUMBERS} sandbox numbers) through its object's SQLite file in the bench state`,
    "(`.wrangler/bench-state/v3/do/…-WorkspaceDurableObject/`, found by the `workspace_id` in its `meta`), read with `node:sqlite`",
    "read-only beside the running object (the file is in WAL mode): page count × page size, which is what",
    "`ctx.storage.sql.databaseSize` reports, and the bytes of each table with its indexes (`dbstat`).",
    `Before: after one send to each number, all sent and every event reported. After: ${f0(sends)} more accepted sends`,
    `(${BODY_CHARS}-character bodies, ${f0(st.rps)}/s round-robin over the numbers), all sent by the sandbox upstream and every event`,
    `reported (${f1(st.deliveryMs / 1000)} s after the last send).`,
    "",
    "| table (with its indexes) | bytes before | bytes after | growth | rows | bytes per row added | docs/architecture.md |",
    "| --- | ---: | ---: | ---: | --- | ---: | ---: |",
    row("`messages` (8 indexes)", "messages", BUDGET_BYTES_PER_ROW.messages),
    row("`events` (4 indexes)", "events", BUDGET_BYTES_PER_ROW.events),
    row("`idempotency_keys` (1 index)", "idempotency_keys", BUDGET_BYTES_PER_ROW.idempotency_keys),
    row("`event_attempts` (2 indexes)", "event_attempts", 271),
    row("`daily_counts` (1 index)", "daily_counts", "~60"),
    `| other tables (meta, history, schema) | ${f0(others.reduce((s, t) => s + (before.tables[t] ?? 0), 0))} | ${f0(others.reduce((s, t) => s + (after.tables[t] ?? 0), 0))} | ${f0(otherGrowth)} | – | – | – |`,
    `| **whole file** (page count × ${after.pageSize} B; free pages ${f0(before.freePages)} → ${f0(after.freePages)}) | ${f0(before.bytes)} | ${f0(after.bytes)} | ${f0(growth)} | ${f0(sends)} messages | **${f0(perMessage)} per message** | ${f0(expectedPerMessage)} for this mix |`,
    "",
    `- Per message, everything included: **${f0(perMessage)} B** (the file grew ${mib(growth)} for ${f0(sends)} messages). The budget's`,
    `  figures for the same rows give ${f0(expectedPerMessage)} B: one message (${BUDGET_BYTES_PER_ROW.messages}), ${f2(eventsPerMessage)} events`,
    `  (${BUDGET_BYTES_PER_ROW.events} each) and one idempotency key (${BUDGET_BYTES_PER_ROW.idempotency_keys}): ${pct(perMessage / expectedPerMessage - 1)}.`,
    `- Per table: ${verdict("messages")}; ${verdict("events")}; ${verdict("idempotency_keys")}.`,
    `- The sandbox reports no delivery or read, so each message has ${f2(eventsPerMessage)} events here (\`processing\`, \`sent\`) where`,
    "  the budget plans 3–4; the storage workspace has no webhook, so no delivery attempts (`event_attempts`) are written.",
    "- These messages carry the sandbox's upstream id (`sandbox.` and the jobId, 44 characters) and no delivery or read time. The",
    `  ${f0(seed.count)} rows seeded for the next section carry the operator's ids (55 characters), a mix of delivered, read, failed and`,
    `  inbound messages: \`messages\` with its indexes holds **${f0((seed.storage.tables.messages ?? 0) / seed.storage.rows.messages)} B per row** over them (${pct(
      (seed.storage.tables.messages ?? 0) / seed.storage.rows.messages / BUDGET_BYTES_PER_ROW.messages - 1,
    )} against ${BUDGET_BYTES_PER_ROW.messages}).`,
    "",
  ];
}

/** GET /messages on the seeded workspace: what was seeded, then the cases as ratios to the restarted runtime's baseline. */
function listSection(seed, listResults, row, a, header) {
  const [a2, , , , a2b] = listResults;
  const drift = a2b.rps / a2.rps - 1;
  const span = (seed.newest - seed.oldest) / 3_600_000;
  const sh = seed.shapes;
  const outbound = seed.count - sh.inbound;
  const msgBytes = seed.storage.tables.messages ?? 0;
  const [, e, f, g] = listResults;
  return [
    `## GET /messages on a workspace object with ${f0(seed.count)} messages`,
    "",
    `After the storage measurement the bench stopped \`wrangler dev\`, wrote **${f0(seed.count)} message records** into the storage`,
    `workspace's SQLite file with \`node:sqlite\` (one transaction, one prepared statement: **${f1(seed.ms / 1000)} s**), and started it again`,
    "on the same state (`scripts/lib/bench-seed-messages.mjs`). The rows are what the object writes (`src/durable-objects/workspace/messages.ts`):",
    `- ${f0(outbound)} outbound over ${SEED_NUMBERS} of the workspace's numbers: ${f0(sh.sent)} sent (no report since), ${f0(sh.delivered)} delivered, ${f0(sh.read)} read, ${f0(sh.failed)} failed`,
    `  while processing, ${f0(sh["failed-after-sent"])} failed after sent (the operator's report); ${f0(sh.inbound)} inbound (received). ${BODY_CHARS}-character bodies,`,
    "  distinct counterparts, ids shaped like the object's (outbound: UUIDv7 of the acceptance day, as `deriveJobId`; inbound: of the",
    "  receipt), the lifecycle times and `version` a settled message has.",
    `- Created over ${f1(span)} hours, the newest ${f0(RATE_WINDOW_MARGIN_MS / 60_000)} min before the seed: inside the 48-hour hot window with ${f0(HOT_WINDOW_MARGIN_MS / 3_600_000)} hours`,
    "  to spare, so the retention alarm moves none of them to history during the run; none in the last minute (the 1200/min window is",
    "  rebuilt from the rows on start) and none queued or processing (the stranded-message check would hand them to their number again).",
    `- The object's bookkeeping about its rows is kept true: \`daily_counts\` gained accepted / sent / failed / received for each of the`,
    `  ${f0(seed.countRows)} (day, number) pairs, marked dirty (D1 has not seen them), so the month's usage counts them. Nothing moved to history,`,
    "  so `history_boundary` and `history_days` stay empty. Not seeded: events and idempotency keys (24 hours each once settled); GET",
    "  /messages reads neither.",
    `- File after seeding: ${mib(seed.storage.bytes)}; \`messages\` with its indexes ${mib(msgBytes)}, **${f0(msgBytes / seed.storage.rows.messages)} B per row** over its`,
    `  ${f0(seed.storage.rows.messages)} rows (docs/architecture.md: ${BUDGET_BYTES_PER_ROW.messages}, ${pct(msgBytes / seed.storage.rows.messages / BUDGET_BYTES_PER_ROW.messages - 1)}; these rows carry the operator's ids at their usual length).`,
    "",
    header[0],
    header[1],
    ...listResults.map((r) => row(r, a2)),
    "",
    "Ratios are to (a2), the baseline measured on the restarted runtime in this run; the last column is to (a) of the first half.",
    `Every answer of (e), (f) and (g) was checked: 200 and exactly the expected ${LIST_LIMIT} ids, in order, computed from the file after seeding`,
    `((e) the ${LIST_LIMIT} newest; (f) the first ${LIST_LIMIT} \`${LIST_FILTER_STATUS}\` among the ${f0(seed.filterScanned)} newest of one number, the rows \`listPage\` reads through`,
    `the number's index before applying the status (its scan budget); (g) messages ${LIST_LIMIT + 1}–${2 * LIST_LIMIT}, after (e)'s \`nextCursor\`): unexpected answers ${f0(
      e.bad + f.bad + g.bad,
    )}.`,
    `The first list request after the restart (the object starts on its ${f0(seed.storage.rows.messages)} rows, then reads the page) took ${f0(seed.firstListMs)} ms.`,
    `After the run the object still held ${f0(seed.retained.messages)} rows and ${f0(seed.retained.historyDays)} days in history: ${
      seed.retained.messages === seed.storage.rows.messages && seed.retained.historyDays === 0
        ? "the retention alarm moved nothing meanwhile"
        : "**rows moved during the measurement: the list cases did not all see the seeded object**"
    }.`,
    "",
    `Drift: (a2') did ${f0(Math.abs(drift) * 100)}% ${drift >= 0 ? "more" : "fewer"} req/s than (a2). (e) ran at ${f2(e.rps / a2.rps)}× (a2)'s req/s (${f2(e.rps / a.rps)}× (a)),`,
    `(f), which reads ${f0(seed.filterScanned)} rows through the number's index to answer ${LIST_LIMIT}, at ${f2(f.rps / a2.rps)}×, (g) at ${f2(g.rps / a2.rps)}×.`,
    "",
  ];
}

/** This run's send ratios against bench/baseline.json, with the drift of both runs as the noise bound. */
function baselineSection(baseline, ratios, drift) {
  if (!baseline) return ["## Send ratios against the baseline", "", "No bench/baseline.json: nothing to compare with.", ""];
  const bound = Math.max(Math.abs(drift), Math.abs(baseline.drift ?? 0));
  const verdicts = [];
  const lines = Object.entries(ratios).map(([label, now]) => {
    const was = baseline.ratios?.[label];
    if (!was) return `| ${label} | – | ${f2(now.rps)} | – | – | ${f2(now.p99)} | – |`;
    const dRps = now.rps / was.rps - 1;
    const dP99 = now.p99 / was.p99 - 1;
    const within = Math.abs(dRps) <= bound;
    verdicts.push(`${label} ${within ? "unchanged within noise" : `**changed beyond the noise** (${pct(dRps)})`}`);
    return `| ${label} | ${f2(was.rps)} | ${f2(now.rps)} | ${pct(dRps)} | ${f2(was.p99)} | ${f2(now.p99)} | ${pct(dP99)} |`;
  });
  return [
    "## Send ratios against the baseline (`bench/baseline.json`)",
    "",
    `Baseline: ${baseline.source ?? "unknown"} (drift in that run ${f0(Math.abs(baseline.drift ?? 0) * 100)}%). Only ratios to (a) of the same run are compared.`,
    "",
    "| case | req/s ÷ (a), baseline | this run | change | p99 ÷ (a), baseline | this run | change |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...lines,
    "",
    `Noise bound: the larger drift of the two runs ((a') against (a)), ${f0(bound * 100)}%: a req/s ratio that moved less than that is`,
    `unchanged within noise. Verdict (req/s): ${verdicts.join("; ")}. p99 ratios are noisier still (one slow request in a`,
    "hundred sets them) and are shown, not judged.",
    "",
  ];
}

function buildReport({ results, accepted, warmRow, warmSettle, loadBefore, loadAfter, phases, settled, settleMs, perWorkspaceAccepted, storage, seed, listResults, baseline, runMs }) {
  const [a, b, c, d, a2] = results;
  const problems = [];
  for (const r of [...results, ...listResults]) {
    if (r.non2xx > 0) problems.push(`${r.label} had ${r.non2xx} non-2xx responses: ${JSON.stringify(r.statuses)}`);
    if (r.errors > 0 || r.timeouts > 0) problems.push(`${r.label} had ${r.errors} connection errors and ${r.timeouts} timeouts`);
    if (r.bad > 0) problems.push(`${r.label} had ${r.bad} responses that were not the expected answer`);
  }
  if (b.statuses["429"]) problems.push(`(b) was rate limited ${b.statuses["429"]} times: the pacing is wrong`);
  if (a.d1PerRequest === null) problems.push("no Server-Timing header: the D1 statement count is missing");
  if (seed.retained.messages !== seed.storage.rows.messages || seed.retained.historyDays !== 0) {
    problems.push(`the seeded object changed during the list cases: ${JSON.stringify(seed.retained)}, seeded ${seed.storage.rows.messages} rows`);
  }

  const cpus = os.cpus();
  const wranglerDir = dirname(require.resolve("wrangler/package.json"));
  const machine = [
    `- Date: ${new Date().toISOString()}`,
    `- CPU: ${cpus[0]?.model?.trim() ?? "unknown"} × ${cpus.length} logical cores; memory ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB; ` +
      `load average before the run ${loadBefore.map((l) => l.toFixed(2)).join(" / ")}, after it ${loadAfter.map((l) => l.toFixed(2)).join(" / ")} (1 / 5 / 15 min)`,
    `- OS: ${os.type()} ${os.release()} (${process.arch})`,
    `- Node ${process.version}; wrangler ${versionOf("wrangler", ROOT)}; workerd ${versionOf("workerd", wranglerDir)}; autocannon ${versionOf("autocannon", ROOT)}`,
    `- Client and server on one machine over loopback: autocannon (${CONNECTIONS} connections, pipelining 1) in the bench's Node process,`,
    "  `wrangler dev` (wrangler, its proxy workerd and the Worker's workerd) beside it, state in .wrangler/bench-state.",
    ...(loadBefore[0] > cpus.length
      ? [
          `- **The machine was busy with other work when the run started** (1-min load ${loadBefore[0].toFixed(2)} on ${cpus.length} cores): every case shared`,
          "  the cores with it, so even the ratios are less reliable than on an idle machine.",
        ]
      : []),
  ];

  const row = (r, ratios = true) => {
    const statuses = Object.entries(r.statuses).map(([code, n]) => `${code}: ${f0(n)}`).join(", ") || "none";
    return `| ${r.label} | ${r.what} | ${f0(r.rps)}${r.capped ? "¹" : ""} | ${f1(r.p50)} | ${f1(r.p99)} | ${statuses} | ${f0(r.non2xx)} | ${ratios ? f2(r.rps / a.rps) : "–"} | ${ratios ? f2(r.p99 / a.p99) : "–"} | ${f3(r.d1PerRequest)} | ${f1(r.serverMs)} | ${f1(r.cpuPerRequest)} | ${f2(r.runtimeCores)} |`;
  };
  const listRow = (r, base) => {
    const statuses = Object.entries(r.statuses).map(([code, n]) => `${code}: ${f0(n)}`).join(", ") || "none";
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
    row(warmRow, false),
  ];

  const bSends = b.statuses["201"] ?? 0;
  const hist = [...b.d1Histogram].sort(([x], [y]) => x - y).map(([k, n]) => `${f0(n)} sends with ${k}`).join(", ");
  const maxWs = Math.max(...perWorkspaceAccepted.values());
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
    "Sections: the request cases (a)–(d) and their arithmetic; bytes per message in the workspace object; GET /messages on a",
    `workspace object with ${f0(SEED_MESSAGES)} messages; this run's send ratios against the committed baseline.`,
    "",
    "## Machine",
    "",
    ...machine,
    "",
    "## Results",
    "",
    ...table,
    "",
    `Each case ran ${DURATION_S} s with the same ${CONNECTIONS} connections; latency is per request as the client saw it (no coordinated-omission`,
    "correction). \"D1 statements / request\" and \"Worker ms\" come from the `Server-Timing` header the Worker adds when",
    "`SERVER_TIMING=true` (`src/middleware/server-timing.ts`); Worker ms runs from the middleware's start to its end and is coarse,",
    "because the Workers clock only advances on I/O. \"Runtime CPU\" is the CPU time of `wrangler dev`'s processes during the case",
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
    "  (number outbox, message copies and events written to D1 by queue consumers), which is off the request path.",
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
    ...(capPerWorkspacePerMin < WORKSPACE_LIMIT_PER_MIN ? ["  for any length without reaching the workspace limit."] : []),
    `- (c) replays the ${f0(accepted.length)} accepted (key, body) pairs of (b) in the same order; a replay is answered before any limit is`,
    "  checked. (d) reads the same jobIds.",
    "- (a) ran before any send, on a quiet runtime. After the warm-up sends and after (b) the bench waited until a sample of those",
    "  sends had been delivered (sandbox upstream), so that their delivery did not overlap the next case: warm-up " +
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
    "- (b) accepted send: 2 sequential hops (Worker → workspace object → number object), a SQLite transaction and an alarm in each",
    `  object, ${f3(b.d1PerRequest)} D1 statements: ${f2(b.rps / a.rps)}× the baseline's req/s, p50 ${f2(b.p50 / a.p50)}× and p99 ${f2(b.p99 / a.p99)}× the`,
    `  baseline's, ${f1(b.cpuPerRequest)} ms CPU per send (${f1(b.cpuPerRequest / a.cpuPerRequest)}× a GET /me). That CPU includes the delivery each`,
    "  accepted send starts in the same runtime while (b) runs, which kept pace with acceptance (see the settle times above): the number",
    "  object's alarm claims the message (a hop back to the workspace object), calls the sandbox upstream and reports the result",
    "  (another hop), and both objects' alarms hand copies and events to queues whose consumers write D1. So (b)'s rate is that of",
    "  the whole accept-and-deliver pipeline on this runtime, not of the request path alone.",
    `- Worker ms vs client latency: for (d) the Worker's own handling took ${f1(d.serverMs)} ms on average while the client's p50 was`,
    `  ${f1(d.p50)} ms; for (b) ${f1(b.serverMs)} ms vs ${f1(b.p50)} ms. The rest is waiting for the runtime (local workerd runs all`,
    "  objects and the Worker on one thread: see \"runtime cores busy\"), wrangler dev's proxy in front of the Worker, and the client.",
    "- Every request pays the same fixed costs in all cases: the proxy hop and one access-log line (`src/middleware/request-id.ts`)",
    "  that wrangler prints. Cores busy by process (Worker runtime workerd / proxy workerd / wrangler's Node / bench client):",
    ...results.map(
      (r) =>
        `  ${r.label} ${r.coresByRole ? `${f2(r.coresByRole.runtime)} / ${f2(r.coresByRole.proxy)} / ${f2(r.coresByRole.wrangler)}` : "n/a"} / ${f2(r.clientCores)}`,
    ),
    `  The machine has ${os.cpus().length} cores. In (a), (c) and (d) the runtime, its proxy and wrangler together keep about`,
    `  ${f1(a.runtimeCores)} cores busy (in (a), ${a.coresByRole ? f2(a.coresByRole.proxy + a.coresByRole.wrangler) : "n/a"} of them in the proxy and wrangler, i.e. the local harness). In (b) the`,
    `  runtime used ${f2(b.runtimeCores)} cores in all, ${b.coresByRole ? f2(b.coresByRole.runtime) : "n/a"} of them in the workerd that runs the Worker and every object on one`,
    "  thread: (b) leaves cores idle and is limited by that one thread (and what it waits on), which serves the request path and the",
    "  background delivery of the sends alike.",
    "",
    "What the design does about it (this bench changes nothing on the request path; it measures):",
    "",
    "- No D1 on the send path: admission (idempotency, both rate limits, quota, the message record) is local SQLite in the workspace",
    "  object plus the number object's window and outbox; D1 gets a copy later through the message-copies queue. Measured above: 0",
    "  statements per send except the key-cache refreshes.",
    "- The D1 reads that remain are cached: API keys per isolate (5 s), a workspace's quota and connected numbers in its object (5 s;",
    "  admin changes invalidate it at once).",
    "- The second hop is the price of a per-number 2/s window and a per-number ordered outbox; replays and reads never take it.",
    "- Delivery is asynchronous (alarms, queues): the client's 201 does not wait for it, though locally it shares the one runtime.",
    "",
    ...storageSection(storage, seed),
    ...listSection(seed, listResults, listRow, a, listHeader),
    ...baselineSection(baseline, sendRatios, drift),
    `Run time: ${f0(runMs / 1000)} s: ${phases.join(", ")}; the rest is the ten ${DURATION_S} s cases, their warm-ups and stopping.`,
    "",
  ].join("\n");
  const baselineOut = {
    source: `bench/results.md of the run of ${new Date().toISOString()}`,
    drift,
    ratios: sendRatios,
  };
  return { markdown: md, problems, baselineOut };
}

// ---------------------------------------------------------------- entry

const watchdog = setTimeout(() => {
  console.error(`[bench] the run took longer than ${RUN_LIMIT_MS / 1000} s; stopping`);
  cleanup().then(() => process.exit(1));
}, RUN_LIMIT_MS);
watchdog.unref();

main()
  .catch(async (err) => {
    console.error(`[bench] ${err instanceof Fatal ? err.message : err?.stack ?? err}`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await cleanup();
    clearTimeout(watchdog);
  });
