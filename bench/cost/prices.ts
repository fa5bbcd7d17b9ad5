// Cloudflare's published prices (Workers Paid plan), as read on 2026-11-23 from the
// documentation pages below (their source, cloudflare/cloudflare-docs, at the commit given,
// through the project's docs search). Marginal prices: what one more unit costs once the
// plan's included monthly usage is spent (the allowances are per account and month, so they
// do not scale with messages; they are listed for reference).

export interface Price {
  usd: number;
  per: number;
  unit: string;
  included: string;
  cite: { url: string; source: string; readOn: string };
}

const page = (url: string, file: string, commit: string) => ({
  url: `https://developers.cloudflare.com/${url}`,
  source: `cloudflare/cloudflare-docs src/content/${file} @ ${commit}`,
  readOn: "2026-11-23",
});
const WORKERS = page("workers/platform/pricing/", "docs/workers/platform/pricing.mdx", "07acbb66");
const DURABLE_OBJECTS = page(
  "durable-objects/platform/pricing/",
  "partials/durable-objects/durable-objects-pricing.mdx",
  "07e200b7",
);
const QUEUES = page("queues/platform/pricing/", "partials/workers/queues_pricing.mdx", "96996fd3");
const D1 = page("d1/platform/pricing/", "partials/workers/d1-pricing.mdx", "25a83ced");
const R2 = page("r2/pricing/", "docs/workers/platform/pricing.mdx (R2 table)", "07acbb66");

/** Each price: US dollars per `per` units of `unit`. */
export const PRICES = {
  workerRequests: { usd: 0.3, per: 1e6, unit: "request", included: "10 million / month", cite: WORKERS },
  workerCpuMs: { usd: 0.02, per: 1e6, unit: "CPU ms", included: "30 million CPU ms / month", cite: WORKERS },
  doRequests: {
    usd: 0.15,
    per: 1e6,
    unit: "request (HTTP, RPC session, alarm invocation)",
    included: "1 million / month",
    cite: DURABLE_OBJECTS,
  },
  doDurationGbS: {
    usd: 12.5,
    per: 1e6,
    unit: "GB-s (128 MB per object while active)",
    included: "400,000 GB-s / month",
    cite: DURABLE_OBJECTS,
  },
  sqliteRowsRead: { usd: 0.001, per: 1e6, unit: "row read", included: "25 billion / month", cite: DURABLE_OBJECTS },
  sqliteRowsWritten: {
    usd: 1.0,
    per: 1e6,
    unit: "row written (each setAlarm() is one; deletes count)",
    included: "50 million / month",
    cite: DURABLE_OBJECTS,
  },
  sqliteStorageGbMonth: { usd: 0.2, per: 1, unit: "GB-month", included: "5 GB-month", cite: DURABLE_OBJECTS },
  queueOperations: {
    usd: 0.4,
    per: 1e6,
    unit: "operation (each 64 KB written, read or deleted)",
    included: "1 million / month",
    cite: QUEUES,
  },
  d1RowsRead: { usd: 0.001, per: 1e6, unit: "row read", included: "25 billion / month", cite: D1 },
  d1RowsWritten: { usd: 1.0, per: 1e6, unit: "row written", included: "50 million / month", cite: D1 },
  d1StorageGbMonth: { usd: 0.75, per: 1, unit: "GB-month", included: "5 GB", cite: D1 },
  r2ClassA: { usd: 4.5, per: 1e6, unit: "Class A operation (put, list)", included: "1 million / month", cite: R2 },
  r2ClassB: { usd: 0.36, per: 1e6, unit: "Class B operation (get, head)", included: "10 million / month", cite: R2 },
  r2StorageGbMonth: { usd: 0.015, per: 1, unit: "GB-month (Standard)", included: "10 GB-month", cite: R2 },
} satisfies Record<string, Price>;
