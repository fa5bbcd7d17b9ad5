// `npm run bench`: load-tests the local runtime (`wrangler dev bench/worker.ts`: production's Worker with
// routes under /bench/) with one client (autocannon), and reports every case as a ratio to a baseline
// measured in the same run (the cases and how to read them: bench/README.md):
//   (a) GET /api/v1/me, the baseline; (w) the warm-up sends, one per number; (k) the accept path's own
//   baseline; (b) accepted sends with the numbers' delivery held, then that delivery apart; (c) their
//   replays; (d) their reads; (a') the baseline again; bytes per message in a workspace object's
//   SQLite file; (a2) (e) (f) (g) (a2') GET /messages on a workspace object seeded with a million records.
// Writes bench/results.md; exits 1 when a case got answers it should not have. Options: --port P
// (BENCH_PORT; free ports otherwise: the Worker on P, its inspector P+1, the storage case's receiver
// P+2). Its own state in .wrangler/bench-state (deleted at start), wrangler's output in
// .wrangler/bench-wrangler.log; bounded by RUN_LIMIT_MS.
import { randomBytes } from "node:crypto";
import os from "node:os";
import { join } from "node:path";
import { freePort, onStop } from "../../scripts/lib/local-worker.mjs";
import { startReceiver } from "../lib/receiver.ts";
import {
  apiKey,
  callApi,
  created,
  fail,
  LOCAL_SECRETS,
  mapLimit,
  options,
  ROOT,
  runMain,
  sayAs,
  sleep,
  workspace,
  writeResult,
} from "../lib/run.ts";
import { startRuntime, type Runtime } from "../lib/runtime.ts";
import {
  AFTER_WARMUP_MS,
  BODY_CHARS,
  DURATION_S,
  QUIET_MS,
  RUN_LIMIT_MS,
  SEED_CHUNK,
  SEED_MARGIN_MS,
  SEED_SPAN_MS,
  WARMUP_S,
  WEBHOOKS_PER_KEY,
  LIST_FILTER_STATUS,
  LIST_LIMIT,
  NUMBERS,
  NUMBERS_PER_WORKSPACE,
  SEED_MESSAGES,
  SEED_NUMBERS,
  SEND_RATE_CAP,
  SETTLE_LIMIT_MS,
  STORAGE_NUMBERS,
  STORAGE_SENDS,
  WORKSPACES,
} from "./parameters.ts";
import { buildReport, type BenchRun } from "./report.ts";
import {
  againRequests,
  listRequests,
  loadRunner,
  meRequests,
  newTally,
  sameIds,
  sendRequests,
  summarize,
  type Accepted,
  type LoadOptions,
  type Tally,
  type Target,
  type Workspace,
} from "./requests.ts";
import { findWorkspaceFile, pendingWork, retentionState, storageOf } from "./sqlite.ts";

const opts = options({ port: { env: "BENCH_PORT", fallback: 0 } });
const STATE = join(ROOT, ".wrangler", "bench-state");
const say = sayAs("bench");
let runtime: Runtime | undefined;
const cleanup = async () => runtime?.stop();
onStop(cleanup);

async function main() {
  const runStarted = Date.now();
  const loadBefore = os.loadavg();
  const runId = randomBytes(4).toString("hex");
  const phases: string[] = [];
  const phase = async <T>(name: string, fn: () => Promise<T>) => {
    const t0 = Date.now();
    const out = await fn();
    phases.push(`${name} ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return out;
  };
  const port = opts.port || (await freePort());
  say(
    `starting wrangler dev bench/worker.ts on 127.0.0.1:${port} (SERVER_TIMING=true; log .wrangler/bench-wrangler.log)`,
  );
  runtime = await phase("migrations and wrangler dev ready", () =>
    startRuntime({
      port,
      state: STATE,
      logFile: join(ROOT, ".wrangler", "bench-wrangler.log"),
      vars: { SERVER_TIMING: "true" },
      script: "bench/worker.ts",
      logLevel: "log",
      readyLimitMs: 90_000,
    }),
  );
  const base = runtime.baseUrl;
  const rt = runtime;
  const alive = () => rt.alive() || fail("wrangler dev exited during the run (.wrangler/bench-wrangler.log)");
  const load = loadRunner(base, () => rt.pid());
  const measure = async (
    label: string,
    what: string,
    requests: (t: Tally) => LoadOptions["requests"],
    more: Omit<LoadOptions, "requests"> = {},
  ) => {
    say(`${label} ${what}`);
    const tally = newTally();
    return summarize(
      label,
      what,
      await load({ duration: DURATION_S, ...more, requests: requests(tally) }),
      tally,
      label === "(b)",
    );
  };

  // ---- tenants: WORKSPACES × NUMBERS_PER_WORKSPACE sandbox numbers, the storage workspace, the list workspace
  const sandboxNumbers = (wsId: string, count: number, prefix: string) =>
    mapLimit(
      Array.from({ length: count }, (_, n) => n),
      8,
      async (n) =>
        String(
          (
            await created(base, `/admin/v1/workspaces/${wsId}/channel-numbers`, {
              displayPhoneNumber: `${prefix}${String(n).padStart(4, "0")}`,
              upstream: { type: "sandbox" },
            })
          ).id,
        ),
    );
  const withNumbers = async (name: string, count: number, prefix: string): Promise<Workspace> => {
    const ws = await workspace(base, `Bench ${runId} ${name}`);
    return { ...ws, numbers: await sandboxNumbers(ws.id, count, prefix) };
  };
  const [workspaces, store, list] = await phase(
    "tenants",
    async () =>
      [
        await mapLimit(
          Array.from({ length: WORKSPACES }, (_, w) => w),
          4,
          (w) => withNumbers(`#${w}`, NUMBERS_PER_WORKSPACE, `1555${String(w).padStart(3, "0")}`),
        ),
        await withNumbers("storage", STORAGE_NUMBERS, "1556000"),
        await withNumbers("list", SEED_NUMBERS, "1557000"),
      ] as const,
  );
  // Round-robin order: consecutive sends go to different workspaces and numbers.
  const targets: Target[] = [];
  for (let n = 0; n < NUMBERS_PER_WORKSPACE; n++)
    for (const ws of workspaces) targets.push({ ws, numberId: ws.numbers[n] as string });
  const sendBody = (numberId: string, j: number) =>
    JSON.stringify({
      channelNumberId: numberId,
      to: `5511${900000000 + (j % 99_999_999)}`,
      text: { body: `bench ${runId} message ${j}` },
    });
  const sends = (prefix: string, accepted: Accepted[], path?: string) => (tally: Tally) =>
    sendRequests({ key: `bench-${runId}-${prefix}`, tally, accepted, over: targets, bodyOf: sendBody, path });
  /** Waits (bounded) until a sample of `sent` has left the number outboxes (sent or failed), so that the next case does not share the runtime with their delivery. */
  const settle = async (sent: Accepted[]) => {
    const started = Date.now();
    const step = Math.max(1, Math.floor(sent.length / 30));
    const probe = [...sent.filter((_, i) => i % step === 0), ...sent.slice(-10)];
    for (; Date.now() - started < SETTLE_LIMIT_MS; await sleep(500)) {
      const states = await mapLimit(
        probe,
        8,
        async (s) => (await callApi(base, "GET", `/api/v1/messages/${s.jobId}`, s.apiKey)).json?.status,
      );
      if (states.every((st) => st === "sent" || st === "failed")) return { settled: true, ms: Date.now() - started };
    }
    return { settled: false, ms: Date.now() - started };
  };
  const hold = async (held: boolean) => {
    const res = await callApi(base, "POST", "/bench/hold", LOCAL_SECRETS.ADMIN_TOKEN, {
      numberIds: targets.map((t) => t.numberId),
      held,
    });
    if (res.status !== 204) fail(`POST /bench/hold answered ${res.status}: ${res.text.slice(0, 300)}`);
  };

  // ---- (a) on a quiet runtime, after a warm-up of the isolate and the key cache
  await load({ duration: WARMUP_S, requests: meRequests(workspaces, newTally()) });
  const a = await measure("(a)", "GET /api/v1/me (baseline)", (t) => meRequests(workspaces, t));
  // ---- (w) one send per number, so that (b) measures live objects, not their creation
  const warmAccepted: Accepted[] = [];
  const warmTally = newTally();
  const warm = await phase("warm-up sends", () =>
    load({ amount: NUMBERS, requests: sends("warm", warmAccepted)(warmTally) }),
  );
  if (warm.non2xx > 0 || warmTally.bad > 0)
    fail(`warm-up sends were not all accepted: ${JSON.stringify(warm.statusCodeStats)}`);
  const warmRow = summarize("(w)", "POST /api/v1/messages, first send to each number (warm-up)", warm, warmTally);
  const warmSettle = await phase("warm-up delivery", () => settle(warmAccepted));
  await sleep(AFTER_WARMUP_MS);
  // ---- (k) the same requests, paced alike, doing a send's work minus its rules; (b) with delivery held
  // Coordinated-omission correction off: like the other cases, latency is that of each request made.
  const paced = { overallRate: SEND_RATE_CAP, ignoreCoordinatedOmission: true };
  const k = await measure(
    "(k)",
    "POST /bench/accept-baseline (the accept path's baseline)",
    sends("k", [], "/bench/accept-baseline"),
    paced,
  );
  await hold(true);
  const accepted: Accepted[] = [];
  const b = await measure("(b)", "POST /api/v1/messages, accepted (201)", sends("b", accepted), paced);
  if (accepted.length === 0) fail(`(b) accepted no send: ${JSON.stringify(b.statuses)}`);
  // ---- the delivery pipeline apart: (b)'s backlog released at once, timed until delivered
  await hold(false);
  const bSettle = await phase("(b) delivery", () => settle(accepted));
  const c = await measure("(c)", "POST /api/v1/messages, replay (200 duplicado_identico)", (t) =>
    againRequests(accepted, t, true),
  );
  const d = await measure("(d)", "GET /api/v1/messages/{id}", (t) => againRequests(accepted, t, false));
  const a1 = await measure("(a')", "GET /api/v1/me again, at the end (drift check)", (t) => meRequests(workspaces, t));
  alive();

  // ---- storage: the workspace object's file before and after STORAGE_SENDS accepted sends on the storage
  // workspace, each of its numbers with a webhook to a receiver that accepts every delivery.
  const secrets = new Map<string, string>();
  const receiver = await startReceiver({ port: opts.port ? opts.port + 2 : await freePort(), secrets });
  const storage = await (async () => {
    const keys = await Promise.all(
      Array.from({ length: Math.ceil(STORAGE_NUMBERS / WEBHOOKS_PER_KEY) }, (_, i) =>
        apiKey(base, store.id, `webhooks ${i}`),
      ),
    );
    await mapLimit(store.numbers, 8, async (numberId, i) => {
      const hook = await created(
        base,
        "/api/v1/webhooks",
        { channelNumberId: numberId, url: receiver.url(numberId) },
        keys[Math.floor(i / WEBHOOKS_PER_KEY)],
      );
      secrets.set(numberId, String(hook.secret));
    });
    const ok = () => receiver.deliveries.filter((x) => x.verified && x.status < 300);
    const eventIds = () => new Set(ok().map((x) => x.webhookId)).size;
    const storeTargets = store.numbers.map((numberId) => ({ ws: store, numberId }));
    const text = `Bench ${runId} storage message: your order has shipped and should arrive within two business days. `
      .repeat(3)
      .slice(0, BODY_CHARS);
    const storeBody = (numberId: string, j: number) =>
      JSON.stringify({ channelNumberId: numberId, to: `5511${910000000 + j}`, text: { body: text } });
    const storeSend = async (prefix: string, amount: number) => {
      const into: Accepted[] = [];
      const out = await load({
        amount,
        overallRate: STORAGE_NUMBERS,
        ignoreCoordinatedOmission: true,
        requests: sendRequests({
          key: `bench-${runId}-${prefix}`,
          tally: newTally(),
          accepted: into,
          over: storeTargets,
          bodyOf: storeBody,
        }),
      });
      if (into.length !== amount)
        fail(`storage sends (${prefix}): ${into.length} of ${amount} accepted: ${JSON.stringify(out.statusCodeStats)}`);
      return { into, rps: out.requests.total / out.duration };
    };
    // Nothing left to write: every record settled, the first two events of each delivered, every delivery logged, and nothing new for QUIET_MS.
    const quiet = async (file: string, messages: number) => {
      const started = Date.now();
      let [last, stableSince] = ["", Date.now()];
      for (; Date.now() - started < SETTLE_LIMIT_MS; await sleep(250)) {
        const left = pendingWork(file);
        const now = JSON.stringify([left, ok().length]);
        if (now !== last) [last, stableSince] = [now, Date.now()];
        const done = left.active === 0 && eventIds() >= 2 * messages && left.logged >= ok().length;
        if (done && Date.now() - stableSince >= QUIET_MS) return stableSince - started;
      }
      return fail(
        `the storage workspace still had work after ${SETTLE_LIMIT_MS / 1000} s: ${JSON.stringify({ ...pendingWork(file), eventIds: eventIds(), messages })}`,
      );
    };
    say(`storage: one send to each of the storage workspace's ${STORAGE_NUMBERS} numbers, then ${STORAGE_SENDS}`);
    const warmed = await phase("storage warm-up sends", () => storeSend("store-warm", STORAGE_NUMBERS));
    const file =
      findWorkspaceFile(STATE, (warmed.into[0] as Accepted).jobId) ??
      fail("the storage workspace's SQLite file was not found");
    await phase("storage warm-up delivery", () => quiet(file, STORAGE_NUMBERS));
    const before = storageOf(file);
    const sent = await phase("storage sends", () => storeSend("store", STORAGE_SENDS));
    const deliveryMs = await phase("storage delivery", () => quiet(file, STORAGE_NUMBERS + STORAGE_SENDS));
    return {
      before,
      after: storageOf(file),
      sends: sent.into.length,
      rps: sent.rps,
      deliveryMs,
      deliveries: receiver.deliveries.length,
      eventIds: eventIds(),
    };
  })().finally(() => receiver.stop());

  // ---- a million records seeded by production's own code (bench/seed.ts), then GET /messages on them
  say(`seeding ${SEED_MESSAGES.toLocaleString("en-US")} message records into the list workspace (POST /bench/seed)`);
  const now = Date.now();
  const shapes: Record<string, number> = {};
  let tail: Array<{ id: string; status: string; channelNumberId: string }> = [];
  const seedMs = await phase("seeding", async () => {
    const t0 = Date.now();
    for (let from = 0; from < SEED_MESSAGES; from += SEED_CHUNK) {
      const chunk = {
        workspaceId: list.id,
        numberIds: list.numbers,
        count: SEED_MESSAGES,
        from,
        to: Math.min(SEED_MESSAGES, from + SEED_CHUNK),
        now,
      };
      const res = await callApi(base, "POST", "/bench/seed", LOCAL_SECRETS.ADMIN_TOKEN, chunk);
      if (res.status !== 200) fail(`POST /bench/seed answered ${res.status}: ${res.text.slice(0, 300)}`);
      for (const [shape, n] of Object.entries(res.json.shapes as Record<string, number>))
        shapes[shape] = (shapes[shape] ?? 0) + n;
      tail = res.json.tail;
    }
    return Date.now() - t0;
  });
  // The pages the API must answer, from the seed's own account of its newest records.
  const newest = [...tail].sort((x, y) => (x.id < y.id ? 1 : -1));
  const filterNumber = list.numbers[0] as string;
  const expected = {
    first: newest.slice(0, LIST_LIMIT).map((m) => m.id),
    second: newest.slice(LIST_LIMIT, 2 * LIST_LIMIT).map((m) => m.id),
    filtered: newest
      .filter((m) => m.status === LIST_FILTER_STATUS && m.channelNumberId === filterNumber)
      .slice(0, LIST_LIMIT)
      .map((m) => m.id),
  };
  if (expected.filtered.length !== LIST_LIMIT)
    fail(`the seed's newest records hold ${expected.filtered.length} for the filtered page, not ${LIST_LIMIT}`);
  const listFile =
    findWorkspaceFile(STATE, expected.first[0] as string) ?? fail("the list workspace's SQLite file was not found");
  const filterQuery = `?status=${LIST_FILTER_STATUS}&channelNumberId=${filterNumber}`;
  const listStarted = Date.now();
  const first = await callApi(base, "GET", "/api/v1/messages", list.apiKey);
  const firstListMs = Date.now() - listStarted;
  if (first.status !== 200 || !sameIds(first.json?.data, expected.first) || !first.json?.nextCursor)
    fail(`GET /messages did not answer the expected first page: ${first.status} ${first.text.slice(0, 300)}`);
  const cursorQuery = `?cursor=${encodeURIComponent(first.json.nextCursor)}`;
  for (const [query, ids] of [
    [filterQuery, expected.filtered],
    [cursorQuery, expected.second],
  ] as const) {
    const res = await callApi(base, "GET", `/api/v1/messages${query}`, list.apiKey);
    if (res.status !== 200 || !sameIds(res.json?.data, ids))
      fail(`GET /api/v1/messages${query} did not answer the expected page: ${res.status} ${res.text.slice(0, 300)}`);
  }
  await load({ duration: WARMUP_S, requests: meRequests(workspaces, newTally()) });
  const pages = (path: string, ids: string[]) => (t: Tally) =>
    listRequests(list.apiKey, `/api/v1/messages${path}`, ids, t);
  const listResults = [
    await measure("(a2)", "GET /api/v1/me (baseline before the list cases)", (t) => meRequests(workspaces, t)),
    await measure("(e)", "GET /api/v1/messages (first page)", pages("", expected.first)),
    await measure(
      "(f)",
      `GET /api/v1/messages?status=${LIST_FILTER_STATUS}&channelNumberId=… (filtered page)`,
      pages(filterQuery, expected.filtered),
    ),
    await measure("(g)", "GET /api/v1/messages?cursor=… (second page)", pages(cursorQuery, expected.second)),
    await measure("(a2')", "GET /api/v1/me again (drift check after the list cases)", (t) => meRequests(workspaces, t)),
  ];
  alive();
  await runtime.stop();
  const run: BenchRun = {
    results: [a, b, c, d, a1],
    acceptBaseline: k,
    accepted,
    warmAccepted,
    warmRow,
    warmSettle,
    bSettle,
    loadBefore,
    loadAfter: os.loadavg(),
    phases,
    storage,
    // The retention alarm must have left the seeded rows where they were for the whole measurement.
    seed: {
      count: SEED_MESSAGES,
      ms: seedMs,
      oldest: now - SEED_SPAN_MS,
      newest: now - SEED_MARGIN_MS,
      shapes,
      storage: storageOf(listFile),
      firstListMs,
      retained: retentionState(listFile),
    },
    listResults,
    runMs: Date.now() - runStarted,
  };
  const { lines, problems } = buildReport(run);
  writeResult("results.md", lines);
  if (problems.length > 0) fail(`checks failed:\n  - ${problems.join("\n  - ")}`);
}

runMain("bench", main, cleanup, RUN_LIMIT_MS);
