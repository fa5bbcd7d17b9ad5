#!/usr/bin/env node
// `npm run dev`: everything a fresh clone needs to serve the API locally.
//   1. .dev.vars from .dev.vars.example, with every "generate" value replaced by a fresh secret;
//   2. local D1 migrations;
//   3. `wrangler dev` on 127.0.0.1:$PORT (8787); its output (and the migrations') goes to
//      .wrangler/dev.log, and to the terminal only once the banner is out, on failure, or with
//      DEV_VERBOSE=1 (then all of it, as it comes);
//   4. a demo tenant (workspace, API key, sandbox number), reused across runs via .dev-demo.json;
//   5. .dev-server.json with the base URL (read by `npm run webhook:listen`), removed on exit;
//   6. a banner with the demo API key and copy-paste curl lines.
// wrangler runs in its own process group (scripts/lib/local-worker.mjs): Ctrl+C, SIGTERM and
// SIGHUP (a closed terminal) are passed on to the whole group, so wrangler and workerd stop
// together and free the port. This script exits with wrangler's code. Node built-ins only.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { randomUUID } from "node:crypto";
import { dirname, join, relative } from "node:path";
import { ensureDevVars as ensureDevVarsIn } from "./lib/dev-vars.mjs";
import { callApi } from "./lib/http-call.mjs";
import { dashboardBanner, demoDashboardSignIn } from "./lib/demo-dashboard.mjs";
import {
  HOST,
  LocalWorker,
  migrateLocalD1,
  onStop,
  portInUse,
  ROOT,
  stopAndExit,
  WRANGLER,
} from "./lib/local-worker.mjs";

/** @typedef {{ workspaceId: string, apiKey: string, channelNumberId: string }} Demo */

const DEMO_FILE = join(ROOT, ".dev-demo.json");
/** The banner's send goes here: a test contact of the demo number (see markDemoRecipient). */
const DEMO_RECIPIENT = "5511999998888";
const SERVER_FILE = join(ROOT, ".dev-server.json");
/** Everything wrangler prints, from the migrations on; started afresh by every run. */
const LOG_FILE = join(ROOT, ".wrangler", "dev.log");
const LOG_NAME = relative(ROOT, LOG_FILE);
/** DEV_VERBOSE=1: wrangler's output on the terminal as it comes, as well as in the log. */
const VERBOSE = /^(1|true|yes)$/i.test(process.env.DEV_VERBOSE ?? "");
/** Lines of the log shown when something fails. */
const TAIL_LINES = 40;

const PORT = parsePort(process.env.PORT ?? "8787");
const BASE_URL = `http://${HOST}:${PORT}`;

const say = (/** @type {string} */ msg) => console.log(`[dev] ${msg}`);
/** @param {string} msg @returns {never} */
const fail = (msg) => {
  console.error(`[dev] ${msg}`);
  process.exit(1);
};

/** @param {string} raw */
function parsePort(raw) {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) fail(`PORT must be a TCP port number, got "${raw}".`);
  return n;
}

// ---------------------------------------------------------------- signals

let stopping = false;
// The launcher passes a signal on to wrangler's group; wrangler's exit then ends this script with its code.
onStop(() => (stopping = true));
// `kill <pid of npm run dev>` ends npm without telling this script: it notices that its parent
// is gone (it was re-parented) and stops the server as if the terminal had closed.
const launcher = process.ppid;
setInterval(() => process.ppid !== launcher && !stopping && ((stopping = true), stopAndExit("SIGHUP")), 1_000).unref();
// However this script ends, it leaves no stale .dev-server.json (the launcher stops wrangler).
process.on("exit", () => rmSync(SERVER_FILE, { force: true }));

/** Local dev needs no real `request.cf` data; fetching it prints stack traces when offline. */
const CF_FETCH = { CLOUDFLARE_CF_FETCH_ENABLED: process.env.CLOUDFLARE_CF_FETCH_ENABLED ?? "false" };

// ---------------------------------------------------------------- wrangler's output

/**
 * Until the banner is out, wrangler's output (its bindings table, the warning about cron
 * triggers, one or two lines per set-up request) only goes to the log: the terminal shows what
 * a newcomer needs. After the banner, it is shown as it comes (requests, errors, reloads).
 */
let showWrangler = VERBOSE;
let lastOutputAt = Date.now();

/** The last `n` lines of the log, for a failure. */
function logTail(n = TAIL_LINES) {
  try {
    return readFileSync(LOG_FILE, "utf8").trimEnd().split("\n").slice(-n).join("\n");
  } catch {
    return "";
  }
}

/** Prints the log's tail (unless it was shown already), saying where the whole of it is. */
function showLogTail() {
  if (showWrangler) {
    say(`wrangler's output is above and in ${LOG_NAME}.`);
    return;
  }
  console.error(`[dev] the last ${TAIL_LINES} lines of wrangler's output (all of it: ${LOG_NAME}):`);
  console.error(logTail());
}

/** Resolves once wrangler has printed nothing for `quietMs` (at most `limitMs`): set-up lines come before the banner, not after it. */
async function outputSettled(quietMs = 300, limitMs = 2_000) {
  const started = Date.now();
  while (Date.now() - lastOutputAt < quietMs && Date.now() - started < limitMs)
    await new Promise((r) => setTimeout(r, 50));
}

/**
 * wrangler dev prints its bindings table again whenever the local dev registry changes
 * (another local Worker starts or stops). The same table twice is noise: only a changed
 * one is shown again, and the "Connection status updated" line that precedes it is dropped.
 * @param {import("node:stream").Readable} stream
 */
function printWithoutRepeatedBindings(stream) {
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  /** @type {string[] | null} */
  let table = null;
  /** @type {string | null} */
  let lastTable = null;
  const flush = () => {
    const text = (table ?? []).join("\n");
    if (text !== lastTable && showWrangler) process.stdout.write(`${text}\n`);
    lastTable = text;
    table = null;
  };
  lines.on("line", (line) => {
    if (table) {
      table.push(line);
      if (line.trim() === "") flush();
    } else if (line.includes("Your Worker has access to the following bindings")) {
      table = [line];
    } else if (!line.includes("Connection status updated") && showWrangler) {
      process.stdout.write(`${line}\n`);
    }
  });
  lines.on("close", () => table && flush());
}

// ---------------------------------------------------------------- 1. .dev.vars

const ensureDevVars = () => ensureDevVarsIn(ROOT, { say, fail });

// ---------------------------------------------------------------- 2. migrations

// Wrangler prints its table of migrations again after each one it applies (a first start printed
// ~300 lines before the banner): its output is kept, summed up in one line, and shown only on failure.
async function applyMigrations() {
  const { code, output } = await migrateLocalD1({ output: "capture", env: CF_FETCH, logFile: LOG_FILE });
  if (stopping) process.exit(code);
  if (code !== 0) {
    process.stderr.write(output);
    fail(`migrations failed (exit code ${code}); wrangler's output is above (and in ${LOG_NAME}).`);
  }
  const applied = new Set(output.match(/\d{4}_[\w-]+\.sql/g) ?? []);
  say(
    applied.size > 0
      ? `local D1: applied ${applied.size} migration(s) (${[...applied].at(-1)} the last)`
      : "local D1: migrations up to date",
  );
}

// ---------------------------------------------------------------- 4. demo tenant

/** @param {string} method @param {string} path @param {string} token @param {unknown} [body] */
const call = (method, path, token, body) => callApi(BASE_URL, method, path, token, body);

/** @param {string} adminToken @param {string} path @param {unknown} body @param {string} what */
async function adminCall(adminToken, path, body, what) {
  const res = await call("POST", `/admin/v1${path}`, adminToken, body);
  if (res.status !== 201) throw new Error(`creating ${what} answered ${res.status}: ${res.text.slice(0, 500)}`);
  return res.json;
}

/** @returns {Demo | null} */
function readDemo() {
  try {
    const demo = JSON.parse(readFileSync(DEMO_FILE, "utf8"));
    return demo && demo.workspaceId && demo.apiKey && demo.channelNumberId ? demo : null;
  } catch {
    return null;
  }
}

/** @param {Demo} demo */
async function demoStillValid(demo) {
  const me = await call("GET", "/api/v1/me", demo.apiKey);
  if (me.status !== 200 || me.json?.workspace?.id !== demo.workspaceId) return false;
  const number = await call("GET", `/api/v1/channel-numbers/${encodeURIComponent(demo.channelNumberId)}`, demo.apiKey);
  return number.status === 200;
}

/** @param {string} adminToken @returns {Promise<Demo>} */
async function ensureDemoTenant(adminToken) {
  const saved = readDemo();
  if (saved && (await demoStillValid(saved))) {
    say("reusing the demo tenant in .dev-demo.json");
    return saved;
  }
  say(
    saved ? "the demo tenant in .dev-demo.json no longer works here; creating a new one" : "creating the demo tenant",
  );
  const workspace = await adminCall(
    adminToken,
    "/workspaces",
    { name: "Demo workspace", plan: "pro" },
    "the demo workspace",
  );
  const key = await adminCall(
    adminToken,
    `/workspaces/${workspace.id}/api-keys`,
    { name: "Demo key (npm run dev)" },
    "the demo API key",
  );
  const number = await adminCall(
    adminToken,
    `/workspaces/${workspace.id}/channel-numbers`,
    { displayPhoneNumber: "15550000001", upstream: { type: "sandbox" } },
    "the sandbox number",
  );
  const demo = { workspaceId: workspace.id, apiKey: key.key, channelNumberId: number.id };
  writeFileSync(DEMO_FILE, `${JSON.stringify(demo, null, 2)}\n`, { mode: 0o600 });
  say("saved the demo tenant to .dev-demo.json");
  return demo;
}

/**
 * The sandbox holds sends to the 24-hour window as the operator does; the banner's recipient is
 * made a test contact (on every start: adding it again changes nothing) so the printed send is `sent`.
 * @param {Demo} demo
 */
async function markDemoRecipient(demo) {
  const res = await call("POST", "/api/v1/sandbox/test-contacts", demo.apiKey, {
    channelNumberId: demo.channelNumberId,
    phone: DEMO_RECIPIENT,
  });
  if (res.status !== 201 && res.status !== 200)
    throw new Error(`marking ${DEMO_RECIPIENT} as a test contact answered ${res.status}: ${res.text.slice(0, 500)}`);
}

// ---------------------------------------------------------------- 5. banner

/** @param {Demo} demo */
function banner(demo) {
  const auth = `-H "Authorization: Bearer ${demo.apiKey}"`;
  const body = JSON.stringify({
    channelNumberId: demo.channelNumberId,
    to: DEMO_RECIPIENT,
    text: { body: "Hello from the sandbox" },
  });
  const rule = "=".repeat(78);
  return [
    "",
    rule,
    "  Messaging gateway: local dev server ready",
    rule,
    `  Base URL          ${BASE_URL}`,
    `  API docs          ${BASE_URL}/docs   (OpenAPI: ${BASE_URL}/api/v1/openapi.json)`,
    `  Demo workspace    ${demo.workspaceId}`,
    `  Demo API key      ${demo.apiKey}`,
    `  Sandbox number    channelNumberId ${demo.channelNumberId}`,
    "  Admin API         /admin/v1 with Authorization: Bearer <ADMIN_TOKEN>, see .dev.vars",
    `  Server log        ${LOG_NAME}: all of wrangler's output (new requests and errors`,
    "                    also show below; DEV_VERBOSE=1 npm run dev shows all of it here)",
    "",
    "  Who am I:",
    `    curl -s ${BASE_URL}/api/v1/me ${auth}`,
    "",
    "  Send a message (use a NEW Idempotency-Key for every message; repeating one",
    "  with the same body returns the original jobId and sends nothing):",
    `    curl -s -X POST ${BASE_URL}/api/v1/messages \\`,
    `      ${auth} \\`,
    `      -H "Content-Type: application/json" \\`,
    `      -H "Idempotency-Key: ${randomUUID()}" \\`,
    `      -d '${body}'`,
    `  (${DEMO_RECIPIENT} is a test contact of the sandbox number; like the operator, the sandbox fails other`,
    "  recipients with service_window_closed until they write: see docs/customers/sandbox.md.)",
    "",
    "  Check it (jobId from the send's response):",
    `    curl -s ${BASE_URL}/api/v1/messages/<jobId> ${auth}`,
    "",
    "  See webhooks arrive: `npm run webhook:listen` in a second terminal (it registers itself).",
    "",
    "  Ctrl+C stops the server (pending webhook retries are dropped: local queues are in memory).",
    "  The demo tenant is kept in .dev-demo.json and reused; delete that file (or .wrangler/) to start over.",
    rule,
    "",
  ].join("\n");
}

// ---------------------------------------------------------------- main

async function main() {
  if (!existsSync(WRANGLER)) fail(`${WRANGLER} not found: run \`npm install\` first.`);
  mkdirSync(dirname(LOG_FILE), { recursive: true });
  writeFileSync(LOG_FILE, `# npm run dev, ${new Date().toISOString()}\n`);
  const { adminToken } = ensureDevVars();
  await applyMigrations();

  if (await portInUse(PORT))
    fail(`${HOST}:${PORT} is already in use (another \`npm run dev\`?). Stop it or set PORT=<port>.`);
  say(`starting wrangler dev on ${BASE_URL}`);
  const worker = new LocalWorker({
    port: PORT,
    // Both streams go to the log (the launcher writes it); the terminal gets them once showWrangler is set.
    output: "capture",
    logFile: LOG_FILE,
    tailChars: 64 * 1024,
    pipeStdout: (stdout) => {
      stdout.on("data", () => (lastOutputAt = Date.now()));
      printWithoutRepeatedBindings(stdout);
    },
    // Our stdout is wrangler's when it is piped through this script: keep its colours.
    env: { ...CF_FETCH, ...(process.stdout.isTTY && !process.env.NO_COLOR ? { FORCE_COLOR: "1" } : {}) },
  });
  worker.child.stderr?.on("data", (d) => {
    lastOutputAt = Date.now();
    if (showWrangler) process.stderr.write(d);
  });
  worker.exited.then((code) => {
    if (!stopping && code !== 0) {
      console.error(`[dev] wrangler dev exited with code ${code}.`);
      showLogTail();
    }
    process.exit(code);
  });

  try {
    await worker.waitUntilReady({
      limitMs: Infinity,
      slowAfterMs: 90_000,
      onSlow: () => {
        say(
          `still waiting for ${BASE_URL}/api/v1/openapi.json (a build error waits for a fix); from now on wrangler's output is shown as it comes.`,
        );
        showLogTail();
        showWrangler = true;
      },
    });
  } catch {
    return; // wrangler exited: this script exits with its code
  }
  writeFileSync(
    SERVER_FILE,
    `${JSON.stringify({ baseUrl: BASE_URL, pid: process.pid, startedAt: new Date().toISOString() }, null, 2)}\n`,
  );
  try {
    const demo = await ensureDemoTenant(adminToken);
    await markDemoRecipient(demo);
    const dashboard = await demoDashboardSignIn(call, adminToken, BASE_URL, demo.workspaceId);
    await outputSettled();
    if (!stopping) console.log(banner(demo) + dashboardBanner(dashboard));
    showWrangler = true;
  } catch (err) {
    if (!stopping) {
      console.error(
        `[dev] the server is up at ${BASE_URL}, but setting up the demo tenant failed: ${err instanceof Error ? err.message : String(err)}`,
      );
      await outputSettled();
      showLogTail();
      showWrangler = true;
      console.error("[dev] fix the cause and restart `npm run dev`; wrangler keeps running meanwhile.");
    }
  }
}

main().catch((err) => {
  console.error(`[dev] ${err?.stack ?? err}`);
  process.exit(1);
});
