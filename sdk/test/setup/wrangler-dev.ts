import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const WRANGLER = join(ROOT, "node_modules", ".bin", process.platform === "win32" ? "wrangler.cmd" : "wrangler");
// The dx range of ports on this machine: 8800-8809 (inspector 9800-9809). SDK_TEST_PORT overrides.
const PORT = Number(process.env.SDK_TEST_PORT ?? 8800);
const BASE_URL = `http://127.0.0.1:${PORT}`;
// Fixed secrets for this throwaway local Worker only; its state lives in a temporary directory.
const ADMIN_TOKEN = "sdk-test-admin-token-0123456789abcdef";
const SECRETS = {
  ADMIN_TOKEN,
  CREDENTIALS_ENCRYPTION_KEY: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
  JOB_ID_SECRET: "sdk-test-job-id-secret",
  UPSTREAM_APP_SECRET: "sdk-test-upstream-app-secret",
  UPSTREAM_VERIFY_TOKEN: "sdk-test-verify-token",
  // The webhook tests use a receiver on http://127.0.0.1.
  ALLOW_INSECURE_WEBHOOK_URLS: "true",
};

declare module "vitest" {
  export interface ProvidedContext {
    baseUrl: string;
    adminToken: string;
  }
}

async function waitUntilReady(child: ChildProcess, output: () => string): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < 90_000) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}:\n${output()}`);
    try {
      const res = await fetch(`${BASE_URL}/api/v1/openapi.json`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`wrangler dev did not answer on ${BASE_URL} within 90 s:\n${output()}`);
}

export default async function setup(project: TestProject) {
  const state = mkdtempSync(join(tmpdir(), "sdk-test-"));
  const envFile = join(state, ".env");
  writeFileSync(envFile, Object.entries(SECRETS).map(([k, v]) => `${k}=${v}`).join("\n"));
  const env = { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" };

  const migrate = spawnSync(WRANGLER, ["d1", "migrations", "apply", "DB", "--local", "--persist-to", state], { cwd: ROOT, env, encoding: "utf8" });
  if (migrate.status !== 0) throw new Error(`migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);

  let log = "";
  const child = spawn(
    WRANGLER,
    ["dev", "--ip", "127.0.0.1", "--port", String(PORT), "--inspector-port", String(PORT + 1000), "--persist-to", state, "--env-file", envFile, "--show-interactive-dev-session=false", "--log-level", "warn"],
    // Its own process group, so that teardown ends wrangler and workerd together.
    { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  child.stdout?.on("data", (d) => (log += d));
  child.stderr?.on("data", (d) => (log += d));

  const stop = async () => {
    if (child.exitCode === null && child.pid) {
      const exited = new Promise((r) => child.once("exit", r));
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (child.exitCode === null) process.kill(-child.pid, "SIGKILL");
    }
    rmSync(state, { recursive: true, force: true });
  };

  try {
    await waitUntilReady(child, () => log);
  } catch (err) {
    await stop();
    throw err;
  }
  project.provide("baseUrl", BASE_URL);
  project.provide("adminToken", ADMIN_TOKEN);
  return stop;
}
