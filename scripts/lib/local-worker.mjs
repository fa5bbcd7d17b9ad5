// The one way our scripts start a local Worker (`wrangler dev`): `npm run dev`, the bench, the
// soak, the browser tests, the documentation examples and the SDK tests all go through here.
// In the spirit of workers-sdk's e2e `LongLivedCommand`: each Worker runs in its own process
// group (wrangler and the workerd processes it starts), its output is captured or passed on,
// readiness is a probe with its own timer, and every group this process started is stopped on
// SIGINT, SIGTERM, SIGHUP and at exit, so that no workerd outlives the script or holds its port.
// Node built-ins only.
import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { constants as osConstants, tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** @typedef {import("node:child_process").ChildProcess} ChildProcess */
/** @typedef {import("node:stream").Readable} Readable */
/** @typedef {"SIGINT" | "SIGTERM" | "SIGHUP" | "SIGKILL"} StopSignal */

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const BIN_DIR = join(ROOT, "node_modules", ".bin");
const IS_WINDOWS = process.platform === "win32";
export const WRANGLER = join(BIN_DIR, IS_WINDOWS ? "wrangler.cmd" : "wrangler");
export const HOST = "127.0.0.1";

/** Fixed secrets of the throwaway Workers (SDK tests, examples, soak, drain bench) only. */
export const LOCAL_SECRETS = {
  ADMIN_TOKEN: "local-test-admin-token-0123456789abcdef",
  CREDENTIALS_ENCRYPTION_KEY: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
  JOB_ID_SECRET: "local-test-job-id-secret",
  UPSTREAM_APP_SECRET: "local-test-upstream-app-secret",
  UPSTREAM_VERIFY_TOKEN: "local-test-verify-token",
  // Webhook receivers on http://127.0.0.1, as in local development.
  ALLOW_INSECURE_WEBHOOK_URLS: "true",
};

/** The environment of a Worker nobody looks at: no prompts, no telemetry, no `request.cf` download. */
export const UNATTENDED_ENV = { CI: "true", CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" };

const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** @param {Record<string, string>} extra */
function childEnv(extra) {
  // The devDependency `node` (22) is in node_modules/.bin: first for wrangler even when the
  // script was started without npm.
  return { ...process.env, PATH: `${BIN_DIR}${delimiter}${process.env.PATH ?? ""}`, ...extra };
}

// ---------------------------------------------------------------- process groups and stopping

/** Every child started here that may still run; each leads its own process group (POSIX). */
const live = new Set(/** @type {ChildProcess[]} */ ([]));
/** @type {Array<(signal: NodeJS.Signals) => unknown>} */
const beforeExit = [];
let handlersInstalled = false;
/** @type {Promise<never> | null} */
let stopping = null;

/** @param {ChildProcess} child @param {NodeJS.Signals} signal */
function signalGroup(child, signal) {
  try {
    if (IS_WINDOWS || !child.pid) child.kill(signal);
    else process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** @param {ChildProcess} child */
function groupAlive(child) {
  if (!child.pid || IS_WINDOWS) return child.exitCode === null && child.signalCode === null;
  try {
    process.kill(-child.pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Sends `signal` to the child's whole group and waits until no process of it is left;
 * SIGKILL after `graceMs`.
 * @param {ChildProcess} child @param {NodeJS.Signals} signal
 */
async function endGroup(child, signal, graceMs = 5_000) {
  if (IS_WINDOWS && child.pid) {
    spawnSync("taskkill", ["/pid", String(child.pid), "/T", "/F"], { stdio: "ignore" });
    return;
  }
  signalGroup(child, signal);
  for (let waited = 0; waited < graceMs && groupAlive(child); waited += 50) await sleep(50);
  if (groupAlive(child)) {
    signalGroup(child, "SIGKILL");
    for (let waited = 0; waited < 5_000 && groupAlive(child); waited += 50) await sleep(50);
  }
}

/**
 * Runs `fn` when this process is stopped by a signal, before the Workers are stopped
 * (a script's own servers and threads). Ordered last registered, first run.
 * @param {(signal: NodeJS.Signals) => unknown} fn
 */
export function onStop(fn) {
  installHandlers();
  beforeExit.unshift(fn);
}

/**
 * What a signal does: the script's `onStop` functions, then the signal passed on to every
 * Worker's group (SIGHUP, a closed terminal, as SIGTERM), then exit with 128 + the signal's number.
 * A script whose Worker exits first may exit before this does, with the Worker's own code.
 * @param {"SIGINT" | "SIGTERM" | "SIGHUP"} signal
 * @returns {Promise<never>}
 */
export function stopAndExit(signal) {
  stopping ??= (async () => {
    for (const fn of beforeExit) {
      try {
        await fn(signal);
      } catch (err) {
        console.error(`stopping: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    await Promise.all([...live].map((child) => endGroup(child, signal === "SIGHUP" ? "SIGTERM" : signal)));
    process.exit(128 + (osConstants.signals[signal] ?? 1));
  })();
  return stopping;
}

function installHandlers() {
  if (handlersInstalled) return;
  handlersInstalled = true;
  for (const signal of /** @type {const} */ (["SIGINT", "SIGTERM", "SIGHUP"]))
    process.on(signal, () => void stopAndExit(signal));
  // However the script ends (an uncaught error, process.exit), no group is left behind. Only
  // synchronous work is possible here: a SIGTERM to each group, without waiting.
  process.on("exit", () => {
    for (const child of live) signalGroup(child, "SIGTERM");
  });
}

/**
 * @param {string[]} args
 * @param {{ env?: Record<string, string>, stdout?: "inherit" | "pipe", stderr?: "inherit" | "pipe" }} options
 */
function spawnWrangler(args, { env = {}, stdout = "pipe", stderr = "pipe" }) {
  installHandlers();
  const child = spawn(WRANGLER, args, {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ["ignore", stdout, stderr],
    shell: IS_WINDOWS, // .cmd shims need a shell on Windows
    // Its own process group (POSIX), so that signals reach wrangler and workerd together.
    detached: !IS_WINDOWS,
  });
  live.add(child);
  /** @type {Promise<number>} */
  const exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      live.delete(child);
      resolve(code ?? 128 + (signal ? (osConstants.signals[signal] ?? 1) : 1));
    });
    child.on("error", (err) => {
      live.delete(child);
      console.error(`could not start wrangler: ${err.message}`);
      resolve(1);
    });
  });
  return { child, exited };
}

// ---------------------------------------------------------------- output

/**
 * Where a child's output goes: passed on to ours (`inherit`), or kept in memory (the whole of
 * it, or its last `tailChars`) and appended to `logFile` when given.
 * @typedef {{ output?: "inherit" | "capture", logFile?: string, tailChars?: number }} OutputOptions
 */

/** @param {OutputOptions} options */
function outputSink({ output = "capture", logFile, tailChars = Infinity }) {
  let text = "";
  return {
    stdio: output === "inherit" ? /** @type {const} */ ("inherit") : /** @type {const} */ ("pipe"),
    /** @param {string} chunk */
    write(chunk) {
      if (logFile) appendFileSync(logFile, chunk);
      text += chunk;
      if (text.length > tailChars) text = text.slice(-tailChars);
    },
    /** @param {Readable | null} stream */
    follow(stream) {
      stream?.on("data", (d) => this.write(String(d)));
    },
    text: () => text,
  };
}

// ---------------------------------------------------------------- ports and state

/** A TCP port nobody listens on right now (the OS picks it). */
export function freePort(host = HOST) {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Whether something already listens on `host:port`. @param {number} port */
export function portInUse(port, host = HOST) {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * Applies the D1 migrations to the local database under `state` (wrangler's default
 * `.wrangler/state` without it). Resolves with wrangler's exit code and what it printed.
 * @param {{ state?: string, env?: Record<string, string> } & OutputOptions} options
 */
export async function migrateLocalD1({ state, env = {}, ...output }) {
  const sink = outputSink(output);
  // The command has no --yes flag: its "About to apply N migration(s)... continue?" prompt is
  // answered "yes" automatically only when wrangler sees no TTY or CI is set.
  const args = ["d1", "migrations", "apply", "DB", "--local", ...(state ? ["--persist-to", state] : [])];
  const { child, exited } = spawnWrangler(args, {
    env: { CI: "true", ...env },
    stdout: sink.stdio,
    stderr: sink.stdio,
  });
  sink.follow(child.stdout);
  sink.follow(child.stderr);
  return { code: await exited, output: sink.text() };
}

/** Writes `secrets` as an env file wrangler reads with `--env-file`. @param {string} path @param {Record<string, string>} secrets */
export function writeEnvFile(path, secrets) {
  writeFileSync(
    path,
    `${Object.entries(secrets)
      .map(([k, v]) => `${k}=${v}`)
      .join("\n")}\n`,
  );
  return path;
}

/**
 * The state of a throwaway Worker: `LOCAL_SECRETS` as its env file, the migrations applied.
 * Returns the env file's path.
 * @param {string} state
 */
export async function prepareState(state) {
  const envFile = writeEnvFile(join(state, ".env"), LOCAL_SECRETS);
  const migrated = await migrateLocalD1({ state, env: UNATTENDED_ENV });
  if (migrated.code !== 0) throw new Error(`migrations failed:\n${migrated.output}`);
  return envFile;
}

// ---------------------------------------------------------------- the Worker

/**
 * @typedef {object} WorkerOptions
 * @property {number} port
 * @property {string} [script] the Worker's entry instead of wrangler.toml's `main` (the bench's own, bench/worker.ts)
 * @property {number} [inspectorPort] wrangler's default (9229) when unset
 * @property {string} [state] `--persist-to`; wrangler's default `.wrangler/state` when unset
 * @property {string} [envFile] secrets (`--env-file`); `.dev.vars` when unset
 * @property {Record<string, string>} [vars] each passed as `--var NAME:value`
 * @property {string} [logLevel] `--log-level`
 * @property {Record<string, string>} [env] added to the child's environment
 * @property {(stream: Readable) => void} [pipeStdout] also gets wrangler's stdout (to show it filtered); it is kept and
 *   logged as `output` and `logFile` say all the same (stderr follows `output`)
 */

/** One `wrangler dev` on `127.0.0.1:port`, in its own process group. */
export class LocalWorker {
  /** @param {WorkerOptions & OutputOptions} options */
  constructor(options) {
    const { port, script, inspectorPort, state, envFile, vars = {}, logLevel, env = {}, pipeStdout } = options;
    this.port = port;
    this.baseUrl = `http://${HOST}:${port}`;
    this.sink = outputSink(options);
    const args = [
      "dev",
      ...(script ? [script] : []),
      "--ip",
      HOST,
      "--port",
      String(port),
      ...(inspectorPort ? ["--inspector-ip", HOST, "--inspector-port", String(inspectorPort)] : []),
      ...(state ? ["--persist-to", state] : []),
      ...(envFile ? ["--env-file", envFile] : []),
      ...Object.entries(vars).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
      "--show-interactive-dev-session=false",
      ...(logLevel ? ["--log-level", logLevel] : []),
    ];
    const { child, exited } = spawnWrangler(args, {
      env,
      stdout: pipeStdout ? "pipe" : this.sink.stdio,
      stderr: this.sink.stdio,
    });
    this.child = child;
    /** wrangler's exit code (128 + the signal's number when a signal ended it). */
    this.exited = exited;
    this.hasExited = false;
    exited.then(() => (this.hasExited = true));
    this.sink.follow(child.stdout);
    if (pipeStdout && child.stdout) pipeStdout(child.stdout);
    this.sink.follow(child.stderr);
  }

  /** The process group's id (wrangler's pid): whose processes are the runtime. */
  get pid() {
    return this.child.pid ?? null;
  }

  /** What wrangler printed (with `output: "capture"`: all of it, or its tail). */
  output() {
    return this.sink.text();
  }

  /**
   * Resolves with the milliseconds it took once the Worker answers 2xx on `path`; rejects when
   * wrangler exits first or after `limitMs` (both with wrangler's output). `onSlow` runs once
   * when `slowAfterMs` have passed (for a hint to a person waiting).
   * @param {{ limitMs?: number, path?: string, slowAfterMs?: number, onSlow?: () => void }} [options]
   */
  async waitUntilReady({ limitMs = 90_000, path = "/api/v1/openapi.json", slowAfterMs = Infinity, onSlow } = {}) {
    const started = Date.now();
    let hinted = false;
    while (Date.now() - started < limitMs) {
      if (this.hasExited)
        throw new Error(`wrangler dev exited with ${await this.exited} before it was ready:\n${this.output()}`);
      if (await answers(`${this.baseUrl}${path}`, 2_000)) return Date.now() - started;
      if (!hinted && Date.now() - started > slowAfterMs) {
        hinted = true;
        onSlow?.();
      }
      await sleep(250);
    }
    throw new Error(`wrangler dev did not answer on ${this.baseUrl} within ${limitMs / 1000} s:\n${this.output()}`);
  }

  /** SIGTERM to the whole group (SIGKILL after 5 s); resolves once no process of it is left. */
  stop() {
    return endGroup(this.child, "SIGTERM");
  }

  /** SIGKILL to the whole group, as a crash would; resolves once no process of it is left. */
  kill() {
    return endGroup(this.child, "SIGKILL");
  }
}

/**
 * Whether `url` answers 2xx within `limitMs`. The limit is a timer of our own raced against the
 * request, so the probe ends even if aborting never settles the request: after a restart, a soak
 * once stayed in this wait for minutes while the Worker answered curl in 60 ms.
 * @param {string} url @param {number} limitMs
 * @returns {Promise<boolean>}
 */
async function answers(url, limitMs) {
  const controller = new AbortController();
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  /** @type {Promise<boolean>} */
  const expired = new Promise((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve(false);
    }, limitMs);
  });
  const probe = (async () => {
    try {
      const res = await fetch(url, { signal: controller.signal });
      await res.arrayBuffer();
      return res.ok;
    } catch {
      return false; // not listening yet
    }
  })();
  try {
    return await Promise.race([probe, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A throwaway Worker for the SDK tests, the documentation examples and the drain bench: fixed
 * secrets, its state in a temporary directory (migrated first, removed by `stop`), inspector on
 * `port + 1000`. `vars` override wrangler.toml's [vars] (e.g. a fake operator on loopback).
 * @param {number} port @param {Record<string, string>} [vars]
 */
export async function startLocalWorker(port, vars = {}) {
  const state = mkdtempSync(join(tmpdir(), "local-worker-"));
  const worker = new LocalWorker({
    port,
    inspectorPort: port + 1000,
    state,
    envFile: await prepareState(state),
    vars,
    env: UNATTENDED_ENV,
    logLevel: "warn",
  });
  const stop = async () => {
    await worker.stop();
    rmSync(state, { recursive: true, force: true });
  };
  try {
    await worker.waitUntilReady();
  } catch (err) {
    await stop();
    throw err;
  }
  return { baseUrl: worker.baseUrl, adminToken: LOCAL_SECRETS.ADMIN_TOKEN, stop, log: () => worker.output() };
}
