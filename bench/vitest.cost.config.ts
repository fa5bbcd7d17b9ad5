import { mkdir, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { TEST_SECRETS } from "../test/node/test-secrets.ts";

// The cost harness (npm run bench:cost): the same runtime as the test suite (vitest.config.ts),
// its own files (bench/cost/*.cost.ts, which `npm test` does not pick up), and one extra
// binding, COST_SINK, through which the run hands its counts to this Node process.

const root = fileURLToPath(new URL("..", import.meta.url));
// The raw counts, for render.ts: an intermediate, not a result (bench/cost.md is).
const RESULTS = fileURLToPath(new URL("../.wrangler/cost-results.json", import.meta.url));

Object.assign(process.env, TEST_SECRETS);
process.env.WRANGLER_LOG ??= "warn";

async function costSink(request: Request): Promise<Response> {
  await mkdir(new URL("../.wrangler/", import.meta.url), { recursive: true });
  await writeFile(RESULTS, `${JSON.stringify(await request.json(), null, 2)}\n`);
  return new Response(null, { status: 204 });
}

export default defineConfig(async () => {
  const migrations = await readD1Migrations(`${root}/migrations`);
  return {
    root,
    plugins: [
      cloudflareTest({
        wrangler: { configPath: `${root}/wrangler.toml` },
        // The suite's Worker (production's, its objects subclassed with what only tests and this
        // harness read: an empty shard is woken through its size()).
        main: `${root}/test/worker.ts`,
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            ...TEST_SECRETS,
            ALLOW_INSECURE_WEBHOOK_URLS: "false",
            // Sessions in memory as in production (a send starts its number's drain; the alarm is the
            // backstop), but a session that would wait longer than 1 ms gives the wait to the alarm,
            // which the harness runs when due on its controlled clock. Production waits up to 10 s
            // inside the session instead: its alarms are at most these.
            DRAIN_SESSION_MS: "1",
            // The operator's POSTs wait for the workspace's alarm, which the driver runs on its own
            // clock: a loaded machine must not push them to the queue on a wall-clock timer.
            OPERATOR_APPLY_WITHIN_MS: "600000",
          },
          serviceBindings: { COST_SINK: costSink },
        },
      }),
    ],
    test: {
      name: "cost",
      include: ["bench/cost/**/*.cost.ts"],
      setupFiles: ["./test/setup/apply-migrations.ts"],
      testTimeout: 600_000,
      silent: "passed-only" as const,
      hookTimeout: 120_000,
    },
  };
});
