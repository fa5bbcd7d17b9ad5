#!/usr/bin/env node
// `npm run dev`: everything a fresh clone needs to serve the API locally.
//   1. .dev.vars from .dev.vars.example, with every "generate" value replaced by a fresh secret;
//   2. local D1 migrations;
//   3. `wrangler dev` on 127.0.0.1:$PORT (8787), output streamed as is;
//   4. a demo tenant (workspace, API key, sandbox number), reused across runs via .dev-demo.json;
//   5. .dev-server.json with the base URL (read by `npm run webhook:listen`), removed on exit;
//   6. a banner with the demo API key and copy-paste curl lines.
// wrangler runs in its own process group: Ctrl+C, SIGTERM and SIGHUP (a closed terminal) are
// forwarded to the whole group, so wrangler and workerd stop together and free the port.
// This script exits with wrangler's code. Node built-ins only.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { randomUUID } from "node:crypto";
import { connect } from "node:net";
import { constants as osConstants } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureDevVars as ensureDevVarsIn } from "./lib/dev-vars.mjs";
import { callApi } from "./lib/http-call.mjs";
import { dashboardBanner, demoDashboardSignIn } from "./lib/demo-dashboard.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const DEMO_FILE = join(ROOT, ".dev-demo.json");
const SERVER_FILE = join(ROOT, ".dev-server.json");
const BIN_DIR = join(ROOT, "node_modules", ".bin");
const IS_WINDOWS = process.platform === "win32";
const WRANGLER = join(BIN_DIR, IS_WINDOWS ? "wrangler.cmd" : "wrangler");

const HOST = "127.0.0.1";
const PORT = parsePort(process.env.PORT ?? "8787");
const BASE_URL = `http://${HOST}:${PORT}`;

const say = (msg) => console.log(`[dev] ${msg}`);
const fail = (msg) => {
  console.error(`[dev] ${msg}`);
  process.exit(1);
};

function parsePort(raw) {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) fail(`PORT must be a TCP port number, got "${raw}".`);
  return n;
}

// ---------------------------------------------------------------- children and signals

/** The child currently running (migrations, then wrangler dev); signals are forwarded to its process group. */
let current = null;
let stopping = false;

const running = (child) => child && child.exitCode === null && child.signalCode === null;

/** Signals the child's whole process group (wrangler and the workerd it started). */
function signalChild(signal) {
  if (!running(current)) return;
  try {
    if (IS_WINDOWS) current.kill(signal);
    else process.kill(-current.pid, signal);
  } catch {
    // already gone
  }
}

function onSignal(signal) {
  stopping = true;
  if (running(current)) {
    // A closed terminal (SIGHUP) stops the server the way `kill` does.
    signalChild(signal === "SIGHUP" ? "SIGTERM" : signal);
  } else {
    process.exit(128 + (osConstants.signals[signal] ?? 1));
  }
}
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => onSignal(signal));
// `kill <pid of npm run dev>` ends npm without telling this script: it notices that its parent
// is gone (it was re-parented) and stops the server as if the terminal had closed.
const launcher = process.ppid;
setInterval(() => process.ppid !== launcher && !stopping && onSignal("SIGHUP"), 1_000).unref();
process.on("exit", () => {
  // However this script ends, it never leaves wrangler or workerd behind, nor a stale .dev-server.json.
  signalChild("SIGTERM");
  rmSync(SERVER_FILE, { force: true });
});

const childEnv = (extra = {}) => ({
  ...process.env,
  // The devDependency `node` (22) is in node_modules/.bin: keep it first for wrangler
  // even when this script was started without npm.
  PATH: `${BIN_DIR}${delimiter}${process.env.PATH ?? ""}`,
  // Local dev needs no real `request.cf` data; fetching it prints stack traces when offline.
  CLOUDFLARE_CF_FETCH_ENABLED: process.env.CLOUDFLARE_CF_FETCH_ENABLED ?? "false",
  // Our stdout is wrangler's when it is piped through this script: keep its colours.
  ...(process.stdout.isTTY && !process.env.NO_COLOR ? { FORCE_COLOR: "1" } : {}),
  ...extra,
});

/**
 * wrangler dev prints its bindings table again whenever the local dev registry changes
 * (another local Worker starts or stops). The same table twice is noise: only a changed
 * one is shown again, and the "Connection status updated" line that precedes it is dropped.
 */
function printWithoutRepeatedBindings(stream) {
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let table = null;
  let lastTable = null;
  const flush = () => {
    const text = table.join("\n");
    if (text !== lastTable) process.stdout.write(`${text}\n`);
    lastTable = text;
    table = null;
  };
  lines.on("line", (line) => {
    if (table) {
      table.push(line);
      if (line.trim() === "") flush();
    } else if (line.includes("Your Worker has access to the following bindings")) {
      table = [line];
    } else if (!line.includes("Connection status updated")) {
      process.stdout.write(`${line}\n`);
    }
  });
  lines.on("close", () => table && flush());
}

function spawnWrangler(args, { env = {}, stdin = "ignore", filterStdout = false } = {}) {
  const child = spawn(WRANGLER, args, {
    cwd: ROOT,
    env: childEnv(env),
    stdio: [stdin, filterStdout ? "pipe" : "inherit", "inherit"],
    shell: IS_WINDOWS, // .cmd shims need a shell on Windows
    // Its own process group (POSIX), so that signals reach wrangler and workerd together.
    detached: !IS_WINDOWS,
  });
  if (filterStdout) printWithoutRepeatedBindings(child.stdout);
  current = child;
  const exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => resolve(code ?? 128 + (osConstants.signals[signal] ?? 1)));
    child.on("error", (err) => {
      console.error(`[dev] could not start wrangler: ${err.message}`);
      resolve(1);
    });
  });
  return { child, exited };
}

// ---------------------------------------------------------------- 1. .dev.vars

const ensureDevVars = () => ensureDevVarsIn(ROOT, { say, fail });

// ---------------------------------------------------------------- 2. migrations

async function applyMigrations() {
  say("applying local D1 migrations (wrangler d1 migrations apply DB --local)");
  // The command has no --yes flag: its "About to apply N migration(s)... continue?" prompt is
  // answered "yes" automatically only when wrangler sees no TTY or CI is set. stdin is not
  // a TTY here and CI=true makes that explicit.
  const { exited } = spawnWrangler(["d1", "migrations", "apply", "DB", "--local"], { env: { CI: "true" } });
  const code = await exited;
  if (stopping) process.exit(code);
  if (code !== 0) fail(`migrations failed (exit code ${code}); see the output above.`);
}

// ---------------------------------------------------------------- 3. wrangler dev

function portInUse(port) {
  return new Promise((resolve) => {
    const socket = connect({ host: HOST, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls the OpenAPI document until it answers 200; false if wrangler exits first. */
async function waitUntilReady(exited) {
  let done = false;
  exited.then(() => (done = true));
  const started = Date.now();
  let hinted = false;
  while (!done) {
    try {
      const res = await fetch(`${BASE_URL}/api/v1/openapi.json`, { signal: AbortSignal.timeout(5000) });
      await res.arrayBuffer();
      if (res.status === 200) return true;
    } catch {
      // not listening yet
    }
    if (!hinted && Date.now() - started > 90_000) {
      hinted = true;
      say(`still waiting for ${BASE_URL}/api/v1/openapi.json; check wrangler's output above (a build error waits for a fix).`);
    }
    await sleep(500);
  }
  return false;
}

// ---------------------------------------------------------------- 4. demo tenant

const call = (method, path, token, body) => callApi(BASE_URL, method, path, token, body);

async function adminCall(adminToken, path, body, what) {
  const res = await call("POST", `/admin/v1${path}`, adminToken, body);
  if (res.status !== 201) throw new Error(`creating ${what} answered ${res.status}: ${res.text.slice(0, 500)}`);
  return res.json;
}

function readDemo() {
  try {
    const demo = JSON.parse(readFileSync(DEMO_FILE, "utf8"));
    return demo && demo.workspaceId && demo.apiKey && demo.channelNumberId ? demo : null;
  } catch {
    return null;
  }
}

async function demoStillValid(demo) {
  const me = await call("GET", "/api/v1/me", demo.apiKey);
  if (me.status !== 200 || me.json?.workspace?.id !== demo.workspaceId) return false;
  const number = await call("GET", `/api/v1/channel-numbers/${encodeURIComponent(demo.channelNumberId)}`, demo.apiKey);
  return number.status === 200;
}

async function ensureDemoTenant(adminToken) {
  const saved = readDemo();
  if (saved && (await demoStillValid(saved))) {
    say("reusing the demo tenant in .dev-demo.json");
    return saved;
  }
  say(saved ? "the demo tenant in .dev-demo.json no longer works here; creating a new one" : "creating the demo tenant");
  const workspace = await adminCall(adminToken, "/workspaces", { name: "Demo workspace", plan: "pro" }, "the demo workspace");
  const key = await adminCall(adminToken, `/workspaces/${workspace.id}/api-keys`, { name: "Demo key (npm run dev)" }, "the demo API key");
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

// ---------------------------------------------------------------- 5. banner

function banner(demo) {
  const auth = `-H "Authorization: Bearer ${demo.apiKey}"`;
  const body = JSON.stringify({ channelNumberId: demo.channelNumberId, to: "5511999998888", text: { body: "Hello from the sandbox" } });
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
  const { adminToken } = ensureDevVars();
  await applyMigrations();

  if (await portInUse(PORT)) fail(`${HOST}:${PORT} is already in use (another \`npm run dev\`?). Stop it or set PORT=<port>.`);
  say(`starting wrangler dev on ${BASE_URL}`);
  const { exited } = spawnWrangler(["dev", "--ip", HOST, "--port", String(PORT), "--show-interactive-dev-session=false"], { filterStdout: true });
  exited.then((code) => process.exit(code));

  if (!(await waitUntilReady(exited))) return;
  writeFileSync(SERVER_FILE, `${JSON.stringify({ baseUrl: BASE_URL, pid: process.pid, startedAt: new Date().toISOString() }, null, 2)}\n`);
  try {
    const demo = await ensureDemoTenant(adminToken);
    const dashboard = await demoDashboardSignIn(call, adminToken, BASE_URL, demo.workspaceId);
    if (!stopping) console.log(banner(demo) + dashboardBanner(dashboard));
  } catch (err) {
    if (!stopping) {
      console.error(`[dev] the server is up at ${BASE_URL}, but setting up the demo tenant failed: ${err.message}`);
      console.error("[dev] fix the cause and restart `npm run dev`; wrangler keeps running meanwhile.");
    }
  }
}

main().catch((err) => {
  console.error(`[dev] ${err?.stack ?? err}`);
  process.exit(1);
});
