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
//   (seed SEED_MESSAGES message records into the list workspace's object: POST /bench/seed)
//   (a2) GET /api/v1/me                 the baseline before the list cases
//   (e) (f) (g) GET /api/v1/messages    first page, a filtered page, the second page (cursor),
//                                       on the workspace with a million messages
//   (a2') GET /api/v1/me                its drift check
// It also counts the D1 statements the Worker runs per accepted send (Server-Timing,
// SERVER_TIMING=true), compares the send ratios with an earlier run's (.wrangler/bench-baseline.json), and writes
// the tables, the arithmetic and the machine to bench/results.md.
// `node scripts/bench.mjs --save-baseline` also writes this run's ratios there, for the next run on this machine.
//
// The Worker is the bench's own entry (bench/worker.ts): production's, with the seed route.
// Everything it starts is its own: wrangler dev on 127.0.0.1 (port BENCH_PORT and the
// next one for the inspector when set, free ports otherwise) with its own state
// (.wrangler/bench-state, deleted at start), its own tenants, and it stops the whole
// process group at the end, on error, on Ctrl+C and on its time limit.
// wrangler's output goes to .wrangler/bench-wrangler.log.
// The cases live in scripts/bench/cases/, the report in scripts/bench/report/; this file runs
// them in order on one local Worker (scripts/lib/local-worker.mjs).

import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import { ensureDevVars } from "./lib/dev-vars.mjs";
import { callApi } from "./lib/http-call.mjs";
import { freePort, HOST, LocalWorker, migrateLocalD1, onStop, ROOT } from "./lib/local-worker.mjs";
import { runListCases } from "./bench/cases/list.mjs";
import { runRequestCases } from "./bench/cases/request-cases.mjs";
import { runStorageCase } from "./bench/cases/storage.mjs";
import { createTenants } from "./bench/cases/tenants.mjs";
import { fail, Fatal, seconds } from "./bench/context.mjs";
import { hasAutocannon, loadRunner } from "./bench/load.mjs";
import { READY_LIMIT_MS, RUN_LIMIT_MS } from "./bench/parameters.mjs";
import { buildReport } from "./bench/report/build-report.mjs";
import { describeMachine } from "./bench/report/machine.mjs";
import { retentionState } from "./bench/workspace-file.mjs";

/** @typedef {import("./bench/context.mjs").BenchContext} BenchContext */

const STATE_DIR = join(ROOT, ".wrangler", "bench-state");
const LOG_FILE = join(ROOT, ".wrangler", "bench-wrangler.log");
const RESULTS_FILE = join(ROOT, "bench", "results.md");
const BASELINE_FILE = join(ROOT, ".wrangler", "bench-baseline.json");
const SAVE_BASELINE = process.argv.includes("--save-baseline");
/** Our environment for wrangler: no telemetry. */
const WRANGLER_ENV = { WRANGLER_SEND_METRICS: "false" };

const say = (/** @type {string} */ msg) => console.log(`[bench] ${msg}`);

/** The Worker running now: the one the launcher stops on a signal, the watchdog and the end stop too. @type {LocalWorker | null} */
let current = null;
const stopWorker = async () => {
  await current?.stop();
  current = null;
};
onStop((signal) => console.error(`[bench] ${signal}: stopping what the bench started`));

function tailOfLog(lines = 30) {
  try {
    return readFileSync(LOG_FILE, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/** The ratios of an earlier run that this run's send ratios are compared with, or null. */
function readBaseline() {
  try {
    return JSON.parse(readFileSync(BASELINE_FILE, "utf8"));
  } catch {
    return null;
  }
}

async function main() {
  const runStarted = Date.now();
  const runId = randomBytes(4).toString("hex");
  const loadBefore = os.loadavg();
  /** Where the run's wall time went, for the report. @type {string[]} */
  const phases = [];
  const { adminToken } = ensureDevVars(ROOT, { say, fail });
  if (!hasAutocannon()) fail("autocannon is not installed: run `npm install` first.");

  rmSync(STATE_DIR, { recursive: true, force: true });
  mkdirSync(STATE_DIR, { recursive: true });
  writeFileSync(LOG_FILE, "");

  say(`applying D1 migrations to ${STATE_DIR.slice(ROOT.length + 1)} (its own state; the dev data is untouched)`);
  const migrateStarted = Date.now();
  const migrated = await migrateLocalD1({ state: STATE_DIR, env: WRANGLER_ENV, logFile: LOG_FILE });
  phases.push(`migrations ${seconds(Date.now() - migrateStarted)}`);
  if (migrated.code !== 0) fail(`migrations failed (exit ${migrated.code}):\n${tailOfLog()}`);

  const fixedPort = Number(process.env.BENCH_PORT);
  if (process.env.BENCH_PORT && !(Number.isInteger(fixedPort) && fixedPort > 0 && fixedPort < 65535))
    fail(`BENCH_PORT=${process.env.BENCH_PORT} is not a port`);
  const port = fixedPort || (await freePort());
  const inspectorPort = fixedPort ? fixedPort + 1 : await freePort();
  const baseUrl = `http://${HOST}:${port}`;

  /** wrangler dev on the bench's state and ports. @param {string} label */
  async function startWorker(label) {
    say(`starting wrangler dev on ${baseUrl} (SERVER_TIMING=true; log: ${LOG_FILE.slice(ROOT.length + 1)})`);
    current = new LocalWorker({
      script: "bench/worker.ts",
      port,
      inspectorPort,
      state: STATE_DIR,
      vars: { SERVER_TIMING: "true" },
      env: WRANGLER_ENV,
      logFile: LOG_FILE,
      tailChars: 20_000,
    });
    let readyMs = 0;
    try {
      readyMs = await current.waitUntilReady({ limitMs: READY_LIMIT_MS });
    } catch {
      fail(
        current.hasExited
          ? `wrangler dev exited before it was ready:\n${tailOfLog()}`
          : `wrangler dev was not ready within ${READY_LIMIT_MS / 1000} s:\n${tailOfLog()}`,
      );
    }
    say(`ready after ${seconds(readyMs)}`);
    phases.push(`${label} ${seconds(readyMs)}`);
  }
  const stillRunning = () => {
    if (!current || current.hasExited) fail(`wrangler dev exited during the run:\n${tailOfLog()}`);
  };

  /** @type {BenchContext} */
  const ctx = {
    runId,
    // The runtime's CPU is that of the Worker's process group now.
    load: loadRunner({ baseUrl, group: () => (process.platform === "win32" ? null : (current?.pid ?? null)) }),
    call: (method, path, token, body) => callApi(baseUrl, method, path, token, body),
    say,
    fail,
    phase: async (name, fn) => {
      const t0 = Date.now();
      const out = await fn();
      phases.push(`${name} ${seconds(Date.now() - t0)}`);
      return out;
    },
    phases,
  };

  await startWorker("wrangler dev ready");
  const { workspaces, store, list, targets } = await createTenants(ctx, adminToken);
  const requestCases = await runRequestCases(ctx, { workspaces, targets, adminToken });
  stillRunning();
  const { storage } = await runStorageCase(ctx, { store, stateDir: STATE_DIR, adminToken });
  const { seed, listResults, listFile } = await runListCases(ctx, {
    list,
    workspaces,
    stateDir: STATE_DIR,
    adminToken,
  });
  stillRunning();
  await stopWorker();
  say("stopped wrangler dev");
  // The retention alarm must have left the seeded rows where they were for the whole measurement.
  const retained = retentionState(listFile);

  const report = buildReport({
    ...requestCases,
    loadBefore,
    loadAfter: os.loadavg(),
    phases,
    storage,
    seed: { ...seed, retained },
    listResults,
    baseline: readBaseline(),
    runMs: Date.now() - runStarted,
    machine: describeMachine(ROOT),
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

const watchdog = setTimeout(() => {
  console.error(`[bench] the run took longer than ${RUN_LIMIT_MS / 1000} s; stopping`);
  stopWorker().then(() => process.exit(1));
}, RUN_LIMIT_MS);
watchdog.unref();

main()
  .catch(async (err) => {
    console.error(`[bench] ${err instanceof Fatal ? err.message : (err?.stack ?? err)}`);
    process.exitCode = 1;
  })
  .finally(async () => {
    await stopWorker();
    clearTimeout(watchdog);
  });
