declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    /** Test-only: captures the runtime log lines a test expects (test/node/runtime-log.ts). */
    RUNTIME_LOG: Fetcher;
  }
}

// Vite's `?raw` imports: a documentation file's text, for tests that hold the docs to the code.
declare module "*.md?raw" {
  const text: string;
  export default text;
}
