declare namespace Cloudflare {
  interface Env {
    /** Cost harness only: hands the counts to the vitest process (bench/vitest.cost.config.ts). */
    COST_SINK: Fetcher;
  }
}
