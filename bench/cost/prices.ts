// Cloudflare's published prices (Workers Paid plan), as read on 2026-11-23 from the documentation pages
// below (their source, cloudflare/cloudflare-docs, at the commit given, through the project's docs search).
// Marginal prices: what one more unit costs once the plan's included monthly usage is spent (the allowances
// are per account and month, so they do not scale with messages; they are listed for reference).

const page = (url: string, file: string, commit: string) => ({
  url: `https://developers.cloudflare.com/${url}`,
  source: `cloudflare/cloudflare-docs src/content/${file} @ ${commit}`,
  readOn: "2026-11-23",
});
const WORKERS = page("workers/platform/pricing/", "docs/workers/platform/pricing.mdx", "07acbb66");
const DO = page(
  "durable-objects/platform/pricing/",
  "partials/durable-objects/durable-objects-pricing.mdx",
  "07e200b7",
);
const QUEUES = page("queues/platform/pricing/", "partials/workers/queues_pricing.mdx", "96996fd3");
const D1 = page("d1/platform/pricing/", "partials/workers/d1-pricing.mdx", "25a83ced");
const R2 = page("r2/pricing/", "docs/workers/platform/pricing.mdx (R2 table)", "07acbb66");

/** US dollars per `per` units of `unit`; the plan's monthly allowance; where it was read. */
function price(usd: number, per: number, unit: string, included: string, cite: ReturnType<typeof page>) {
  return { usd, per, unit, included, cite };
}
export type Price = ReturnType<typeof price>;

export const PRICES = {
  workerRequests: price(0.3, 1e6, "request", "10 million / month", WORKERS),
  workerCpuMs: price(0.02, 1e6, "CPU ms", "30 million CPU ms / month", WORKERS),
  doRequests: price(0.15, 1e6, "request (HTTP, RPC session, alarm invocation)", "1 million / month", DO),
  doDurationGbS: price(12.5, 1e6, "GB-s (128 MB per object while active)", "400,000 GB-s / month", DO),
  sqliteRowsRead: price(0.001, 1e6, "row read", "25 billion / month", DO),
  sqliteRowsWritten: price(1.0, 1e6, "row written (each setAlarm() is one; deletes count)", "50 million / month", DO),
  sqliteStorageGbMonth: price(0.2, 1, "GB-month", "5 GB-month", DO),
  queueOperations: price(0.4, 1e6, "operation (each 64 KB written, read or deleted)", "1 million / month", QUEUES),
  d1RowsRead: price(0.001, 1e6, "row read", "25 billion / month", D1),
  d1RowsWritten: price(1.0, 1e6, "row written", "50 million / month", D1),
  d1StorageGbMonth: price(0.75, 1, "GB-month", "5 GB", D1),
  r2ClassA: price(4.5, 1e6, "Class A operation (put, list)", "1 million / month", R2),
  r2ClassB: price(0.36, 1e6, "Class B operation (get, head)", "10 million / month", R2),
  r2StorageGbMonth: price(0.015, 1, "GB-month (Standard)", "10 GB-month", R2),
};
