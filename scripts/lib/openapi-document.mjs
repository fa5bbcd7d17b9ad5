// The public OpenAPI document exactly as the Worker serves it at /api/v1/openapi.json,
// produced in Node without a running server: the Hono app is bundled in memory with
// esbuild and asked for the document. Used by `npm run openapi:lint` and by the SDK's
// type generator. Only route definitions run; no binding is touched.
import { build } from "esbuild";
import { readFileSync } from "node:fs";
import { parseVars } from "./dev-vars.mjs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export async function openApiDocument() {
  const result = await build({
    stdin: {
      contents: 'export { app } from "./src/app.ts";',
      resolveDir: ROOT,
      loader: "ts",
    },
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    // Modules that import Durable Object classes are reachable from the app (the dashboard's
    // throttle, for one); only route definitions run here, so the runtime's module is a stub.
    plugins: [
      {
        name: "cloudflare-runtime-stub",
        setup(b) {
          b.onResolve({ filter: /^cloudflare:/ }, (args) => ({ path: args.path, namespace: "cloudflare-stub" }));
          b.onLoad({ filter: /.*/, namespace: "cloudflare-stub" }, () => ({
            contents: "export class DurableObject {}; export class WorkerEntrypoint {}; export const env = {};",
            loader: "js",
          }));
        },
      },
    ],
    logLevel: "silent",
  });
  const code = result.outputFiles[0].text;
  const { app } = await import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`);
  // The request-id middleware writes one access-log line per request: not wanted here.
  const log = console.log;
  console.log = () => {};
  try {
    // Every request checks the configuration first (src/app.ts): wrangler.toml's [vars] are what
    // the deployed Worker has; without them the document is a 500.
    const res = await app.request("/api/v1/openapi.json", {}, tomlVars());
    if (res.status !== 200) throw new Error(`GET /api/v1/openapi.json answered ${res.status}: ${await res.text()}`);
    return await res.json();
  } finally {
    console.log = log;
  }
}

/** wrangler.toml's top-level [vars] table (`NAME = "value"` lines), as the Worker's env. */
function tomlVars() {
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  const start = toml.indexOf("\n[vars]\n");
  if (start < 0) return {};
  const rest = toml.slice(start + "\n[vars]\n".length);
  const end = rest.search(/^\[/m);
  return Object.fromEntries(parseVars((end < 0 ? rest : rest.slice(0, end)).replace(/^(\s*[A-Za-z_][A-Za-z0-9_]*)\s*=\s*/gm, "$1=")));
}
