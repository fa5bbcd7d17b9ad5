import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

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
                // Test-only bindings: fixed secrets (never used outside tests) and the migrations.
                bindings: {
                  TEST_MIGRATIONS: migrations,
                  ADMIN_TOKEN: "test-admin-token-0123456789abcdef",
                  CREDENTIALS_ENCRYPTION_KEY: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
                  JOB_ID_SECRET: "test-job-id-secret",
                  UPSTREAM_APP_SECRET: "test-upstream-app-secret",
                  UPSTREAM_VERIFY_TOKEN: "test-verify-token",
                  ALLOW_INSECURE_WEBHOOK_URLS: "false",
                  // One pass per alarm: tests step the drain with runDurableObjectAlarm and a controlled clock.
                  DRAIN_SESSION_MS: "0",
                },
              },
            }),
          ],
          test: {
            name: "workers",
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
