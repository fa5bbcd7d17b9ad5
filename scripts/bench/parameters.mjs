// The parameters of `npm run bench` (scripts/bench.mjs), with why each has its value.

export const WORKSPACES = 20;
// Not more: (b) must come back to each number while its object is still live. Tried while
// building this bench: with 500 numbers each number came round only every ~16 s, the local
// runtime had evicted its object meanwhile, and (b) measured object restarts (like (w)).
export const NUMBERS_PER_WORKSPACE = 10; // the "scale" plan allows 100
export const NUMBERS = WORKSPACES * NUMBERS_PER_WORKSPACE;
export const NUMBER_LIMIT_PER_S = 2; // src/domain/rate-window.ts
export const WORKSPACE_LIMIT_PER_MIN = 1200;
/** (b) never offers more than 1 send per second per number: half the number's limit. */
export const SEND_RATE_CAP = NUMBERS * 1;
export const CONNECTIONS = 10; // the same for every case
export const DURATION_S = 10; // per measured case
export const WARMUP_S = 3;
/**
 * Pause after the warm-up sends. Not needed for the limits ((b) comes back to a number at most
 * once per second, so a warm-up send and (b)'s sends never make three in one second); short,
 * so that the objects stay live.
 */
export const AFTER_WARMUP_MS = 500;
export const SETTLE_LIMIT_MS = 20_000;
export const READY_LIMIT_MS = 90_000;
// A safety net, well above the ~4 minutes of a run on an idle machine: a busy one makes every phase slower.
export const RUN_LIMIT_MS = 600_000;

// The storage and list workspaces: their own, so that (b)–(d) are what they were before they existed.
export const STORAGE_NUMBERS = 100; // the scale plan's maximum
/** Sends measured for bytes per message: with the warm-up send per number, under the 1200/min window. */
export const STORAGE_SENDS = 1_000;
/** One send per number per second at most (half the number's limit). */
export const STORAGE_RATE = STORAGE_NUMBERS;
if (STORAGE_NUMBERS + STORAGE_SENDS >= WORKSPACE_LIMIT_PER_MIN)
  throw new Error("the storage sends would reach the workspace limit");
/** The storage budget's average body, of the storage sends and of the seeded records (bench/seed.ts BODY_CHARS). */
export const BODY_CHARS = 200;
export const SEED_MESSAGES = 1_000_000;
/** Numbers the seeded messages are spread over: a busy workspace's few numbers. */
export const SEED_NUMBERS = 10;
export const LIST_LIMIT = 20; // GET /messages' default page
export const LIST_FILTER_STATUS = "sent";
/**
 * What the engine's own bounds give, indexes included: a record of a slot table "~750 B with a
 * 200-character body, + ~180 B of index entries" (src/durable-objects/workspace/day-tables.ts),
 * a delivery attempt in the log "~200 B" (delivery-log.ts).
 */
export const BUDGET_BYTES_PER_ROW = { record: 930, attempt: 200 };
/** A measured figure this close to the budget's agrees with it (rows differ in their optional fields and id lengths). */
export const AGREE_WITHIN = 0.15;

// Worst case per workspace in this run: one warm-up send per number, then (b) at the cap.
export const WORST_PER_WORKSPACE = NUMBERS_PER_WORKSPACE + (SEND_RATE_CAP * DURATION_S) / WORKSPACES;
if (WORST_PER_WORKSPACE >= WORKSPACE_LIMIT_PER_MIN) throw new Error("bench parameters would reach the workspace limit");
