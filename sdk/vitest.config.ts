import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// `npm run test:sdk`: the SDK in Node against the real Worker, started once with `wrangler dev`
// on loopback (test/setup/wrangler-dev.ts).
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["./test/setup/wrangler-dev.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // One Worker for all files; files run one after another so that rate limits and timing stay readable.
    fileParallelism: false,
  },
});
