// `npm run bench`, cases (a) to (a'): the GET /me baseline, the warm-up sends (w), accepted
// sends (b), their replays (c) and reads (d), and the baseline again (a').
import { mapLimit } from "../../lib/map-limit.mjs";
import { sleep } from "../context.mjs";
import {
  AFTER_WARMUP_MS,
  CONNECTIONS,
  DURATION_S,
  NUMBERS,
  SEND_RATE_CAP,
  SETTLE_LIMIT_MS,
  WARMUP_S,
  WORKSPACES,
} from "../parameters.mjs";
import { meRequests, readRequests, replayRequests, sendRequests } from "../requests.mjs";
import { newTally, summarize } from "../statistics.mjs";

/** @typedef {import("../context.mjs").BenchContext} BenchContext */
/** @typedef {import("../requests.mjs").Accepted} Accepted */
/** @typedef {import("../statistics.mjs").CaseRow} CaseRow */
/** @typedef {{ settled: boolean, ms: number }} Settle */

/**
 * Waits until a sample of `sends` has left the number outboxes (status sent or failed),
 * so that the next case does not share the runtime with their delivery. Bounded.
 * @param {BenchContext} ctx @param {Accepted[]} sends @returns {Promise<Settle>}
 */
async function settle(ctx, sends) {
  const started = Date.now();
  const step = Math.max(1, Math.floor(sends.length / 30));
  const probe = [...sends.filter((_, i) => i % step === 0), ...sends.slice(-10)];
  while (Date.now() - started < SETTLE_LIMIT_MS) {
    const states = await mapLimit(probe, 8, (s) =>
      ctx.call("GET", `/api/v1/messages/${s.jobId}`, s.apiKey).then((r) => r.json?.status),
    );
    if (states.every((st) => st === "sent" || st === "failed")) return { settled: true, ms: Date.now() - started };
    await sleep(500);
  }
  return { settled: false, ms: Date.now() - started };
}

/**
 * @param {BenchContext} ctx
 * @param {{ workspaces: import("../requests.mjs").Workspace[], targets: import("../requests.mjs").Target[], adminToken: string }} tenants
 */
export async function runRequestCases(ctx, { workspaces, targets, adminToken }) {
  const { runId } = ctx;
  /** @param {string} numberId @param {number} j */
  const sendBody = (numberId, j) =>
    JSON.stringify({
      channelNumberId: numberId,
      to: `5511${900000000 + (j % 99_999_999)}`,
      text: { body: `bench ${runId} message ${j}` },
    });
  const perWorkspaceAccepted = new Map(workspaces.map((ws) => [ws.id, 0]));
  /** @param {string} prefix @param {import("../statistics.mjs").Tally} tally @param {Accepted[]} accepted @param {string} [path] */
  const sends = (prefix, tally, accepted, path) =>
    sendRequests({
      runId,
      prefix,
      tally,
      accepted,
      over: targets,
      bodyOf: sendBody,
      perWorkspace: path ? undefined : perWorkspaceAccepted,
      path,
    });
  const numberIds = targets.map((t) => t.numberId);
  /** Holds or releases every number's delivery (bench/worker.ts). @param {boolean} held */
  const hold = async (held) => {
    const res = await ctx.call("POST", "/bench/hold", adminToken, { numberIds, held });
    if (res.status !== 204) ctx.fail(`POST /bench/hold answered ${res.status}: ${res.text.slice(0, 300)}`);
  };
  /** @type {CaseRow[]} */
  const results = [];

  // ---- warm-up of the isolate and the key cache, then (a) on a quiet runtime
  await ctx.load({ duration: WARMUP_S, requests: meRequests(workspaces, newTally()) });
  ctx.say(`(a) GET /api/v1/me, ${CONNECTIONS} connections, ${DURATION_S} s`);
  let tally = newTally();
  results.push(
    summarize(
      "(a)",
      "GET /api/v1/me (baseline)",
      await ctx.load({ duration: DURATION_S, requests: meRequests(workspaces, tally) }),
      tally,
    ),
  );

  // ---- warm-up sends: one per number, so that (b) measures live objects, not their creation
  ctx.say(`warm-up: one send to each of the ${NUMBERS} numbers (creates every workspace and number object)`);
  const warmTally = newTally();
  /** @type {Accepted[]} */
  const warmAccepted = [];
  const warm = await ctx.phase("warm-up sends", () =>
    ctx.load({ amount: NUMBERS, requests: sends("warm", warmTally, warmAccepted) }),
  );
  if (warm.non2xx > 0 || warmTally.bad > 0)
    ctx.fail(`warm-up sends were not all accepted: ${JSON.stringify(warm.statusCodeStats)}`);
  const warmRow = summarize("(w)", "POST /api/v1/messages, first send to each number (warm-up)", warm, warmTally);
  const warmSettle = await ctx.phase("warm-up delivery", () => settle(ctx, warmAccepted));
  await sleep(AFTER_WARMUP_MS);

  // ---- (k) the accept path's baseline: the same requests, paced alike, doing a send's work minus its rules
  ctx.say(
    `(k) POST /bench/accept-baseline, the same bodies over the same keys, at most ${SEND_RATE_CAP}/s, ${DURATION_S} s`,
  );
  tally = newTally();
  const acceptBaseline = summarize(
    "(k)",
    "POST /bench/accept-baseline (the accept path's baseline)",
    await ctx.load({
      duration: DURATION_S,
      overallRate: SEND_RATE_CAP,
      ignoreCoordinatedOmission: true,
      requests: sends("k", tally, [], "/bench/accept-baseline"),
    }),
    tally,
  );

  // ---- (b) accepted sends, their delivery held: the accept path alone
  ctx.say(
    `(b) POST /api/v1/messages, round-robin over ${NUMBERS} numbers in ${WORKSPACES} workspaces, at most ${SEND_RATE_CAP}/s, ${DURATION_S} s, delivery held`,
  );
  await hold(true);
  /** @type {Accepted[]} */
  const accepted = [];
  tally = newTally();
  // Coordinated-omission correction off: like the other cases, latency is that of each request made.
  const bRaw = await ctx.load({
    duration: DURATION_S,
    overallRate: SEND_RATE_CAP,
    ignoreCoordinatedOmission: true,
    requests: sends("b", tally, accepted),
  });
  results.push(summarize("(b)", "POST /api/v1/messages, accepted (201)", bRaw, tally, { capped: true }));
  if (accepted.length === 0) ctx.fail(`(b) accepted no send: ${JSON.stringify(bRaw.statusCodeStats)}`);

  // ---- the delivery pipeline apart: (b)'s backlog released at once, timed until delivered
  await hold(false);
  const { settled, ms: settleMs } = await ctx.phase("(b) delivery", () => settle(ctx, accepted));
  ctx.say(
    settled
      ? `(b)'s ${accepted.length} sends were delivered to the operator (sandbox) ${(settleMs / 1000).toFixed(1)} s after their release`
      : `(b)'s sends were not all delivered after ${SETTLE_LIMIT_MS / 1000} s; measuring anyway`,
  );

  // ---- (c) replays
  ctx.say(`(c) POST /api/v1/messages replaying (b)'s ${accepted.length} (key, body) pairs, ${DURATION_S} s`);
  tally = newTally();
  results.push(
    summarize(
      "(c)",
      "POST /api/v1/messages, replay (200 duplicado_identico)",
      await ctx.load({ duration: DURATION_S, requests: replayRequests(accepted, tally) }),
      tally,
    ),
  );

  // ---- (d) reads
  ctx.say(`(d) GET /api/v1/messages/{id} over (b)'s jobIds, ${DURATION_S} s`);
  tally = newTally();
  results.push(
    summarize(
      "(d)",
      "GET /api/v1/messages/{id}",
      await ctx.load({ duration: DURATION_S, requests: readRequests(accepted, tally) }),
      tally,
    ),
  );

  // ---- (a') the baseline again
  ctx.say(`(a') GET /api/v1/me again (drift check), ${DURATION_S} s`);
  tally = newTally();
  results.push(
    summarize(
      "(a')",
      "GET /api/v1/me again, at the end (drift check)",
      await ctx.load({ duration: DURATION_S, requests: meRequests(workspaces, tally) }),
      tally,
    ),
  );

  return { results, acceptBaseline, accepted, warmRow, warmSettle, settled, settleMs, perWorkspaceAccepted };
}
