#!/usr/bin/env node
// `npm run webhook:listen`: a local receiver for the gateway's webhooks, for `npm run dev`.
//
//   npm run webhook:listen                     listen on 127.0.0.1:$WEBHOOK_LISTEN_PORT (8788), register
//                                              this receiver as the webhook of the demo number of the
//                                              running `npm run dev` and verify with the new secret
//   npm run webhook:listen -- --no-register whsec_…   only listen, verifying with this secret
//                                              (or WEBHOOK_SECRET=whsec_…; without one nothing is verified)
//
// The API's address comes from .dev-server.json, written by `npm run dev` while it runs
// (API_BASE_URL overrides it); the demo API key and number from .dev-demo.json. Each delivery's
// Standard Webhooks signature is checked, the event (or a "bad signature" line) is printed and
// 204 is answered. Registering http://127.0.0.1 works only because .dev.vars sets
// ALLOW_INSECURE_WEBHOOK_URLS=true; production accepts public https URLs only.
// Node built-ins only.
import { createHmac, timingSafeEqual } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const DEMO_FILE = join(ROOT, ".dev-demo.json");
const SERVER_FILE = join(ROOT, ".dev-server.json");
const HOST = "127.0.0.1";
const PORT = parsePort(process.env.WEBHOOK_LISTEN_PORT ?? "8788");
const RECEIVER_URL = `http://${HOST}:${PORT}/`;
const TOLERANCE_SECONDS = 5 * 60;
const MAX_BODY_BYTES = 1024 * 1024;

const args = process.argv.slice(2);
const register = !args.includes("--no-register");
/** @type {string | null} */
let secret = args.find((a) => a.startsWith("whsec_")) ?? process.env.WEBHOOK_SECRET ?? null;

/** @typedef {{ apiKey: string, channelNumberId: string }} Demo */
/** @typedef {{ id: string, secret: string }} Webhook */
/** @typedef {import("node:http").IncomingHttpHeaders} Headers */

/** @param {string} message @returns {never} */
function fail(message) {
  console.error(`[listen] ${message}`);
  process.exit(1);
}

/** @param {string} raw */
function parsePort(raw) {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) fail(`WEBHOOK_LISTEN_PORT must be a TCP port number, got "${raw}".`);
  return n;
}

/** @param {string} file @returns {Record<string, unknown> | null} */
function readJson(file) {
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return null;
  }
}

/** @returns {Demo | null} */
function readDemo() {
  const demo = readJson(DEMO_FILE);
  return typeof demo?.apiKey === "string" && typeof demo?.channelNumberId === "string"
    ? { apiKey: demo.apiKey, channelNumberId: demo.channelNumberId }
    : null;
}

/** The running dev server's base URL: API_BASE_URL, else what `npm run dev` wrote. */
function apiBaseUrl() {
  const configured = process.env.API_BASE_URL ?? readJson(SERVER_FILE)?.baseUrl;
  return typeof configured === "string" && configured ? configured.replace(/\/+$/, "") : null;
}

/** Standard Webhooks: HMAC-SHA256 over "{id}.{timestamp}.{body}", key = base64 after "whsec_". */
/** @param {Headers} headers @param {string} body @param {string} secret */
function verify(headers, body, secret) {
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  const signatures = headers["webhook-signature"];
  if (typeof id !== "string" || typeof timestamp !== "string" || typeof signatures !== "string")
    return "missing webhook-id, webhook-timestamp or webhook-signature";
  const age = Math.abs(Date.now() / 1000 - Number(timestamp));
  if (!Number.isFinite(age) || age > TOLERANCE_SECONDS) return `timestamp ${timestamp} is more than 5 minutes off`;
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest();
  const ok = signatures.split(" ").some((entry) => {
    const [version, sig] = entry.split(",");
    if (version !== "v1" || !sig) return false;
    const given = Buffer.from(sig, "base64");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  return ok ? null : "no v1 signature matches the secret";
}

/** @param {Headers} headers @param {string} body */
function printDelivery(headers, body) {
  const time = new Date().toISOString().slice(11, 19);
  const id = headers["webhook-id"] ?? "(no webhook-id)";
  if (secret) {
    const problem = verify(headers, body, secret);
    if (problem) {
      console.log(`${time}  ✗ BAD SIGNATURE  ${id}: ${problem}`);
      return;
    }
  }
  let event;
  try {
    event = JSON.parse(body);
  } catch {
    console.log(`${time}  ✗ body is not JSON  ${id}`);
    return;
  }
  const mark = secret ? "✓ signed" : "? unverified (no secret)";
  console.log(`${time}  ${mark}  ${event?.type ?? "(no type)"}  ${id}`);
  // A body that is JSON but not an event (no "data") is printed whole rather than crashing the receiver.
  console.log((JSON.stringify(event?.data ?? event, null, 2) ?? "").replace(/^/gm, "    "));
}

/**
 * Makes this receiver the demo number's webhook; returns the webhook (its new secret included).
 * @param {string} baseUrl @param {Demo} demo @returns {Promise<Webhook>}
 */
async function registerDemo(baseUrl, demo) {
  let res;
  try {
    res = await fetch(`${baseUrl}/api/v1/webhooks`, {
      method: "POST",
      headers: { Authorization: `Bearer ${demo.apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ channelNumberId: demo.channelNumberId, url: RECEIVER_URL }),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    return fail(
      `could not reach the API at ${baseUrl} (${err instanceof Error ? err.message : String(err)}); is \`npm run dev\` running?`,
    );
  }
  const body = await res.json().catch(() => null);
  if (res.status !== 201 || !body?.secret) fail(`registration failed: HTTP ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** @param {string | null} baseUrl @param {Demo | null} demo @param {Webhook | null} webhook */
function banner(baseUrl, demo, webhook) {
  const lines = ["", `  Webhook receiver on ${RECEIVER_URL} (every delivery is answered 204)`];
  if (webhook) {
    lines.push(
      `  Registered as webhook ${webhook.id} of the demo number ${demo?.channelNumberId} at ${baseUrl};`,
      "  deliveries are verified with its new secret. Send a message, or a test event:",
      `    curl -sS -X POST ${baseUrl}/api/v1/webhooks/${webhook.id}/test -H "Authorization: Bearer ${demo?.apiKey}"`,
    );
  } else {
    lines.push(
      secret ? "  Verifying signatures with the given secret." : "  No secret: events are printed unverified.",
    );
  }
  lines.push("  Ctrl+C stops it.", "");
  console.log(lines.join("\n"));
}

if (secret !== null && !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret)) {
  fail("the secret must look like whsec_<base64>, as returned by POST /api/v1/webhooks.");
}

// Registration needs the dev server and its demo tenant: check both before listening.
const baseUrl = apiBaseUrl();
const demo = readDemo();
if (register) {
  if (!baseUrl)
    fail("`npm run dev` does not seem to run here (no .dev-server.json): start it first, or set API_BASE_URL.");
  if (!demo) fail("no demo tenant in .dev-demo.json: `npm run dev` creates it on its first start.");
}

const server = createServer((req, res) => {
  if (req.method !== "POST") {
    res.writeHead(405, { Allow: "POST" }).end();
    return;
  }
  /** @type {Buffer[]} */
  const chunks = [];
  let size = 0;
  req.on("data", (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      res.writeHead(413).end();
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on("end", () => {
    if (res.writableEnded) return;
    printDelivery(req.headers, Buffer.concat(chunks).toString("utf8"));
    res.writeHead(204).end();
  });
});

server.on("error", (err) =>
  fail(`cannot listen on ${HOST}:${PORT}: ${err.message} (set WEBHOOK_LISTEN_PORT to use another port)`),
);

server.listen(PORT, HOST, async () => {
  // Checked above: registering needs both.
  const webhook = register && baseUrl && demo ? await registerDemo(baseUrl, demo) : null;
  if (webhook) secret = webhook.secret;
  banner(baseUrl, demo, webhook);
});

// server.close() alone waits for idle keep-alive connections (the Worker's fetch keeps one open),
// so a SIGTERM left the process, and its port, alive: drop them and exit once the port is released.
/** @param {NodeJS.Signals} signal */
function stop(signal) {
  console.log(`[listen] ${signal}: stopping`);
  server.close(() => process.exit(0));
  server.closeAllConnections();
  // A request still being read cannot hold the port open for long.
  setTimeout(() => process.exit(0), 1000).unref();
}
for (const signal of /** @type {const} */ (["SIGINT", "SIGTERM", "SIGHUP"])) process.on(signal, stop);
