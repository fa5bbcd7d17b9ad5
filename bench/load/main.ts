// `npm run bench` on the local runtime (`wrangler dev bench/worker.ts`), one client in this process (the
// cases and how to read them: bench/README.md): (w) one send per number, so that the cases meet live
// objects; (k) the accept path's own baseline; (b) accepted sends with the numbers' delivery held, then
// that delivery released and timed apart; storage: a workspace object's SQLite file before and after
// STORAGE_SENDS sends. Writes bench/results.md; exits 1 on answers a case should not have had. --port P
// (BENCH_PORT): the Worker on P, its inspector P+1, the storage case's receiver P+2.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { freePort, onStop } from "../../scripts/lib/local-worker.mjs";
import { startReceiver } from "../lib/receiver.ts";
import * as run from "../lib/run.ts";
import { startRuntime, type Runtime } from "../lib/runtime.ts";
import { findWorkspaceFile, storageOf } from "./sqlite.ts";

const { callApi, fail, fig, mapLimit, ROOT, sleep } = run;
// Not more numbers: (b) must come back to each number while its object is still live (with 500 it came
// round every ~16 s, the local runtime had evicted the object meanwhile, and (b) measured restarts).
const WORKSPACES = 20;
const NUMBERS_PER_WORKSPACE = 10;
const NUMBERS = WORKSPACES * NUMBERS_PER_WORKSPACE;
/** (k) and (b) are offered at most one send per second per number: half the number's limit (2/s). */
const RATE_CAP = NUMBERS;
const DURATION_S = 10;
const SETTLE_LIMIT_MS = 20_000;
const STORAGE_LIMIT_MS = 60_000;
const STORAGE_NUMBERS = 100; // the scale plan's maximum
const STORAGE_SENDS = 1_000; // with the warm-up send per number, under the workspace's 1,200 a minute
const BODY_CHARS = 200; // the storage budget's average body
/** The engine's bounds, indexes included (day-tables.ts, delivery-log.ts), and how close a measure agrees. */
const BOUND = { record: 930, attempt: 300 };
const AGREE_WITHIN = 0.15;

const opts = run.options({ port: { env: "BENCH_PORT", fallback: 0 } });
const STATE = join(ROOT, ".wrangler", "bench-state");
const say = run.sayAs("bench");
let runtime: Runtime | undefined;
const cleanup = async () => runtime?.stop();
onStop(cleanup);

const CONNECTIONS = 10; // the same for every case
type Answer = Awaited<ReturnType<typeof run.postSend>>;

/**
 * One case: CONNECTIONS requests at a time for DURATION_S s (or `amount` requests), at most `rate` a
 * second, request i made by `send(i)` and judged by `ok` (not ok: unexpected). Latency is per request
 * as the client saw it (no coordinated-omission correction).
 */
async function measure(
  label: string,
  what: string,
  o: { amount?: number; rate?: number; send: (i: number) => Promise<Answer>; ok: (a: Answer, i: number) => boolean },
) {
  say(`${label} ${what}`);
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const started = performance.now();
  let [next, slot, unexpected] = [0, started, 0];
  const more = (i: number) => (o.amount ? i < o.amount : performance.now() - started < DURATION_S * 1000);
  const connection = async () => {
    for (let i = next++; more(i); i = next++) {
      // A cap, not a schedule: a client that fell behind does not catch up in a burst.
      if (o.rate) {
        slot = Math.max(slot + 1000 / o.rate, performance.now());
        await sleep(slot - performance.now());
      }
      const sentAt = performance.now();
      const answer = await o.send(i).catch(() => null);
      latencies.push(performance.now() - sentAt);
      if (answer) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
      if (!answer || !o.ok(answer, i)) unexpected++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, connection));
  const seconds = (performance.now() - started) / 1000;
  const p = (q: number) => run.percentile(latencies, q) ?? NaN;
  return { label, what, rps: latencies.length / seconds, p50: p(50), p99: p(99), statuses, unexpected };
}
type Case = Awaited<ReturnType<typeof measure>>;

type Accepted = { apiKey: string; jobId: string };

async function main() {
  const runStarted = Date.now();
  const runId = randomBytes(4).toString("hex");
  const port = opts.port || (await freePort());
  say(`starting wrangler dev bench/worker.ts on 127.0.0.1:${port} (log .wrangler/bench-wrangler.log)`);
  runtime = await startRuntime({
    port,
    state: STATE,
    logFile: join(ROOT, ".wrangler", "bench-wrangler.log"),
    script: "bench/worker.ts",
    // wrangler's default: its per-request log line is part of what a request costs locally.
    logLevel: "log",
  });
  const rt = runtime;
  const base = rt.baseUrl;

  // ---- tenants: WORKSPACES × NUMBERS_PER_WORKSPACE sandbox numbers, and the storage workspace
  const tenant = async (name: string, count: number, prefix: string) => {
    const ws = await run.workspace(base, `Bench ${runId} ${name}`);
    const displays = Array.from({ length: count }, (_, n) => `${prefix}${String(n).padStart(4, "0")}`);
    const numbers = await mapLimit(displays, 8, (display) => run.number(base, ws.id, display));
    return { ...ws, numbers };
  };
  const workspaces = await mapLimit(
    Array.from({ length: WORKSPACES }, (_, w) => w),
    4,
    (w) => tenant(`#${w}`, NUMBERS_PER_WORKSPACE, `1555${String(w).padStart(3, "0")}`),
  );
  const store = await tenant("storage", STORAGE_NUMBERS, "1556000");

  /** Sends round-robin over `targets` (consecutive sends to different workspaces and numbers), each with a fresh key. */
  const sends = (
    prefix: string,
    targets: Array<{ ws: { apiKey: string }; numberId: string }>,
    text: (i: number) => string,
    path = "/api/v1/messages",
  ) => {
    const accepted: Accepted[] = [];
    const send = (i: number) => {
      const { ws, numberId } = targets[i % targets.length]!;
      const body = { channelNumberId: numberId, to: `5511${900000000 + i}`, text: { body: text(i) } };
      return run.postSend(base, ws.apiKey, body, `bench-${runId}-${prefix}-${i}`, path);
    };
    const ok = ({ status, json }: Answer, i: number) => {
      if (status !== 201 || typeof json?.jobId !== "string") return false;
      accepted.push({ apiKey: targets[i % targets.length]!.ws.apiKey, jobId: json.jobId });
      return true;
    };
    return { accepted, send, ok };
  };
  /** Waits (bounded) until a sample of `sent` is sent or failed, so that the next case does not share the runtime with their delivery. */
  const settle = async (sent: Accepted[]) => {
    const started = Date.now();
    const probe = [...sent.filter((_, i) => i % Math.max(1, Math.floor(sent.length / 30)) === 0), ...sent.slice(-10)];
    for (; Date.now() - started < SETTLE_LIMIT_MS; await sleep(500)) {
      const states = await mapLimit(
        probe,
        8,
        async (s) => (await callApi(base, "GET", `/api/v1/messages/${s.jobId}`, s.apiKey)).json?.status,
      );
      if (states.every((st) => st === "sent" || st === "failed")) return Date.now() - started;
    }
    return null;
  };
  const hold = (held: boolean) =>
    run.created(base, "/bench/hold", { numberIds: workspaces.flatMap((ws) => ws.numbers), held }, undefined, 204);

  // ---- (w), then (k) and (b) alike: the same bodies over the same keys, paced alike
  const targets = Array.from({ length: NUMBERS_PER_WORKSPACE }, (_, n) =>
    workspaces.map((ws) => ({ ws, numberId: ws.numbers[n]! })),
  ).flat();
  const text = (i: number) => `bench ${runId} message ${i}`;
  const warm = sends("w", targets, text);
  const w = await measure("(w)", "POST /api/v1/messages, first send to each number (warm-up)", {
    amount: NUMBERS,
    ...warm,
  });
  const warmSettle = await settle(warm.accepted);
  await sleep(500); // short, so that the objects stay live
  const k = await measure("(k)", "POST /bench/accept-baseline (the accept path's baseline)", {
    rate: RATE_CAP,
    ...sends("k", targets, text, "/bench/accept-baseline"),
  });
  await hold(true);
  const sent = sends("b", targets, text);
  const b = await measure("(b)", "POST /api/v1/messages, accepted (201)", { rate: RATE_CAP, ...sent });
  await hold(false);
  const bSettle = await settle(sent.accepted);
  if (!rt.alive()) fail("wrangler dev exited during the run (.wrangler/bench-wrangler.log)");

  // ---- storage: the storage workspace's file before and after STORAGE_SENDS sends, each number with a webhook to a receiver that accepts every delivery
  const secrets = new Map<string, string>();
  const receiver = await startReceiver({ port: opts.port ? opts.port + 2 : await freePort(), secrets });
  // Webhooks one API key may configure in a minute (src/domain/abuse-limits.ts: 60), with a margin.
  const keys = await Promise.all(
    Array.from({ length: STORAGE_NUMBERS / 50 }, (_, i) => run.apiKey(base, store.id, `webhooks ${i}`)),
  );
  await mapLimit(store.numbers, 8, async (numberId, i) =>
    secrets.set(numberId, await run.webhook(base, keys[Math.floor(i / 50)]!, numberId, receiver.url(numberId))),
  );
  const events = () => new Set(receiver.deliveries.filter((x) => x.status < 300).map((x) => x.webhookId)).size;
  const storeTargets = store.numbers.map((numberId) => ({ ws: store, numberId }));
  const body = `Bench ${runId} storage message: your order has shipped and should arrive within two business days. `
    .repeat(3)
    .slice(0, BODY_CHARS);
  const storeSend = async (prefix: string, amount: number) => {
    const s = sends(prefix, storeTargets, () => body);
    const r = await measure(`storage ${prefix}`, `${amount} sends`, { amount, rate: STORAGE_NUMBERS, ...s });
    if (s.accepted.length !== amount)
      fail(`storage sends (${prefix}): ${s.accepted.length} of ${amount} accepted: ${JSON.stringify(r.statuses)}`);
    return { ...r, accepted: s.accepted };
  };
  // Nothing left to write, by count, not by a quiet spell: every record settled and its three events
  // (processing, sent, and the sandbox's failed report for a closed window) delivered, every delivery logged.
  const settled = async (file: string, messages: number) => {
    const started = Date.now();
    for (; Date.now() - started < STORAGE_LIMIT_MS; await sleep(250)) {
      const now = storageOf(file);
      if (now.active === 0 && events() >= 3 * messages && now.log.attempts >= receiver.deliveries.length)
        return { ms: Date.now() - started, now };
    }
    return fail(`the storage workspace was not settled: ${events()} of ${3 * messages} events delivered`);
  };
  const warmed = await storeSend("warm", STORAGE_NUMBERS);
  const file =
    findWorkspaceFile(STATE, warmed.accepted[0]!.jobId) ?? fail("the storage workspace's SQLite file was not found");
  const { now: s0 } = await settled(file, STORAGE_NUMBERS);
  const storeRps = (await storeSend("sends", STORAGE_SENDS)).rps;
  const { ms: storeSettledMs, now: s1 } = await settled(file, STORAGE_NUMBERS + STORAGE_SENDS);
  await receiver.stop();
  await rt.stop();

  // ---- bench/results.md
  const statuses = (r: Case) => Object.entries(r.statuses).map(([code, n]) => `${code}: ${fig(n)}`);
  const figures = (r: Case) => [fig(r.rps), fig(r.p50, 1), fig(r.p99, 1), statuses(r).join(", ") || "none"];
  const rows = [k, b, w].map((r) => [r.label, r.what, ...figures(r), fig(r.unexpected)]);
  const bk = { rps: b.rps / k.rps, p99: b.p99 / k.p99 };
  const released = (ms: number | null) =>
    ms === null ? `not all delivered within ${SETTLE_LIMIT_MS / 1000} s` : `delivered ${fig(ms / 1000, 1)} s later`;
  const bRate = bSettle === null ? "" : `: ${fig(sent.accepted.length / (bSettle / 1000))} messages/s`;
  const grew = (f: (s: typeof s0) => number) => f(s1) - f(s0);
  const attempts = grew((s) => s.log.attempts);
  const expected = BOUND.record + (attempts / STORAGE_SENDS) * BOUND.attempt;
  // A b-tree grows by whole pages: that is a figure's resolution (a slot table and its 4 indexes: 5 b-trees).
  const verdict = (what: string, growth: number, rows: number, bound: number, btrees: number) => {
    if (rows <= 0) return `${what}: none added`;
    const diff = growth / rows / bound - 1;
    const resolution = (100 * btrees * s1.pageSize) / Math.max(1, growth);
    const agree =
      Math.abs(diff) <= AGREE_WITHIN
        ? "they agree"
        : diff < 0
          ? "the bound is higher (on the safe side)"
          : "they do NOT agree: the bound is LOWER than measured";
    return `${what} **${fig(growth / rows)} B** against ${bound} (${fig(100 * diff)}%; resolution ±${fig(resolution)}%): ${agree}`;
  };
  // `ok` takes only a 201 with its jobId: every other answer, and every failed request, is unexpected.
  const problems = [k, b, w]
    .filter((r) => r.unexpected > 0)
    .map((r) => `${r.label} had ${r.unexpected} unexpected answers: ${statuses(r).join(", ")}`);
  const header = ["case", "request", "req/s:", "p50 ms:", "p99 ms:", "statuses", "unexpected:"];
  run.writeResult("results.md", [
    "# Benchmark: local runtime (`npm run bench`)",
    "",
    "Generated by `bench/load/main.ts`; every figure below was measured in this run. What each case and figure means: bench/README.md.",
    "",
    `- ${run.machine()}`,
    "",
    "## The accept path, like with like",
    "",
    ...run.table(header, rows),
    "",
    `- (b) ÷ (k): req/s **${fig(bk.rps, 2)}×** (aim ≥ 0.5: ${bk.rps >= 0.5 ? "met" : "missed"}), p50 ${fig(b.p50 / k.p50, 2)}×, p99 **${fig(bk.p99, 2)}×** (aim ≤ 2: ${bk.p99 <= 2 ? "met" : "missed"}); each offered at most ${RATE_CAP}/s${b.rps >= 0.9 * RATE_CAP ? " (**(b) reached it: this measures the cap, not the server**)" : ""} over ${NUMBERS} numbers in ${WORKSPACES} workspaces for ${DURATION_S} s, on ${CONNECTIONS} connections.`,
    `- The delivery pipeline apart: (b)'s ${fig(sent.accepted.length)} sends, released at once, ${released(bSettle)}${bRate} (the numbers' pace allows ${fig(2 * NUMBERS)}/s); (w)'s sends ${released(warmSettle)}.`,
    "",
    "## Storage: bytes per message in the workspace object",
    "",
    `- ${fig(STORAGE_SENDS)} accepted sends (${BODY_CHARS}-character bodies, ${fig(storeRps)}/s over ${STORAGE_NUMBERS} numbers) after one per number; all settled ${fig(storeSettledMs / 1000, 1)} s after the last (every record final, its 3 events delivered, every delivery logged); the receiver took ${fig(receiver.deliveries.length)} deliveries of ${fig(events())} distinct events; ${s1.slotTables} slot table(s) at the end.`,
    `- The file grew **${fig(grew((s) => s.bytes) / STORAGE_SENDS)} B per message**, against ${fig(expected)} B from the engine's bounds (one record and ${fig(attempts / STORAGE_SENDS, 2)} logged attempts).`,
    `- ${verdict(
      "A record with its index entries (slot tables `m_<slot>`)",
      grew((s) => s.slots.bytes),
      grew((s) => s.slots.rows),
      BOUND.record,
      5,
    )}.`,
    `- ${verdict(
      "A logged attempt (delivery log `d_<day>`)",
      grew((s) => s.log.bytes),
      attempts,
      BOUND.attempt,
      1,
    )}; ${fig(attempts / grew((s) => s.log.rows), 1)} attempts a row.`,
    "",
    `Run time: ${fig((Date.now() - runStarted) / 1000)} s.`,
  ]);
  if (problems.length > 0) fail(`checks failed:\n  - ${problems.join("\n  - ")}`);
}

run.runMain("bench", main, cleanup, 900_000);
