// `npm run soak`: a fault and soak run against the real local runtime (`wrangler dev`); what it does, its checks and
// options: docs/developing.md and bench/soak.md. A mixed load (load.ts) through the fake operator (lib/operator.ts)
// while the runtime is killed and its objects restarted; then it waits (bounded) until everything settled, checks the
// invariants (checks.ts), writes the summary and exits 1 when one failed.
import { randomBytes, randomInt } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { onStop } from "../../scripts/lib/local-worker.mjs";
import { createOperatorWebhooks, startOperator } from "../lib/operator.ts";
import { startReceiver } from "../lib/receiver.ts";
import * as run from "../lib/run.ts";
import { startRuntime } from "../lib/runtime.ts";
import * as checks from "./checks.ts";
import { createLoad, wasAccepted, type AcceptedLoadSend, type Tenant } from "./load.ts";

const { callApi, fail, ROOT, seededRandom, sleep } = run;
const WORK_DIR = join(ROOT, ".wrangler", "soak");
const opts = run.options({
  duration: { env: "SOAK_DURATION_S", fallback: 180 },
  kills: { env: "SOAK_KILLS", fallback: 3 },
  restarts: { env: "SOAK_RESTARTS", fallback: 3 },
  seed: { env: "SOAK_SEED", fallback: randomInt(1, 2 ** 31) },
  workspaces: { fallback: 4 },
  numbers: { fallback: 3 },
  settle: { env: "SOAK_SETTLE_S", fallback: 360 },
  port: { env: "SOAK_PORT", fallback: 8830 },
});
const summaryArg = parseArgs({ options: { summary: { type: "string" } }, strict: false }).values.summary;
const SUMMARY = typeof summaryArg === "string" ? summaryArg : join(WORK_DIR, "summary.json");
if (opts.duration < 30) fail("--duration: at least 30 s");
// The Worker on P (its inspector P+1), the fake operator on P+2, the receiver on P+3.
const [operatorPort, receiverPort] = [opts.port + 2, opts.port + 3];
/** The Worker's vars for this run: the fake operator, and the short delays that fit a soak. */
const VARS = {
  UPSTREAM_CLOUD_API_BASE_URL: `http://127.0.0.1:${operatorPort}`,
  // The receiver refuses 30%: retries within seconds instead of the documented 5 min … 10 h.
  WEBHOOK_RETRY_DELAYS_SECONDS: "0,1,2,3,5,5,5,5",
  // A call whose refusal a kill cut off gets no status webhook: it fails after 60 s instead of 7 days.
  UNKNOWN_OUTCOME_WINDOW_MS: "60000",
  // Each operator call carries the time its number object started it: the pace invariant is checked on it.
  UPSTREAM_STAMP_CALLS: "true",
  // Restarts of the objects alone (POST /admin/v1/dev/object-restarts), and the event tap (the receiver's /tap).
  DEV_OBJECT_RESTARTS: "true",
  DEV_EVENT_TAP_URL: `http://127.0.0.1:${receiverPort}/tap`,
};
/** An event counted as lost with a killed queue may only be slow: settled once the receiver has been quiet this long. */
const QUIET_MS = 20_000;
const say = run.sayAs("soak");
const stops: Array<() => unknown> = [];
let stopping: Promise<void> | null = null;
const cleanup = () =>
  (stopping ??= (async () => {
    for (const fn of stops.reverse())
      await Promise.resolve(fn()).catch((err: unknown) => console.error(`[soak] cleanup: ${String(err)}`));
  })());
onStop(cleanup);
const seconds = (ms: number) => +(ms / 1000).toFixed(1);

async function main() {
  const runStarted = Date.now();
  const runId = randomBytes(3).toString("hex");
  const random = seededRandom(opts.seed);
  mkdirSync(WORK_DIR, { recursive: true });
  say(`run ${runId}, seed ${opts.seed}: ${JSON.stringify(opts)}`);
  // Numbers and their operator credentials, known to the fake operator before anything connects.
  const tenants: Tenant[] = Array.from({ length: opts.workspaces }, (_, w) => ({
    ...{ index: w, workspaceId: "", loadKey: "", checkKey: "" },
    numbers: Array.from({ length: opts.numbers }, (_, n) => ({
      id: "",
      phoneNumberId: `1${String(w).padStart(2, "0")}${String(n).padStart(2, "0")}${randomInt(1e9, 1e10)}`,
      token: `EAAGsoak${randomBytes(16).toString("hex")}`,
      // 60 recipients: the last digit is the recipient's fault class at the operator (lib/operator.ts).
      recipients: Array.from({ length: 60 }, (_, i) => `5511${w}${n}${randomInt(1e6, 2e6)}${i % 10}`),
    })),
  }));
  const tenantOf = new Map(tenants.flatMap((t) => t.numbers.map((n) => [n.phoneNumberId, t])));
  const baseUrl = `http://127.0.0.1:${opts.port}`;
  const secrets = new Map<string, string>();
  const receiver = await startReceiver({
    port: receiverPort,
    failShare: 0.3,
    random: seededRandom(opts.seed + 1),
    secrets,
  });
  stops.push(() => receiver.stop());
  const operatorWebhooks = createOperatorWebhooks({
    baseUrl,
    checkKeyOf: (id) => tenantOf.get(id)?.checkKey ?? fail(`no soak number has the phone number id ${id}`),
    random: seededRandom(opts.seed + 2),
  });
  stops.push(() => operatorWebhooks.stop());
  const operator = await startOperator({
    ...{ port: operatorPort, seed: opts.seed + 3, version: "v26.0", faults: true, latencyMs: [50, 700] },
    onCall: (call) => operatorWebhooks.onCall(call),
  });
  stops.push(() => operator.stop());
  for (const n of tenants.flatMap((t) => t.numbers)) operator.addNumber(n.phoneNumberId, n.token);
  say(`starting wrangler dev on ${baseUrl} (its log: .wrangler/soak/wrangler.log)`);
  const state = join(WORK_DIR, "state");
  const runtime = await startRuntime({ port: opts.port, state, logFile: join(WORK_DIR, "wrangler.log"), vars: VARS });
  stops.push(() => runtime.stop());
  say(`ready after ${(runtime.readyMs / 1000).toFixed(1)} s`);

  for (const t of tenants) {
    const ws = await run.workspace(baseUrl, `Soak ${runId} #${t.index}`);
    [t.workspaceId, t.loadKey, t.checkKey] = [ws.id, ws.apiKey, await run.apiKey(baseUrl, ws.id, "soak checks")];
    for (const [n, number] of t.numbers.entries()) {
      const display = `1555${t.index}${n}${randomInt(10000, 99999)}`;
      number.id = await run.liveNumber(baseUrl, t.workspaceId, display, number.phoneNumberId, number.token);
      secrets.set(number.id, await run.webhook(baseUrl, t.loadKey, number.id, receiver.url(number.id)));
    }
  }
  say(`seeded ${tenants.length} workspaces with ${tenantOf.size} live numbers; load for ${opts.duration} s`);

  // ---- load, with kills and restarts: one at a random moment in each slice of the load (not in its
  // first or last 15%), restarts and kills taking turns, restarts first.
  const load = createLoad({ baseUrl, tenants, runId, random: seededRandom(opts.seed + 4), ...operatorWebhooks });
  const loadStarted = Date.now();
  load.start();
  const plan = Array.from({ length: Math.max(opts.kills, opts.restarts) }, (_, i) => [
    ...(i < opts.restarts ? ["restart"] : []),
    ...(i < opts.kills ? ["kill"] : []),
  ]).flat();
  const slice = (opts.duration * 1000) / Math.max(1, plan.length);
  const sinceLoad = (at: number) => `+${seconds(at - loadStarted)} s`;
  for (const [k, what] of plan.entries()) {
    await sleep(Math.max(0, loadStarted + k * slice + random.between(0.15, 0.85) * slice - Date.now()));
    if (what === "kill") {
      const w = await runtime.killAndRestart();
      say(
        `kill ${runtime.windows.length} at ${sinceLoad(w.killedAt)}: up again ${seconds(w.readyAt - w.killedAt)} s later`,
      );
      continue;
    }
    // A deploy restarts every object; an eviction one side only: which one, by the seed.
    const scope = random.pick(["all", "workspaces", "numbers"]);
    const w = await runtime.restartObjects(scope, {
      workspaceIds: scope === "numbers" ? [] : tenants.map((t) => t.workspaceId),
      channelNumberIds: scope === "workspaces" ? [] : tenants.flatMap((t) => t.numbers.map((n) => n.id)),
    });
    say(`object restart ${runtime.restarts.length} (${scope}): ${w.restarted} objects ended at ${sinceLoad(w.at)}`);
  }
  await sleep(Math.max(0, loadStarted + opts.duration * 1000 - Date.now()));
  say("load stopped; waiting for the last answers");
  const waiting = setInterval(() => say(`still waiting: ${JSON.stringify(load.inFlight())}`), 10_000);
  await load.stop();
  clearInterval(waiting);
  const loadEnded = Date.now();
  const accepted = load.sends.filter(wasAccepted);
  say(`${accepted.length} sends accepted; settling (at most ${opts.settle} s)`);

  // ---- settle: every accepted message terminal, the operator's webhooks all confirmed, every event delivered
  const records = new Map<string, checks.MessageRecord>();
  const timelines = new Map<string, checks.TimelineEntry[]>();
  /** Each message's record, or its timeline (`/events`), read through the read limit and restarts (bounded: then unread). */
  const fetchAll = (list: AcceptedLoadSend[], events = false) =>
    run.mapLimit(list, 8, async (s) => {
      for (const started = Date.now(); Date.now() - started < 10_000; await sleep(500)) {
        const path = `/api/v1/messages/${s.jobId}${events ? "/events" : ""}`;
        const res = await callApi(baseUrl, "GET", path, s.tenant.checkKey).catch(() => null);
        if (res?.status === 200)
          return void (events ? timelines.set(s.jobId, res.json.timeline) : records.set(s.jobId, res.json));
        if (res?.status === 429) await sleep(1_000);
        else if (res && res.status < 500) return;
      }
    });
  const open = () => accepted.filter((s) => !["sent", "failed"].includes(records.get(s.jobId)?.status ?? ""));
  const kills = runtime.windows.map((w) => w.killedAt);
  const events = () =>
    checks.checkEvents(accepted, timelines, receiver.deliveries, operatorWebhooks.inbound, kills, receiver.published);
  let [settled, progress] = [false, "reading every record"];
  const reporting = setInterval(() => say(`settling: ${progress}`), 15_000);
  await fetchAll(accepted);
  for (; Date.now() < loadEnded + opts.settle * 1000; await sleep(2_000)) {
    await fetchAll(open());
    const webhooks = operatorWebhooks.busy() ? `pending (${operatorWebhooks.stats.pending})` : "all confirmed";
    progress = `${open().length} not terminal yet, operator webhooks ${webhooks}`;
    if (open().length > 0 || operatorWebhooks.busy()) continue;
    // Nothing changes the records any more: their timelines once, against the events as they arrive.
    if (timelines.size === 0) await fetchAll(accepted, true);
    const e = events();
    const lost = e.figures.lostWithQueueAtKill.reduce((a, b) => a + b, 0) + e.figures.inboundLostWithQueue;
    // An event counted as lost with a killed queue may only be slow: settled once the receiver has been quiet.
    settled = e.failures.length === 0 && (lost === 0 || Date.now() - (receiver.deliveries.at(-1)?.at ?? 0) >= QUIET_MS);
    if (settled) break;
    progress =
      e.failures.length > 0
        ? `all terminal; ${e.failures.length} messages' events not (yet) complete`
        : `all terminal; every event in, but ${lost} the kills may have lost: waiting until the receiver is quiet for ${QUIET_MS / 1000} s`;
  }
  clearInterval(reporting);
  const settleMs = Date.now() - loadEnded;
  operatorWebhooks.stop();
  // The final figures read every record once more (a record that changed after the snapshot shows here).
  await fetchAll(accepted);
  await fetchAll(accepted, true);
  say(settled ? `settled ${seconds(settleMs)} s after the load stopped` : `NOT settled within ${opts.settle} s`);

  // ---- checks
  const calls = operator.calls.slice();
  const results = {
    terminal: checks.checkTerminal(accepted, records),
    operatorCalls: checks.checkOperatorCalls(calls, accepted, records),
    events: events(),
    clientErrors: checks.checkClientErrors(load.answers, runtime.inWindow),
    numberRate: checks.checkNumberRate(calls),
    conversationOrder: checks.checkConversationOrder(accepted, calls),
    clientExpectations: { figures: load.counts, failures: load.mismatches },
  };
  const outcomes: Record<string, number> = {};
  for (const s of load.sends) outcomes[s.outcome] = (outcomes[s.outcome] ?? 0) + 1;
  const failing = Object.entries(results).filter(([, c]) => c.failures.length > 0);
  const summary = {
    ...{ runId, seed: opts.seed, date: new Date(runStarted).toISOString(), machine: run.machine(), options: opts },
    vars: VARS,
    // Kills and object restarts (`atS`: seconds into the load; the rest in ms since the epoch).
    killWindows: runtime.windows.map((w) => ({ atS: seconds(w.killedAt - loadStarted), ...w })),
    objectRestarts: runtime.restarts.map((w) => ({ atS: seconds(w.at - loadStarted), ...w })),
    eventTap: { posts: receiver.tapPosts(), eventsHeard: receiver.published.byEventId.size },
    ...{ settled, settleS: seconds(settleMs) },
    sends: { offered: load.sends.length, accepted: accepted.length, outcomes },
    operatorWebhooks: operatorWebhooks.stats,
    figures: Object.fromEntries(Object.entries(results).map(([k, c]) => [k, c.figures])),
    failures: Object.fromEntries(
      failing.map(([k, c]) => [k, { count: c.failures.length, first: c.failures.slice(0, 50) }]),
    ),
    passed: failing.length === 0 && settled,
    runS: seconds(Date.now() - runStarted),
  };
  // Everything recorded, for looking into a failure.
  const sends = load.sends.map(({ tenant: _tenant, ...s }) => s);
  const raw = { killWindows: runtime.windows, calls, sends, answers: load.answers, deliveries: receiver.deliveries };
  const seen = { records: Object.fromEntries(records), timelines: Object.fromEntries(timelines) };
  writeFileSync(join(WORK_DIR, "raw.json"), JSON.stringify({ ...raw, ...seen }));
  mkdirSync(dirname(SUMMARY), { recursive: true });
  writeFileSync(SUMMARY, JSON.stringify(summary, null, 2));
  for (const [name, c] of Object.entries(results))
    console.log(`  ${c.failures.length ? "✗" : "✓"} ${name} ${JSON.stringify(c.figures).slice(0, 200)}`);
  if (!settled) console.log("FAILED: the system did not settle within the bound");
  for (const [name, c] of failing) {
    console.log(`FAILED ${name}: ${c.failures.length} item(s)`);
    for (const item of c.failures.slice(0, 20)) console.log(`  ${JSON.stringify(item)}`);
  }
  const where = SUMMARY.startsWith(ROOT) ? SUMMARY.slice(ROOT.length + 1) : SUMMARY;
  console.log(`${summary.passed ? "PASSED" : "FAILED"}; every figure: ${where}`);
  return summary.passed;
}

run.runMain("soak", main, cleanup, (opts.duration + opts.settle + 600) * 1000);
