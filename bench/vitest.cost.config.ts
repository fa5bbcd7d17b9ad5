import { mkdir, writeFile } from "node:fs/promises";
import { defineConfig } from "vitest/config";
import { workersRuntime } from "../vitest.config.ts";

// The cost harness (npm run bench:cost): the test suite's runtime, its own files (bench/cost/*.cost.ts,
// which `npm test` does not pick up), and COST_SINK, through which the run hands its raw counts to this
// Node process for render.ts (.wrangler/cost-results.json: an intermediate; bench/cost.md is the result).
async function costSink(request: Request): Promise<Response> {
  await mkdir(".wrangler", { recursive: true });
  await writeFile(".wrangler/cost-results.json", `${JSON.stringify(await request.json(), null, 2)}\n`);
  return new Response(null, { status: 204 });
}

export default defineConfig(async () => ({
  plugins: await workersRuntime(
    {
      // Sessions in memory as in production (a send starts its number's drain), but a wait longer than
      // 1 ms goes to the alarm, which the harness runs when due on its clock (production waits up to 10 s
      // in the session instead: its alarms are at most these).
      DRAIN_SESSION_MS: "1",
      // The operator's POSTs wait for the workspace's alarm, run on the harness's clock: a loaded machine
      // must not push them to the queue on a wall-clock timer.
      OPERATOR_APPLY_WITHIN_MS: "600000",
    },
    { COST_SINK: costSink },
  ),
  test: {
    include: ["bench/cost/**/*.cost.ts"],
    setupFiles: ["./test/setup/apply-migrations.ts"],
    hookTimeout: 120_000,
    silent: "passed-only" as const,
  },
}));
