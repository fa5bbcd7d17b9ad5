// The parameters of `npm run bench` (load/main.ts), with why each has its value; the report states them.
// Not more: (b) must come back to each number while its object is still live. With 500 numbers each
// number came round only every ~16 s, the local runtime had evicted its object meanwhile, and (b)
// measured object restarts (like (w)).
export const WORKSPACES = 20;
export const NUMBERS_PER_WORKSPACE = 10; // the "scale" plan allows 100
export const NUMBERS = WORKSPACES * NUMBERS_PER_WORKSPACE;
/** (b) and (k) never offer more than 1 send per second per number: half the number's limit (2/s). */
export const SEND_RATE_CAP = NUMBERS;
export const DURATION_S = 10; // per measured case
export const WARMUP_S = 3;
/** After the warm-up sends: short, so that the objects stay live. */
export const AFTER_WARMUP_MS = 500;
export const SETTLE_LIMIT_MS = 20_000;
// A safety net, well above the ~6 minutes of a run on an idle machine.
export const RUN_LIMIT_MS = 900_000;
export const STORAGE_NUMBERS = 100; // the scale plan's maximum
/** With the warm-up send per number, under the 1200/min window. */
export const STORAGE_SENDS = 1_000;
/** The storage budget's average body, of the storage sends and of the seeded records (bench/seed.ts BODY_CHARS). */
export const BODY_CHARS = 200;
export const SEED_MESSAGES = 1_000_000;
export const SEED_NUMBERS = 10;
/** Records per seed call: one transaction in the object, well inside a request's time. */
export const SEED_CHUNK = 20_000;
/** bench/seed.ts SEED_SPAN_MS and RATE_WINDOW_MARGIN_MS, for the report. */
export const SEED_SPAN_MS = 40 * 3_600_000;
export const SEED_MARGIN_MS = 5 * 60_000;
export const LIST_LIMIT = 20; // GET /messages' default page
export const LIST_FILTER_STATUS = "sent";
/** Webhooks one API key may configure in a minute (src/domain/abuse-limits.ts: 60), with a margin. */
export const WEBHOOKS_PER_KEY = 50;
/** How long nothing may change before the storage workspace counts as done. */
export const QUIET_MS = 3_000;
export const NUMBER_LIMIT_PER_S = 2; // src/domain/rate-window.ts
export const WORKSPACE_LIMIT_PER_MIN = 1200;
/** The engine's own bounds, indexes included: a slot table record "~750 B with a 200-character body, + ~180 B of index entries" (day-tables.ts), a delivery attempt "~200 B" (delivery-log.ts). */
export const BUDGET_BYTES_PER_ROW = { record: 930, attempt: 200 };
/** A measured figure this close to the budget's agrees with it (rows differ in their optional fields and id lengths). */
export const AGREE_WITHIN = 0.15;
/** Worst case per workspace in a run: one warm-up send per number, then (b) at the cap. */
export const WORST_PER_WORKSPACE = NUMBERS_PER_WORKSPACE + (SEND_RATE_CAP * DURATION_S) / WORKSPACES;
if (WORST_PER_WORKSPACE >= WORKSPACE_LIMIT_PER_MIN || STORAGE_NUMBERS + STORAGE_SENDS >= WORKSPACE_LIMIT_PER_MIN)
  throw new Error("the bench's parameters would reach the workspace limit");
