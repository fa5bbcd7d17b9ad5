import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { configDefaults, defineConfig } from "vitest/config";
import { captureExpectedRuntimeLogs, runtimeLogService } from "./test/node/runtime-log.ts";
import { TEST_SECRETS } from "./test/node/test-secrets.ts";

Object.assign(process.env, TEST_SECRETS);
// wrangler's informational lines ("Using secrets defined in process.env", once per test file); warnings stay.
process.env.WRANGLER_LOG ??= "warn";
captureExpectedRuntimeLogs();

/**
 * standardwebhooks (an SDK dependency, loaded by test/api/sdk-in-workers.test.ts) ships source maps
 * naming sources it does not ship, and Vite warns about it on every run. Loaded without the map
 * comment, it stays quiet; stack traces into it point at its built file, which it does ship.
 */
const withoutBrokenDependencyMaps = {
  name: "without-broken-dependency-maps",
  enforce: "pre" as const,
  load(id: string): string | undefined {
    if (!/\/node_modules\/standardwebhooks\/dist\/.+\.js$/.test(id)) return undefined;
    return readFileSync(id, "utf8").replace(/^\/\/# sourceMappingURL=.*$/m, "");
  },
};

const MIGRATE = "./test/setup/apply-migrations.ts";

type Service = (request: Request) => Promise<Response>;

/**
 * The runtime under test: production's Worker, its objects subclassed with what only tests read
 * (test/worker.ts), in workerd with the migrations, fixed secrets and the expected-log capture, plus
 * `bindings` and `services`. Also the cost harness's (bench/vitest.cost.config.ts).
 */
export const workersRuntime = async (bindings: Record<string, string>, services: Record<string, Service> = {}) => [
  withoutBrokenDependencyMaps,
  cloudflareTest({
    wrangler: { configPath: "./wrangler.toml" },
    main: "./test/worker.ts",
    miniflare: {
      bindings: {
        TEST_MIGRATIONS: await readD1Migrations("./migrations"),
        ...TEST_SECRETS,
        ALLOW_INSECURE_WEBHOOK_URLS: "false",
        ...bindings,
      },
      serviceBindings: { RUNTIME_LOG: runtimeLogService, ...services },
    },
  }),
];

export default defineConfig(async () => {
  const workersProject = async (o: {
    name: string;
    include: string[];
    exclude: string[];
    drainSessionMs: string;
    setupFiles: string[];
  }) => ({
    plugins: await workersRuntime({
      DRAIN_SESSION_MS: o.drainSessionMs,
      // Each change's events leave at once (no packing window): a test reads them right after the change.
      EVENT_PUBLISH_DELAY_MS: "0",
      // A failed media copy is tried again at once (the queue's next batch), four attempts in all.
      MEDIA_COPY_RETRY_DELAYS_SECONDS: "0,0,0",
    }),
    test: {
      name: o.name,
      // The SDK has its own suite, in Node against `wrangler dev` (npm run test:sdk).
      include: o.include,
      exclude: [...configDefaults.exclude, ...o.exclude],
      setupFiles: o.setupFiles,
      testTimeout: 20_000,
    },
  });
  return {
    test: {
      testTimeout: 20_000,
      // Vitest's default is one file at a time on a 2-core machine (cores - 1), which leaves a core idle
      // while a file waits on workerd: two at once take the suite from ~9 to ~6 minutes there.
      maxWorkers: Math.max(2, availableParallelism() - 1),
      // The Worker's JSON logs are shown for failing tests only.
      silent: "passed-only" as const,
      projects: [
        // One pass per alarm: tests step the drain with runDurableObjectAlarm and a controlled clock.
        // test/<area>/: the behaviour suites (api, engine, operator, webhooks, dashboard, security, admin; indexed in
        // test/README.md), on a D1 with every migration applied.
        await workersProject({
          name: "workers",
          include: ["test/**/*.test.ts"],
          exclude: ["test/sessions/**", "test/unit/**"],
          drainSessionMs: "0",
          setupFiles: [MIGRATE],
        }),
        // test/unit/: one file per pure module of src/, mirroring its path. Their modules read no D1, so
        // they skip the migrations' setup file (importing cloudflare:test costs ~2.5 s per file).
        await workersProject({
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          exclude: [],
          drainSessionMs: "0",
          setupFiles: [],
        }),
        // Drain sessions as in production (10 s, real time): what only happens while calls overlap.
        await workersProject({
          name: "workers-sessions",
          include: ["test/sessions/**/*.test.ts"],
          exclude: [],
          drainSessionMs: "10000",
          setupFiles: [MIGRATE],
        }),
        {
          // Checks that run as customers and operators run things, in Node: the documentation's
          // code snippets and links, the customers' pages' words, and the deployment configuration.
          test: { name: "node", include: ["test/node/**/*.test.mjs"], environment: "node", testTimeout: 20_000 },
        },
      ],
    },
  };
});
