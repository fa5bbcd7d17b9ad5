#!/usr/bin/env node
// `npm run test:examples`: every example of README.md, docs/customers/*.md, docs/*.md and sdk/README.md runs as
// written against a real local Worker (`wrangler dev` on 127.0.0.1:8806).
//
// - Shell blocks (```bash / ```sh) of one file run in order in one bash session, like a reader
//   pasting them into one terminal, with `set -euo pipefail` and curl failing on any HTTP error.
//   README blocks read the state files `npm run dev` writes (.dev-server.json, .dev-demo.json,
//   .dev.vars): the runner writes its own into a temporary working directory. docs/ blocks use
//   the variables the API guide asks readers to set (BASE, API_KEY, CHANNEL_NUMBER_ID,
//   WEBHOOK_URL): the runner sets them.
// - TypeScript blocks (```ts) run with the SDK's sources, bundled by esbuild, in Node.
// - A block preceded by `<!-- example: skip (reason) -->` is not run (a template or a
//   long-running command); `<!-- example: tested by <file> -->` names the test that runs it.
//   Both are listed with their reason, so that nothing is skipped silently.
// Other blocks (json, plain) are data, not examples.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { startLocalWorker } from "./lib/local-worker.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const PORT = Number(process.env.EXAMPLES_PORT ?? 8806);
const RECEIVER_PORT = PORT + 1;
// Customers' pages, then the maintainers' (docs/*.md), each in name order.
const FILES = [
  "README.md",
  ...["docs/customers", "docs"].flatMap((dir) =>
    readdirSync(join(ROOT, dir))
      .filter((f) => f.endsWith(".md"))
      .sort()
      .map((f) => `${dir}/${f}`),
  ),
  "sdk/README.md",
];
const SHELL = new Set(["bash", "sh", "shell"]);

/** @typedef {{ file: string, line: number, lang: string, code: string, marker: string | null }} Block */
/** @typedef {{ failed: string | null, output: string }} Outcome */

/** Fenced blocks with their language, first line number and the marker comment just above. @param {string} file */
function blocksOf(file) {
  const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
  /** @type {Block[]} */
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i] ?? "");
    if (!open) continue;
    const start = i;
    const body = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i] ?? ""); i++) body.push(lines[i] ?? "");
    const marker = /^<!--\s*example:\s*(.*?)\s*-->$/.exec(lines[start - 1]?.trim() ?? "")?.[1] ?? null;
    blocks.push({ file, line: start + 1, lang: open[1] ?? "", code: body.join("\n"), marker });
  }
  return blocks;
}

/** @param {string} baseUrl @param {string} token @param {string} path @param {unknown} body */
async function admin(baseUrl, token, path, body) {
  const res = await fetch(`${baseUrl}/admin/v1${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`admin ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

// curl as a reader would run it, except that an HTTP error fails the block. Blocks run back to back,
// faster than a reader: a send refused by the number's 2-per-second limit is retried after its
// Retry-After, as the API guide tells clients to (curl retries 429 and honours Retry-After; each
// example's send carries an Idempotency-Key, so a retry never sends twice).
const SHELL_PRELUDE = `set -euo pipefail
curl() { command curl --fail-with-body --silent --show-error --max-time 20 --retry 3 "$@"; echo; }
`;

/** @param {string} file @param {Block[]} blocks @param {string} cwd @param {NodeJS.ProcessEnv} env @returns {Outcome} */
function runShell(file, blocks, cwd, env) {
  const script = SHELL_PRELUDE + blocks.map((b) => `echo "::example ${file}:${b.line}" >&2\n${b.code}\n`).join("\n");
  const result = spawnSync("bash", ["-c", script], { cwd, env, encoding: "utf8", timeout: 120_000 });
  const started = [...result.stderr.matchAll(/::example (\S+)/g)].map((m) => m[1]);
  if (result.status === 0) return { failed: null, output: result.stdout };
  return {
    failed: started.at(-1) ?? `${file}:${blocks[0]?.line}`,
    output: `${result.stdout}\n${result.stderr}`.replace(/::example \S+\n/g, ""),
  };
}

/** @param {Block} block @param {string} cwd @param {NodeJS.ProcessEnv} env @returns {Promise<Outcome>} */
async function runTypeScript(block, cwd, env) {
  const bundled = await build({
    stdin: { contents: block.code, resolveDir: ROOT, loader: "ts", sourcefile: `${block.file}:${block.line}.ts` },
    bundle: true,
    write: false,
    format: "esm",
    platform: "node",
    target: "node20",
    alias: { "@messaging-gateway/sdk": join(ROOT, "sdk", "src", "index.ts") },
    logLevel: "silent",
  });
  const file = join(cwd, `example-${block.line}.mjs`);
  writeFileSync(file, bundled.outputFiles[0].text);
  const result = spawnSync(process.execPath, [file], { cwd, env, encoding: "utf8", timeout: 60_000 });
  return result.status === 0
    ? { failed: null, output: result.stdout }
    : { failed: `${block.file}:${block.line}`, output: `${result.stdout}\n${result.stderr}` };
}

async function main() {
  const receiver = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(204).end());
  });
  await new Promise((resolve) => receiver.listen(RECEIVER_PORT, "127.0.0.1", () => resolve(undefined)));
  const worker = await startLocalWorker(PORT);
  const cwd = mkdtempSync(join(tmpdir(), "examples-"));
  let failures = 0;
  let passed = 0;
  const skipped = [];
  try {
    // The state `npm run dev` leaves in the repository, for the README's blocks.
    const workspace = await admin(worker.baseUrl, worker.adminToken, "/workspaces", { name: "Examples", plan: "pro" });
    const key = await admin(worker.baseUrl, worker.adminToken, `/workspaces/${workspace.id}/api-keys`, {
      name: "examples",
    });
    const number = await admin(worker.baseUrl, worker.adminToken, `/workspaces/${workspace.id}/channel-numbers`, {
      displayPhoneNumber: "15550009999",
      upstream: { type: "sandbox" },
    });
    // As `npm run dev` does: the recipient of the examples' sends is a test contact (the sandbox holds others to the 24-hour window).
    const marked = await fetch(`${worker.baseUrl}/api/v1/sandbox/test-contacts`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key.key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ channelNumberId: number.id, phone: "5511999998888" }),
    });
    if (marked.status !== 201)
      throw new Error(`marking the test contact answered ${marked.status}: ${await marked.text()}`);
    writeFileSync(join(cwd, ".dev-server.json"), JSON.stringify({ baseUrl: worker.baseUrl }));
    writeFileSync(
      join(cwd, ".dev-demo.json"),
      JSON.stringify({ workspaceId: workspace.id, apiKey: key.key, channelNumberId: number.id }),
    );
    writeFileSync(join(cwd, ".dev.vars"), `ADMIN_TOKEN=${worker.adminToken}\n`);
    const env = {
      ...process.env,
      // The variables docs/customers/api.md asks readers to set.
      BASE: worker.baseUrl,
      API_KEY: key.key,
      CHANNEL_NUMBER_ID: number.id,
      WEBHOOK_URL: `http://127.0.0.1:${RECEIVER_PORT}/hooks`,
      // The SDK quick start's.
      MESSAGING_BASE_URL: worker.baseUrl,
      MESSAGING_API_KEY: key.key,
    };

    for (const file of FILES) {
      const blocks = blocksOf(file).filter((b) => SHELL.has(b.lang) || b.lang === "ts" || b.lang === "js");
      const run = [];
      for (const block of blocks) {
        if (block.marker) skipped.push(`${file}:${block.line}  ${block.marker}`);
        else if (block.lang === "js")
          throw new Error(
            `${file}:${block.line}: a js block needs an example marker (skip with a reason, or the test that runs it)`,
          );
        else run.push(block);
      }
      const shell = run.filter((b) => SHELL.has(b.lang));
      const results = shell.length > 0 ? [{ count: shell.length, ...runShell(file, shell, cwd, env) }] : [];
      for (const block of run.filter((b) => b.lang === "ts"))
        results.push({ count: 1, ...(await runTypeScript(block, cwd, env)) });
      for (const result of results) {
        if (result.failed) {
          failures++;
          console.error(`✗ ${result.failed} failed:\n${result.output.trim().replace(/^/gm, "    ")}`);
        } else {
          passed += result.count;
        }
      }
      if (run.length > 0 && results.every((r) => !r.failed)) console.log(`✓ ${file}: ${run.length} example(s) ran`);
    }
  } finally {
    await worker.stop();
    receiver.close();
    rmSync(cwd, { recursive: true, force: true });
  }
  console.log(
    `\nNot run here (marked in the documents):\n${skipped.map((s) => `  ${relative(ROOT, join(ROOT, s))}`).join("\n")}`,
  );
  console.log(`\nExamples: ${passed} ran as written, ${failures} failed, ${skipped.length} not run (listed above).`);
  process.exitCode = failures > 0 ? 1 : 0;
}

await main();
