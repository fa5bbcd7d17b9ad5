import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { captureExpectedRuntimeLogs, runtimeLogService } from "./test/node/runtime-log.ts";
import { TEST_SECRETS } from "./test/node/test-secrets.ts";

Object.assign(process.env, TEST_SECRETS);
// wrangler's informational lines ("Using secrets defined in process.env", once per test file); warnings stay.
process.env.WRANGLER_LOG ??= "warn";
captureExpectedRuntimeLogs();

export default defineConfig(async () => {
  const migrations = await readD1Migrations("./migrations");
  return {
    test: {
      testTimeout: 20_000,
      // The Worker's JSON logs are shown for failing tests only.
      silent: "passed-only" as const,
      projects: [
        {
          plugins: [
            cloudflareTest({
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: {
                // Test-only bindings: fixed secrets, the migrations and the expected-log capture.
                bindings: {
                  TEST_MIGRATIONS: migrations,
                  ...TEST_SECRETS,
                  ALLOW_INSECURE_WEBHOOK_URLS: "false",
                  // One pass per alarm: tests step the drain with runDurableObjectAlarm and a controlled clock.
                  DRAIN_SESSION_MS: "0",
                },
                serviceBindings: { RUNTIME_LOG: runtimeLogService },
              },
            }),
          ],
          test: {
            name: "workers",
            // The SDK has its own suite, in Node against `wrangler dev` (npm run test:sdk).
            include: ["test/**/*.test.ts"],
            setupFiles: ["./test/setup/apply-migrations.ts"],
            testTimeout: 20_000,
          },
        },
        {
          // Checks that run as customers and operators run things, in Node: the documentation's
          // code snippets and the deployment configuration.
          test: { name: "node", include: ["test/node/**/*.test.mjs"], environment: "node", testTimeout: 20_000 },
        },
      ],
    },
  };
});
