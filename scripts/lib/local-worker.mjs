// A throwaway local Worker for the SDK tests and the documentation examples: `wrangler dev`
// on loopback with fixed secrets, its state in a temporary directory (migrated first), in its
// own process group so that stopping it ends workerd too. Node built-ins only.
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

async function waitUntilReady(baseUrl, child, output) {
  const started = Date.now();
  while (Date.now() - started < 90_000) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}:\n${output()}`);
    try {
      const res = await fetch(`${baseUrl}/api/v1/openapi.json`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`wrangler dev did not answer on ${baseUrl} within 90 s:\n${output()}`);
}

/**
 * Starts the Worker on 127.0.0.1:`port` (inspector on `port + 1000`); resolves once it answers.
 * `vars` override wrangler.toml's [vars] (e.g. the operator's base URL, for a fake operator on loopback).
 */
export async function startLocalWorker(port, vars = {}) {
  const baseUrl = `http://127.0.0.1:${port}`;
  const state = mkdtempSync(join(tmpdir(), "local-worker-"));
  const envFile = join(state, ".env");
  writeFileSync(envFile, Object.entries({ ...LOCAL_SECRETS, ...vars }).map(([k, v]) => `${k}=${v}`).join("\n"));
  const env = { ...process.env, CI: "true", CLOUDFLARE_CF_FETCH_ENABLED: "false" };

  const migrate = spawnSync(WRANGLER, ["d1", "migrations", "apply", "DB", "--local", "--persist-to", state], { cwd: ROOT, env, encoding: "utf8" });
  if (migrate.status !== 0) throw new Error(`migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);

  let log = "";
  const child = spawn(
    WRANGLER,
    ["dev", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(port + 1000), "--persist-to", state, "--env-file", envFile, "--show-interactive-dev-session=false", "--log-level", "warn"],
    { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: process.platform !== "win32" },
  );
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));

  const stop = async () => {
    if (child.exitCode === null && child.pid) {
      const exited = new Promise((r) => child.once("exit", r));
      const kill = (signal) => {
        try {
          if (process.platform === "win32") child.kill(signal);
          else process.kill(-child.pid, signal);
        } catch {
          // already gone
        }
      };
      kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (child.exitCode === null) kill("SIGKILL");
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
