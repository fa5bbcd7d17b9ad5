// Writes bench/cost.md from the counts of the last cost run (.wrangler/cost-results.json, written by
// bench/cost/lifecycle.cost.ts through the COST_SINK binding) and the prices in prices.mjs.
// The figures before the cuts are prose (BEFORE): cost.md is the one result file.
import { readFileSync, writeFileSync } from "node:fs";
import { PRICES, perMillion } from "./prices.mjs";

/**
 * The counts of one step, as bench/cost/meter.ts writes them (its `Usage`; restated here because meter.ts is
 * typed for workerd): per object class, queue or route.
 * @typedef {object} Usage
 * @property {Record<string, number>} workerRequests
 * @property {Record<string, number>} doRequests
 * @property {Record<string, number>} alarms
 * @property {Record<string, { read: number, written: number }>} sql
 * @property {Record<string, { read: number, written: number, calls: number }>} sqlByStatement
 * @property {Record<string, number>} setAlarm
 * @property {Record<string, { writes: number, reads: number, deletes: number, retries: number, messages: number, bytes: number }>} queues
 * @property {{ read: number, written: number, queries: number }} d1
 * @property {{ classA: number, classB: number, free: number, bytesPut: number }} r2
 * @property {Record<string, number>} outbound
 */
/** One scenario of a cost run (bench/cost/lifecycle.cost.ts). @typedef {{ name: string, description: string, messages: number, steps: Array<{ step: string, usage: Usage }> }} Scenario */
/** .wrangler/cost-results.json. @typedef {{ measuredAt: string, results: Scenario[], objectStart?: Usage }} CostRun */

const here = (/** @type {string} */ p) => new URL(p, import.meta.url);
/** @type {CostRun} */
const run = JSON.parse(readFileSync(here("../../.wrangler/cost-results.json"), "utf8"));

// The same scenarios measured on the code before the cuts below (one run, kept here as prose).
const BEFORE = [
  "Before the cuts the three text scenarios wrote 196; 89.18; 91.54 rows per message (SQL and `setAlarm`), made 18; 15.09; 15.3",
  "queue operations per message, and came to $224.77; $99.37; $101.69 per million messages. Per step, for the lone message; 100 to",
  "one number; 100 over ten numbers: accept and send 100; 58.43; 59.35 rows per message, the operator's status webhooks",
  "23; 16.07; 16.43, the first hour 2; 0.02; 0.11, until day 3 40; 10.39; 11.38, until day 45 31; 4.27; 4.27.",
];

// Assumptions for what the local runtime cannot measure (stated in the output).
const ASSUME = {
  workerCpuMsPerInvocation: 5,
  doActiveMsPerRequest: 10,
  operatorLatencyMs: 300,
  gbPerObject: 0.128,
};
// Bytes per row measured for docs/architecture.md ("Storage budget"), and how long each is kept.
const STORED = [
  // A quiet workspace (under its storage budget, as in every scenario here) keeps its records until the plan's window ends.
  { what: "slot table record with its index entries (`npm run bench`, Storage)", bytes: 938, days: 30 },
  { what: "delivery-log attempts (3, packed; kept 3 days after their day)", bytes: 3 * 205, days: 4 },
];
const R2_BYTES_PER_MESSAGE = 130;
const R2_DAYS = 400;

// What changed since the baseline, with the rows written per message each run measured
// (lone message; 100 to one number; 100 over ten numbers).
const CUTS = [
  "**Baseline** (before any cut): 177; 104.1; 101.2 rows written per message.",
  "**The number object writes its name once** (`channel-number.ts`): `admit()` upserted `meta.channel_number_id` on every admission, an unchanged value but a billed row each time; now only when the object does not know it yet. 177 → 177 (a new object still writes it once); 104.1 → 103.1; 101.2 → 100.3.",
  "**Retention steps gather their rows** (`RETENTION_SLACK_MS`, `scheduler.ts`): idempotency-purge, event-purge, move-to-history and the number's purge were due the instant their oldest row expired, so each expiring row cost its own alarm (a request) and re-arming (a row), and each message moved to history alone (its own `put`, two `meta` upserts in the shard). Now they are due 5 minutes later and take everything expired by then, in batches of 500. 177 → 169; 103.1 → 90.0; 100.3 → 90.1. Alarm runs (billed requests) per message: 21 → 13; 11.3 → 2.1; 7.9 → 1.7.",
  "**A delivery report re-arms the alarm only if the due time moved** (`Scheduler.rearmIfMoved`): `recordDeliveries()` called `setAlarm()` every time, usually with the time already set. Outside the alarm handler only (an alarm run always re-arms itself when it ends, so a skipped call never loses a wake). 169 → 167; 90.0 → 88.9; 90.1 → 89.7 (workspace `setAlarm()` per message 12 → 10; 3.2 → 2.1; 0.9 → 0.5).",
  "**The meter counts every statement** (`bench/cost/statements.ts`, not a cut): a multi-statement `exec` reports the rows of its last statement only, so the schema a new object creates (a table and its indexes in one string) was under-counted. The meter now runs such strings statement by statement. 167 → 196; 88.9 → 89.2; 89.7 → 91.5 (a new number object writes 34 rows, not 17). Later figures compare with this.",
  "**Events packed, operator webhooks applied in their request** (`src/lib/event-packs.ts`, `src/queue/webhook-delivery.ts`, `src/routes/operator-webhook.ts`): queue operations are billed per message (per 64 KB), and every event and every operator item was a message of its own (write, read, delete). Events now go several to a message (≤ 50, ≤ 60 KB), and an operator webhook is applied by the route itself, the queue only taking what fails. Queue operations per message: 18 → 9; 15.1 → 3.15; 15.3 → 0.96.",
  '**The event log writes fewer index entries** (`src/durable-objects/workspace/event-log.ts`; docs/architecture.md, "Events"): 33 → 21 rows per message in all three scenarios. No `events_by_subject` (only tests read events by message; they read the table); no `events_to_check` entry for an event awaiting its first report (a walk in sequence order from a `meta` start finds it; the index keeps only events whose report was asked for again), and `check_at` left out of the delivered update when unset; no `events_settled` (settled events are purged by a walk of the oldest 200); the delivery log of new objects WITHOUT ROWID keyed (webhook_id, seq) (2 rows per attempt, was 3; existing objects keep theirs). An event now costs 2 rows, its delivered report 1 + 2. Measured against the merged main before it (schema versions, WITHOUT ROWID messages and keys included): 174 → 162; 83.0 → 71.1; 85.4 → 73.5. SQLite rows read per message rise (the walks: 1,045 → 1,149; 228 → 732; 233 → 393, under $0.001 per 1,000 messages) and alarm runs by ~0.03 per message in batches (the walk\'s start moves once per 100 events).',
  "**The number object writes a third of its rows** (`src/durable-objects/channel-number/`): status changes are handed to the workspace right after their commit instead of through a `status_outbox` row (3 inserts of 2 rows and 3 deletes per message); the outbox entry is the durable record, and a restart hands again everything written since a checkpoint kept on the pace's `meta` row (a relay row only when the hand-off fails). `outbox_by_upstream_id` (statuses routed by jobId) and `outbox_by_accepted` (window rebuilt from the newest keys) dropped; new outbox tables without `AUTOINCREMENT` (the drain moves an entry by key and jobId); entries in flight listed in the pace's row instead of the `outbox_sending` index; no index on `pair_pace.tat` (an hourly sweep in key order). Number object rows written per message (SQL + setAlarm): 71 → 56; 28.5 → 14.5; 33.2 → 19.1. Totals: 196 → 159; 89.2 → 69.0; 91.5 → 71.3.",
  "**Engine v2: one record per message** (`src/durable-objects/workspace/`, `src/durable-objects/channel-number/`; docs/architecture.md): the message record in the workspace object is the only copy of a message. The number keeps its queue in memory (a view of the records' `pending` work list, rebuilt after a restart) and writes no row per message; a call is granted by a compare-and-set on the record (`claim`); events are derived from the record (deterministic ids, no events table, no republish); the Idempotency-Key is a column of the record; daily counts are counted from the records; records live in 6-hour slot tables `WITHOUT ROWID` whose updates set only changed columns, dropped whole when archived (a quiet workspace archives straight from them, no history shard); the delivery log is one row per number per consumer report in day tables dropped whole. Measured against main before it (cd615a2: 150; 55.99; 59.41 rows written per message; 9; 1.65; 0.63 queue operations): 26; 10; 9.24 rows written; 9; 1.65; 0.60 queue operations.",
  "**Month-to-date tallies** (`src/durable-objects/workspace/counts.ts`, `SlotTally`; workspace schema step 2; not a cut): the first send and `GET /usage` after every wake counted every record of the month (a GROUP BY over each slot table: 100,023 rows read on 50,000 records). A slot of 64 records or more keeps its counts in a `meta` tally row, rewritten by a change to a record it covers, moved forward by the minute's count flush, deleted with its table: a wake reads a row per slot and the last minutes' records. A lone message writes none; ~0.02 rows per message in the batch scenarios (the flush's tally row and its delete when the table is dropped).",
  "**A slot table's indexes at its 64th record** (`src/durable-objects/workspace/day-tables.ts`, `INDEX_MIN_RECORDS`): a table was created with its four indexes and each record entered three (`_to`, `_key`, `_work`); a table of fewer than 64 records is now read whole instead, and the insert of its 64th record builds the indexes in its transaction (one row per entry of the records there: those already sent have no `_work` entry to write and remove). Lone message: 26 → 19 (4 `CREATE INDEX` and 3 entries); batches: the insert writes 2.08 rows per message instead of 4, the index build 1.34.",
  "**No `meta` write equal to the default** (`src/durable-objects/workspace/workspace.ts`, `history_days`): the plan's window was written on the first config load of every workspace, the usual 30 days included; now only a window other than the default has a row. Lone message: 19 → 18.",
  "**No throttle take and refund on a known key's cache refresh** (`src/middleware/api-key-auth.ts`, `src/domain/key-cache.ts`): every 5 s (the key cache's TTL) a busy valid key spent a failed-authentication token and got it back (two rows in the Throttle object); a key the isolate found valid before is now read again from D1 without them. Throttle rows per message: 0.34 → 0 (one number), 0.04 → 0 (ten numbers).",
  "**Together** (one run after the four changes above; the split per change is read from its per-statement table): 26 → 18; 10 → 9.02; 9.24 → 8.58 rows written per message; queue operations 9; 1.62; 0.60 (unchanged); SQLite rows read per message 385 → 102 for a lone message (a bare slot table reads no index pages).",
];

// Rows the table points at that were left alone, and why.
const NOT_DONE = [
  "A lone message still writes 18 rows (the aim was 14): 2 are the slot table it opens (now without indexes), 4 the delivery log's day table and its rows, 1 `meta` (the day ledger at the archive), 7 `setAlarm()` (the publisher's second, the counts' minute, the archive). The publisher's alarm per second of activity (an in-memory timer instead) and the drain started by `admit` in memory (the alarm only for waits) are the cuts left: they touch the publisher and the number's drain, reworked at the same time for durable announcements and claims.",
  "The record's insert writes 4 rows once its slot table has its indexes (the row and its `_to`, `_key` and `_work` entries) and each of its 3 updates 1: the floor of this layout is ~7–8 rows per message, reached in the batch scenarios once the delivery log's rows (one per number per consumer report: 0.5–1 per message) and the publisher's alarms (~1 per second of activity) are counted.",
];

const sum = (/** @type {number[]} */ xs) => xs.reduce((a, b) => a + b, 0);
const values = (/** @type {Record<string, number> | undefined} */ rec) => sum(Object.values(rec ?? {}));

/**
 * A scenario's counts added up over its steps.
 * @typedef {object} Totals
 * @property {number} workerRequests
 * @property {number} doRpc
 * @property {number} alarms
 * @property {number} rowsRead
 * @property {number} rowsWrittenSql
 * @property {number} setAlarm
 * @property {number} queueOps
 * @property {number} queueMessages
 * @property {number} d1Read
 * @property {number} d1Written
 * @property {number} r2A
 * @property {number} r2B
 * @property {number} operatorCalls
 * @property {Record<string, { read: number, written: number, setAlarm: number }>} byClass
 * @property {Array<{ step: string, written: number, read: number }>} byStep
 * @property {Record<string, { read: number, written: number, calls: number }>} byStatement
 */

/** @param {Scenario} scenario @returns {Totals} */
function totals(scenario) {
  /** @type {Totals} */
  const t = {
    workerRequests: 0,
    doRpc: 0,
    alarms: 0,
    rowsRead: 0,
    rowsWrittenSql: 0,
    setAlarm: 0,
    queueOps: 0,
    queueMessages: 0,
    d1Read: 0,
    d1Written: 0,
    r2A: 0,
    r2B: 0,
    operatorCalls: 0,
    byClass: {},
    byStep: [],
    byStatement: {},
  };
  for (const { step, usage: u } of scenario.steps) {
    t.workerRequests += values(u.workerRequests);
    t.doRpc += values(u.doRequests);
    t.alarms += values(u.alarms);
    t.setAlarm += values(u.setAlarm);
    let stepWritten = values(u.setAlarm);
    for (const [cls, rows] of Object.entries(u.sql)) {
      t.rowsRead += rows.read;
      t.rowsWrittenSql += rows.written;
      stepWritten += rows.written;
      const c = (t.byClass[cls] ??= { read: 0, written: 0, setAlarm: 0 });
      c.read += rows.read;
      c.written += rows.written;
    }
    for (const [cls, n] of Object.entries(u.setAlarm))
      (t.byClass[cls] ??= { read: 0, written: 0, setAlarm: 0 }).setAlarm += n;
    for (const q of Object.values(u.queues)) {
      t.queueOps += q.writes + q.reads + q.deletes;
      t.queueMessages += q.messages;
    }
    t.d1Read += u.d1.read;
    t.d1Written += u.d1.written;
    t.r2A += u.r2.classA;
    t.r2B += u.r2.classB;
    t.operatorCalls += u.outbound["operator call"] ?? 0;
    t.byStep.push({ step, written: stepWritten, read: sum(Object.values(u.sql).map((r) => r.read)) });
    for (const [k, s] of Object.entries(u.sqlByStatement)) {
      const b = (t.byStatement[k] ??= { read: 0, written: 0, calls: 0 });
      b.read += s.read;
      b.written += s.written;
      b.calls += s.calls;
    }
  }
  return t;
}

/** @param {number} n */
const fmt = (n, digits = 2) =>
  n === 0
    ? "0"
    : n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: n < 10 ? digits : 0 });
const usd = (/** @type {number} */ n) => `$${n < 1 ? n.toFixed(3) : n.toFixed(2)}`;

/** @param {Totals} t @param {number} n messages */
function costRows(t, n) {
  const per = (/** @type {number} */ x) => x / n;
  const doDurationGbS =
    (((t.doRpc + t.alarms) * ASSUME.doActiveMsPerRequest + t.operatorCalls * ASSUME.operatorLatencyMs) / 1000) *
    ASSUME.gbPerObject;
  const storedGbMonth = sum(STORED.map((s) => (s.bytes / 1e9) * (s.days / 30)));
  const r2GbMonth = (R2_BYTES_PER_MESSAGE / 1e9) * (R2_DAYS / 30);
  /** @type {Array<[string, number, import("./prices.mjs").Price, string]>} */
  const rows = [
    [
      "Worker requests (API call, operator webhooks, queue consumer invocations)",
      per(t.workerRequests),
      PRICES.workerRequests,
      "measured",
    ],
    [
      "Worker CPU ms",
      per(t.workerRequests) * ASSUME.workerCpuMsPerInvocation,
      PRICES.workerCpuMs,
      `estimate: ${ASSUME.workerCpuMsPerInvocation} ms per invocation`,
    ],
    ["Durable Object requests: RPC calls", per(t.doRpc), PRICES.doRequests, "measured"],
    ["Durable Object requests: alarm invocations", per(t.alarms), PRICES.doRequests, "measured"],
    [
      "Durable Object duration (GB-s)",
      per(doDurationGbS),
      PRICES.doDurationGbS,
      `estimate: ${ASSUME.doActiveMsPerRequest} ms active per request or alarm, + ${ASSUME.operatorLatencyMs} ms per operator call`,
    ],
    ["SQLite rows read", per(t.rowsRead), PRICES.sqliteRowsRead, "measured"],
    ["SQLite rows written: SQL", per(t.rowsWrittenSql), PRICES.sqliteRowsWritten, "measured"],
    ["SQLite rows written: setAlarm()", per(t.setAlarm), PRICES.sqliteRowsWritten, "measured"],
    [
      "SQLite storage (GB-month)",
      storedGbMonth,
      PRICES.sqliteStorageGbMonth,
      "estimate: bytes per row × days kept (below)",
    ],
    ["Queue operations (write + read + delete per 64 KB)", per(t.queueOps), PRICES.queueOperations, "measured"],
    ["D1 rows read", per(t.d1Read), PRICES.d1RowsRead, "measured"],
    ["D1 rows written", per(t.d1Written), PRICES.d1RowsWritten, "measured"],
    ["R2 Class A operations", per(t.r2A), PRICES.r2ClassA, "measured"],
    ["R2 Class B operations", per(t.r2B), PRICES.r2ClassB, "measured"],
    [
      "R2 storage (GB-month)",
      r2GbMonth,
      PRICES.r2StorageGbMonth,
      `estimate: ${R2_BYTES_PER_MESSAGE} B gzip per message × ${R2_DAYS} days`,
    ],
  ];
  return rows.map(([what, perMessage, price, basis]) => ({
    what,
    perMessage,
    dollars: perMillion(price, perMessage),
    basis,
  }));
}

/** @type {string[]} */
const out = [];
const p = (line = "") => out.push(line);
p("# Cost per message (`npm run bench:cost`)");
p();
p(
  `Generated by \`bench/cost/render.mjs\` from the counts of \`bench/cost/lifecycle.cost.ts\` (run ${run.measuredAt}).`,
);
p(
  "Counts are exact for what they measure: every SQL statement's `SqlStorageCursor.rowsRead`/`rowsWritten` in every object,",
);
p(
  "every `setAlarm()`, every RPC call on a Durable Object stub, every alarm run, every queue message sent, delivered and",
);
p(
  "acknowledged, every D1 statement's `meta.rows_read`/`rows_written`, every R2 call, every inbound Worker invocation.",
);
p(
  "The harness wraps the runtime's prototypes and the Worker's handlers for the run (`bench/cost/meter.ts`); no module of",
);
p("`src/` is replaced. Only the operator and the customer's receiver are answered at the outbound fetch.");
p();
p("## The life of a message");
p();
p(
  "Accepted (`POST /api/v1/messages`), handed to its number, sent to the operator (Cloud API, mocked), then two operator",
);
p(
  "status webhooks (`sent`, `delivered`, one POST each); the customer's webhook receives three `message.status` events",
);
p(
  "(`processing`, `sent`, `delivered`), each reported back to the delivery log; daily counts reach D1; the workspace is under",
);
p(
  "its storage budget, so the record stays in its slot table until the plan's 30 days end, when its day is archived to R2",
);
p(
  "and the tables dropped; the delivery log's day table is dropped after 3 days. The clock is simulated: the harness runs each object's alarm",
);
p(
  "when it is due, in time order, up to day 45, and waits for the queues between alarms. A send starts its number's drain in",
);
p(
  "memory as in production; `DRAIN_SESSION_MS = 1` gives every wait of the pace to the alarm (production waits up to 10 s in",
);
p(
  "the session instead, so its alarms are at most these). Batched work (archive parts, count flushes, table drops, event publishing) is",
);
p("shared by the messages of the run, so its share per message = batch cost ÷ messages in the batch.");
p();
p("## Prices");
p();
p("| price | per | included monthly (Workers Paid) | page | read on | source |");
p("| --- | --- | --- | --- | --- | --- |");
for (const [name, pr] of Object.entries(PRICES)) {
  p(
    `| ${name}: $${pr.usd} | ${pr.per === 1 ? "" : `${pr.per.toLocaleString("en-US")} `}${pr.unit} | ${pr.included} | ${pr.cite.url} | ${pr.cite.readOn} | ${pr.cite.source} |`,
  );
}
p();
p(
  "Dollars below are marginal (after the included usage, which is per account and month and does not scale with messages),",
);
p(
  "per **million messages**. Not in the corpus, so not used: Workers Paid's $5 monthly minimum is a fixed fee, not per message.",
);
p();

/** @type {Array<{ name: string, description: string, total: number, written: number, t: Totals, n: number }>} */
const summary = [];
for (const scenario of run.results) {
  const t = totals(scenario);
  const n = scenario.messages;
  const rows = costRows(t, n);
  const total = sum(rows.map((r) => r.dollars));
  const written = (t.rowsWrittenSql + t.setAlarm) / n;
  summary.push({ name: scenario.name, description: scenario.description, total, written, t, n });
  p(`## ${scenario.description}`);
  p();
  p("| component | per message | $ / million messages | basis |");
  p("| --- | ---: | ---: | --- |");
  for (const r of rows)
    p(
      `| ${r.what} | ${r.perMessage > 0 && r.perMessage < 0.001 ? r.perMessage.toExponential(2) : fmt(r.perMessage, 3)} | ${usd(r.dollars)} | ${r.basis} |`,
    );
  p(`| **total** | | **${usd(total)}** | |`);
  p();
  p(
    `Rows written per message: **${fmt(written)}** (SQL ${fmt(t.rowsWrittenSql / n)}, setAlarm ${fmt(t.setAlarm / n)}), ${fmt((100 * perMillion(PRICES.sqliteRowsWritten, written)) / total, 0)}% of the total.`,
  );
  p();
  p("Rows per message, per object class:");
  p();
  p("| object | rows read | rows written (SQL) | setAlarm() |");
  p("| --- | ---: | ---: | ---: |");
  for (const [cls, c] of Object.entries(t.byClass).sort())
    p(`| ${cls} | ${fmt(c.read / n)} | ${fmt(c.written / n)} | ${fmt(c.setAlarm / n)} |`);
  p();
  p("Rows written per message, per step of the life (SQL and setAlarm):");
  p();
  p("| step | rows written | rows read |");
  p("| --- | ---: | ---: |");
  for (const s of t.byStep) p(`| ${s.step} | ${fmt(s.written / n)} | ${fmt(s.read / n)} |`);
  p();
  p("Statements writing the most rows per message (object: statement, cut at 110 characters):");
  p();
  p("| statement | calls / message | rows written / message | rows read / message |");
  p("| --- | ---: | ---: | ---: |");
  const top = Object.entries(t.byStatement)
    .filter(([, s]) => s.written > 0)
    .sort(([, a], [, b]) => b.written - a.written)
    .slice(0, 15);
  for (const [k, s] of top)
    p(`| \`${k.replaceAll("|", "\\|")}\` | ${fmt(s.calls / n)} | ${fmt(s.written / n)} | ${fmt(s.read / n)} |`);
  p();
}

if (run.objectStart) {
  const u = run.objectStart;
  p("## Waking an object");
  p();
  p(
    "Not per message: what a new object's first start costs (its constructor runs the schema steps and reads `meta`). An",
  );
  p(
    "existing object that starts again (after an eviction) reads its schema version (one row) and runs no schema statement;",
  );
  p("a history shard creates nothing until a day is moved to it.");
  p();
  p("| object | rows read | rows written |");
  p("| --- | ---: | ---: |");
  for (const [cls, r] of Object.entries(u.sql).sort()) p(`| ${cls} | ${r.read} | ${r.written} |`);
  p();
}

p("## Summary");
p();
p("| scenario | rows written / message | queue operations / message | total $ / million messages |");
p("| --- | ---: | ---: | ---: |");
for (const s of summary) p(`| ${s.description} | ${fmt(s.written)} | ${fmt(s.t.queueOps / s.n)} | ${usd(s.total)} |`);
p();
for (const line of BEFORE) p(line);
p();
p("## Cuts");
p();
for (const c of CUTS) p(`- ${c}`);
p();
p("Considered and not done:");
p();
for (const c of NOT_DONE) p(`- ${c}`);
p();
p("## Assumptions");
p();
p(
  `- Durable Object duration cannot be measured in the local runtime: ${ASSUME.doActiveMsPerRequest} ms of activity per request or alarm, plus`,
);
p(
  `  ${ASSUME.operatorLatencyMs} ms per operator call (the drain alarm awaits the answer), at 0.128 GB per object (the pricing page's`,
);
p("  arithmetic). Objects hold no WebSockets, so an idle object is hibernatable and not billed.");
p(
  `- Worker CPU: ${ASSUME.workerCpuMsPerInvocation} ms per invocation (the local bench, bench/results.md, measures 4–14 ms of runtime CPU per request`,
);
p("  including the objects' work; Workers bill the Worker's own CPU only).");
p(
  '- Storage: bytes per row from docs/architecture.md ("Storage budget", measured), kept as long as the retention windows say:',
);
for (const s of STORED) p(`  ${s.what}: ${s.bytes} B × ${s.days} days;`);
p(`  R2: ${R2_BYTES_PER_MESSAGE} B per message compressed (the architecture's estimate) × ${R2_DAYS} days.`);
p(
  "- Queue messages are each under 64 KB (measured sizes + 100 B metadata), so one operation per write, read and delete.",
);
p("- Customer webhook deliveries, operator calls and DNS lookups are outbound subrequests: not billed as requests.");
p("- The hourly cron (D1 retention) is a fixed cost per deployment, not per message, and is left out.");
p();
writeFileSync(here("../cost.md"), `${out.join("\n")}\n`);
console.log(
  out.filter((l) => l.startsWith("| ") && (l.includes("**total**") || l.includes("rows written /"))).join("\n"),
);
