// A throwaway local Worker for the SDK tests and the documentation examples: `wrangler dev`
// on loopback with fixed secrets, its state in a temporary directory (migrated first), in its
// own process group so that stopping it ends workerd too. Node built-ins only.
// The pieces (prepareState, spawnWorker, waitUntilReady) are shared with `npm run soak`, which
// kills and restarts the Worker on one state directory.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const WRANGLER = join(ROOT, "node_modules", ".bin", process.platform === "win32" ? "wrangler.cmd" : "wrangler");

/** Fixed secrets of these throwaway Workers only. */
export const LOCAL_SECRETS = {
  ADMIN_TOKEN: "local-test-admin-token-0123456789abcdef",
  CREDENTIALS_ENCRYPTION_KEY: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
  JOB_ID_SECRET: "local-test-job-id-secret",
  UPSTREAM_APP_SECRET: "local-test-upstream-app-secret",
  UPSTREAM_VERIFY_TOKEN: "local-test-verify-token",
  // Webhook receivers on http://127.0.0.1, as in local development.
  ALLOW_INSECURE_WEBHOOK_URLS: "true",
};

const childEnv = () => ({ ...process.env, CI: "true", CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" });

/** Writes the secrets file into `state` and applies the D1 migrations there; returns the secrets file's path. */
export function prepareState(state) {
  const envFile = join(state, ".env");
  writeFileSync(envFile, Object.entries(LOCAL_SECRETS).map(([k, v]) => `${k}=${v}`).join("\n"));
  const migrate = spawnSync(WRANGLER, ["d1", "migrations", "apply", "DB", "--local", "--persist-to", state], { cwd: ROOT, env: childEnv(), encoding: "utf8" });
  if (migrate.status !== 0) throw new Error(`migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);
  return envFile;
}

/**
 * Starts `wrangler dev` on 127.0.0.1:`port` over `state`, in its own process group.
 * `vars` are passed as `--var NAME:value`; `onOutput` receives wrangler's output.
 */
export function spawnWorker({ port, inspectorPort, state, envFile, vars = {}, onOutput }) {
  const child = spawn(
    WRANGLER,
    [
      "dev", "--ip", "127.0.0.1", "--port", String(port),
      "--inspector-ip", "127.0.0.1", "--inspector-port", String(inspectorPort),
      "--persist-to", state, "--env-file", envFile,
      ...Object.entries(vars).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
      "--show-interactive-dev-session=false", "--log-level", "warn",
    ],
    { cwd: ROOT, env: childEnv(), stdio: ["ignore", "pipe", "pipe"], detached: process.platform !== "win32" },
  );
  child.stdout.on("data", (d) => onOutput?.(String(d)));
  child.stderr.on("data", (d) => onOutput?.(String(d)));
  /** Sends `signal` to the whole group (wrangler and its workerd processes). */
  const signalGroup = (signal) => {
    try {
      if (process.platform === "win32") child.kill(signal);
      else if (child.pid) process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  const groupAlive = () => {
    if (!child.pid || process.platform === "win32") return child.exitCode === null;
    try {
      process.kill(-child.pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  return { child, signalGroup, groupAlive };
}

/**
 * Whether `url` answers 2xx within `limitMs`. The limit is a timer of our own raced against the
 * request, so the probe ends even if aborting never settles the request: after a restart, a soak
 * once stayed in this wait for minutes while the Worker answered curl in 60 ms.
 */
async function answers(url, limitMs) {
  const controller = new AbortController();
  let timer;
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

/** Resolves once the Worker answers on `baseUrl`; rejects when the child exits or after `limitMs`. */
export async function waitUntilReady(baseUrl, child, output, limitMs = 90_000) {
  const started = Date.now();
  while (Date.now() - started < limitMs) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}:\n${output()}`);
    if (await answers(`${baseUrl}/api/v1/openapi.json`, 2_000)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`wrangler dev did not answer on ${baseUrl} within ${limitMs / 1000} s:\n${output()}`);
}

/**
 * Starts the Worker on 127.0.0.1:`port` (inspector on `port + 1000`); resolves once it answers.
 * `vars` override wrangler.toml's [vars] (e.g. the operator's base URL, for a fake operator on loopback).
 */
export async function startLocalWorker(port, vars = {}) {
  const baseUrl = `http://127.0.0.1:${port}`;
  const state = mkdtempSync(join(tmpdir(), "local-worker-"));
  const envFile = prepareState(state);

  let log = "";
  const { child, signalGroup } = spawnWorker({ port, inspectorPort: port + 1000, state, envFile, vars, onOutput: (d) => (log += d) });

  const stop = async () => {
    if (child.exitCode === null && child.pid) {
      const exited = new Promise((r) => child.once("exit", r));
      signalGroup("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (child.exitCode === null) signalGroup("SIGKILL");
    }
    rmSync(state, { recursive: true, force: true });
  };

  try {
    await waitUntilReady(baseUrl, child, () => log);
  } catch (err) {
    await stop();
    throw err;
  }
  return { baseUrl, adminToken: LOCAL_SECRETS.ADMIN_TOKEN, stop, log: () => log };
}
