// The real-browser harness of `npm run test:e2e`: a `wrangler dev` of this
// Worker on loopback (its own state directory, fixed test secrets), a local
// webhook receiver, and a headless Chromium driven by playwright-core.
// Node built-ins plus playwright-core and @axe-core/playwright.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { chromium } from "playwright-core";
import { AxeBuilder } from "@axe-core/playwright";
import { LocalWorker, migrateLocalD1, ROOT, UNATTENDED_ENV, writeEnvFile } from "../scripts/lib/local-worker.mjs";

export { ROOT };
export const RESULTS_DIR = join(ROOT, "test-results");
export const SCREENSHOTS_DIR = join(ROOT, "docs", "screenshots");

// Ports of this suite (8810-8819, inspector 9810-9819): see the README.
const HOST = "127.0.0.1";
const PORT = Number(process.env.E2E_PORT ?? 8810);
const RECEIVER_PORT = PORT + 1;
const INSPECTOR_PORT = PORT + 1000;
export const BASE_URL = `http://${HOST}:${PORT}`;
export const RECEIVER_URL = `http://${HOST}:${RECEIVER_PORT}/hook`;

const STARTUP_TIMEOUT_MS = 120_000;

/** @typedef {import("playwright-core").Page} Page */
/** @typedef {import("playwright-core").BrowserContext} BrowserContext */
/** @typedef {Awaited<ReturnType<typeof startHarness>>} Harness */
/** @typedef {{ headers: import("node:http").IncomingHttpHeaders, body: string }} Received */

const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `check` until it returns a truthy value (returned) or `timeoutMs` passes (throws with `what`).
 * @template T
 * @param {string} what @param {() => T | Promise<T>} check @param {{ timeoutMs?: number, intervalMs?: number }} [options]
 * @returns {Promise<NonNullable<T>>}
 */
export async function waitFor(what, check, { timeoutMs = 15_000, intervalMs = 250 } = {}) {
  const deadline = Date.now() + timeoutMs;
  /** @type {unknown} */
  let last;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    await sleep(intervalMs);
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last instanceof Error ? last.message : String(last)}` : ""}`,
  );
}

/** The Chromium to drive: $CHROMIUM_PATH, else Debian's, else Playwright's own download if there is one. */
function chromiumPath() {
  const candidates = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"].filter(
    (p) => typeof p === "string" && p !== "",
  );
  const found = candidates.find((p) => p !== undefined && existsSync(p));
  if (found) return found;
  try {
    const own = chromium.executablePath();
    if (own && existsSync(own)) return own;
  } catch {
    // no Playwright-managed browser
  }
  throw new Error("No Chromium found: install Debian's `chromium` (apt-get install -y chromium) or set CHROMIUM_PATH.");
}

const escapeHtml = (/** @type {string} */ s) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/**
 * A local webhook receiver: answers 204 and records each POST. On another
 * origin than the dashboard, it also serves GET /forge?action=…: a page with
 * a form posting there, the attacker's page of a CSRF attempt.
 */
/** @returns {Promise<{ received: Received[], close: () => Promise<unknown> }>} */
function startReceiver() {
  /** @type {Received[]} */
  const received = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", `http://${HOST}`);
    if (req.method === "GET" && url.pathname === "/forge") {
      const action = escapeHtml(url.searchParams.get("action") ?? "");
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(
        `<!doctype html><title>Forge</title><form method="post" action="${action}"><input name="name" value="forged"><button>Go</button></form>`,
      );
      return;
    }
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(RECEIVER_PORT, HOST, () =>
      resolve({ received, close: () => new Promise((r) => server.close(() => r(undefined))) }),
    );
  });
}

export async function startHarness() {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const stateDir = mkdtempSync(join(tmpdir(), "dashboard-e2e-"));
  const adminToken = randomBytes(24).toString("base64url");
  // Fixed for this run only; ALLOW_INSECURE_WEBHOOK_URLS lets the loopback receiver in (local-development mode).
  const envFile = writeEnvFile(join(stateDir, "e2e.env"), {
    ADMIN_TOKEN: adminToken,
    CREDENTIALS_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    JOB_ID_SECRET: randomBytes(24).toString("base64url"),
    UPSTREAM_APP_SECRET: randomBytes(24).toString("base64url"),
    UPSTREAM_VERIFY_TOKEN: randomBytes(24).toString("base64url"),
    ALLOW_INSECURE_WEBHOOK_URLS: "true",
  });

  const migrated = await migrateLocalD1({ state: stateDir, env: UNATTENDED_ENV });
  if (migrated.code !== 0) throw new Error(`migrations failed:\n${migrated.output}`);

  const receiver = await startReceiver();
  const dev = new LocalWorker({
    port: PORT,
    inspectorPort: INSPECTOR_PORT,
    state: stateDir,
    envFile,
    env: UNATTENDED_ENV,
    // Everything, Worker logs included: kept in test-results/wrangler-dev.log, not printed.
    logLevel: "log",
  });
  try {
    await dev.waitUntilReady({ limitMs: STARTUP_TIMEOUT_MS });
  } catch (err) {
    await dev.stop();
    await receiver.close();
    throw err;
  }

  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });

  /**
   * The admin API, as whoever runs the service (or `npm run dev`) calls it.
   * @param {string} method @param {string} path @param {unknown} [body]
   * @returns {Promise<ReturnType<typeof JSON.parse>>} the answer's JSON (what JSON.parse gives)
   */
  async function admin(method, path, body) {
    const res = await fetch(`${BASE_URL}/admin/v1${path}`, {
      method,
      headers: { Authorization: `Bearer ${adminToken}`, ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await res.json().catch(() => null);
    if (res.status >= 300) throw new Error(`admin ${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  }

  /**
   * A fresh browser context (its own cookies), desktop-sized and light unless told otherwise.
   * @param {{ width: number, height: number }} [viewport] @param {"light" | "dark"} [colorScheme]
   */
  async function newPage(viewport = { width: 1280, height: 800 }, colorScheme = "light") {
    const context = await browser.newContext({ viewport, baseURL: BASE_URL, colorScheme });
    const page = await context.newPage();
    // Fail loudly on anything the strict CSP blocks, a script that throws, or a
    // missing stylesheet/script/icon. (Pages answered 4xx on purpose, such as a
    // refused form, are documents and are not counted.)
    /** @type {string[]} */
    const problems = [];
    page.on("console", (msg) => {
      if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource")) problems.push(msg.text());
    });
    page.on("pageerror", (err) => problems.push(err.message));
    page.on("response", (res) => {
      if (res.status() >= 400 && res.request().resourceType() !== "document")
        problems.push(`${res.status()} ${res.url()}`);
    });
    return { context, page, problems };
  }

  async function stop() {
    await browser.close().catch(() => {});
    await dev.stop();
    // What the Worker logged, for a failure's post-mortem.
    writeFileSync(join(RESULTS_DIR, "wrangler-dev.log"), dev.output());
    await receiver.close();
    rmSync(stateDir, { recursive: true, force: true });
  }

  return { admin, newPage, receiver, stop, adminToken };
}

/** A workspace with a sandbox number, made through the admin API. @param {Harness} h @param {string} name */
export async function createWorkspace(h, name) {
  const workspace = await h.admin("POST", "/workspaces", { name, plan: "pro" });
  const number = await h.admin("POST", `/workspaces/${workspace.id}/channel-numbers`, {
    displayPhoneNumber: "15550001234",
    upstream: { type: "sandbox" },
  });
  return { workspaceId: workspace.id, numberId: number.id };
}

/** Fails on any serious or critical accessibility violation of the current page. @param {Page} page @param {string} label */
export async function expectAccessible(page, label) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  if (bad.length > 0) {
    const detail = bad
      .map((v) => `${v.id} (${v.impact}): ${v.help}\n  ${v.nodes.map((n) => n.target.join(" ")).join("\n  ")}`)
      .join("\n");
    throw new Error(`accessibility violations on ${label}:\n${detail}`);
  }
}

/** Saves a full-page screenshot under test-results/ (and, with UPDATE_SCREENSHOTS=1, the copies in docs/screenshots/). */
/** @param {Page} page @param {string} name @param {{ readme?: boolean }} [options] */
export async function screenshot(page, name, { readme = false } = {}) {
  await page.screenshot({ path: join(RESULTS_DIR, `${name}.png`), fullPage: true });
  if (readme && process.env.UPDATE_SCREENSHOTS === "1") {
    mkdirSync(SCREENSHOTS_DIR, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOTS_DIR, `${name}.png`), fullPage: true });
  }
}
