// The public OpenAPI document exactly as the Worker serves it at /api/v1/openapi.json,
// produced in Node without a running server: the Hono app is bundled in memory with
// esbuild and asked for the document. Used by `npm run openapi:lint` and by the SDK's
// type generator. Only route definitions run; no binding is touched.
import { build } from "esbuild";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseVars } from "./dev-vars.mjs";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * wrangler.toml's [vars]: the app validates its configuration on every request
 * (the OpenAPI document's included), so it is asked with the deployment's vars.
 */
function wranglerVars() {
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  const section = /^\[vars\]\s*$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(toml)?.[1] ?? "";
  return Object.fromEntries(parseVars(section));
}

/** @param {"v1" | "v2"} [version] the API version whose document is asked for */
export async function openApiDocument(version = "v1") {
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
    const res = await app.request(`/api/${version}/openapi.json`, {}, wranglerVars());
    if (res.status !== 200)
      throw new Error(`GET /api/${version}/openapi.json answered ${res.status}: ${await res.text()}`);
    return await res.json();
  } finally {
    console.log = log;
  }
}
