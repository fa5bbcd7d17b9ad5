#!/usr/bin/env node
// `npm run webhook:listen`: a local receiver for the gateway's webhooks.
//
//   npm run webhook:listen -- whsec_…             verify with this secret (or WEBHOOK_SECRET=whsec_…)
//   npm run webhook:listen -- --register          register this receiver for the demo number of
//                                                 `npm run dev` (.dev-demo.json) and use the new secret
//
// Listens on 127.0.0.1:$PORT (8788), checks each delivery's Standard Webhooks signature,
// prints the event (or a "bad signature" line) and answers 204. The API is at $API_BASE_URL
// (http://127.0.0.1:8787). Registering http://localhost works only because .dev.vars sets
// ALLOW_INSECURE_WEBHOOK_URLS=true; production accepts public https URLs only.
// Node built-ins only.
import { createHmac, timingSafeEqual } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const DEMO_FILE = join(ROOT, ".dev-demo.json");
const HOST = "127.0.0.1";
const PORT = parsePort(process.env.PORT ?? "8788");
const API_BASE_URL = (process.env.API_BASE_URL ?? "http://127.0.0.1:8787").replace(/\/+$/, "");
const RECEIVER_URL = `http://localhost:${PORT}/`;
const TOLERANCE_SECONDS = 5 * 60;
const MAX_BODY_BYTES = 1024 * 1024;

const args = process.argv.slice(2);
const register = args.includes("--register");
let secret = args.find((a) => a.startsWith("whsec_")) ?? process.env.WEBHOOK_SECRET ?? null;

function parsePort(raw) {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    console.error(`[listen] PORT must be a TCP port number, got "${raw}".`);
    process.exit(1);
  }
  return n;
}

function readDemo() {
  if (!existsSync(DEMO_FILE)) return null;
  try {
    const demo = JSON.parse(readFileSync(DEMO_FILE, "utf8"));
    return demo?.apiKey && demo?.channelNumberId ? demo : null;
  } catch {
    return null;
  }
}

/** Standard Webhooks: HMAC-SHA256 over "{id}.{timestamp}.{body}", key = base64 after "whsec_". */
function verify(headers, body) {
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  const signatures = headers["webhook-signature"];
  if (!id || !timestamp || !signatures) return "missing webhook-id, webhook-timestamp or webhook-signature";
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

function printDelivery(headers, body) {
  const time = new Date().toISOString().slice(11, 19);
  const id = headers["webhook-id"] ?? "(no webhook-id)";
  if (secret) {
    const problem = verify(headers, body);
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
  console.log(`${time}  ${mark}  ${event.type}  ${id}`);
  console.log(JSON.stringify(event.data, null, 2).replace(/^/gm, "    "));
}

async function registerDemo() {
  const demo = readDemo();
  if (!demo) {
    console.error("[listen] --register needs .dev-demo.json: run `npm run dev` first (it creates the demo tenant).");
    process.exit(1);
  }
  let res;
  try {
    res = await fetch(`${API_BASE_URL}/api/v1/webhooks`, {
      method: "POST",
      headers: { Authorization: `Bearer ${demo.apiKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ channelNumberId: demo.channelNumberId, url: RECEIVER_URL }),
    });
  } catch (err) {
    console.error(`[listen] could not reach the API at ${API_BASE_URL} (${err.message}); is \`npm run dev\` running?`);
    process.exit(1);
  }
  const body = await res.json().catch(() => null);
  if (res.status !== 201 || !body?.secret) {
    console.error(`[listen] registration failed: HTTP ${res.status} ${JSON.stringify(body)}`);
    process.exit(1);
  }
  secret = body.secret;
  console.log(`[listen] registered webhook ${body.id} for number ${demo.channelNumberId}; using its new secret.`);
}

function banner() {
  const demo = readDemo();
  const key = demo?.apiKey ?? "<API_KEY>";
  const number = demo?.channelNumberId ?? "<CHANNEL_NUMBER_ID>";
  const lines = [
    "",
    `  Webhook receiver on http://${HOST}:${PORT}/ (every delivery is answered 204)`,
    secret
      ? "  Signatures are verified with the secret given."
      : "  No secret given: deliveries are printed UNVERIFIED. Pass whsec_… or set WEBHOOK_SECRET.",
  ];
  if (!register) {
    lines.push(
      "",
      "  Register it (the answer's \"secret\" is shown only once):",
      `    curl -sS -X POST ${API_BASE_URL}/api/v1/webhooks \\`,
      `      -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" \\`,
      `      -d '{"channelNumberId":"${number}","url":"${RECEIVER_URL}"}'`,
      "  then restart with the secret:  WEBHOOK_SECRET=whsec_… npm run webhook:listen",
      "  (or let this script do both:    npm run webhook:listen -- --register)",
    );
  }
  lines.push(
    "",
    "  Send a test event once registered:",
    `    curl -sS -X POST ${API_BASE_URL}/api/v1/webhooks/<WEBHOOK_ID>/test -H "Authorization: Bearer ${key}"`,
    "",
  );
  console.log(lines.join("\n"));
}

const server = createServer((req, res) => {
  if (req.method !== "POST") {
    res.writeHead(405, { Allow: "POST" }).end();
    return;
  }
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

server.on("error", (err) => {
  console.error(`[listen] cannot listen on ${HOST}:${PORT}: ${err.message}`);
  process.exit(1);
});

if (secret !== null && !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret)) {
  console.error("[listen] the secret must look like whsec_<base64>, as returned by POST /api/v1/webhooks.");
  process.exit(1);
}

server.listen(PORT, HOST, async () => {
  if (register) await registerDemo();
  banner();
});

for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => server.close(() => process.exit(0)));
