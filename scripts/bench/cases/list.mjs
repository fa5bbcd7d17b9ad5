// `npm run bench`, cases (a2) to (a2'): a million messages seeded into the list workspace's object
// by the bench's Worker (bench/worker.ts: production's own code writes them, bench/seed.ts), then
// GET /messages on it (first page, a filtered page, the second page), each as a ratio to a
// baseline measured right before them.
import { DURATION_S, LIST_FILTER_STATUS, LIST_LIMIT, SEED_MESSAGES, WARMUP_S } from "../parameters.mjs";
import { listRequests, meRequests, sameIds } from "../requests.mjs";
import { newTally, summarize } from "../statistics.mjs";
import { findWorkspaceFile, storageOf } from "../workspace-file.mjs";

/** @typedef {import("../context.mjs").BenchContext} BenchContext */
/** @typedef {import("../statistics.mjs").CaseRow} CaseRow */
/** @typedef {{ id: string, status: string, channelNumberId: string }} Seeded */
/** @typedef {{ count: number, ms: number, oldest: number, newest: number, shapes: Record<string, number>, storage: ReturnType<typeof storageOf>, firstListMs: number }} Seed */

/** Records per seed call: one transaction in the object, well inside a request's time. */
const SEED_CHUNK = 20_000;
/** The seed's span and margin (bench/seed.ts SEED_SPAN_MS, RATE_WINDOW_MARGIN_MS), for the report. */
const SPAN_MS = 40 * 60 * 60 * 1000;
const MARGIN_MS = 5 * 60 * 1000;

/**
 * @param {BenchContext} ctx
 * @param {{ list: import("../requests.mjs").Workspace, workspaces: import("../requests.mjs").Workspace[], stateDir: string, adminToken: string }} o
 * @returns {Promise<{ seed: Seed, listResults: CaseRow[], listFile: string }>}
 */
export async function runListCases(ctx, { list, workspaces, stateDir, adminToken }) {
  ctx.say(
    `seeding ${SEED_MESSAGES.toLocaleString("en-US")} message records into the list workspace (POST /bench/seed)`,
  );
  const now = Date.now();
  const started = Date.now();
  /** @type {Record<string, number>} */
  const shapes = {};
  /** @type {Seeded[]} */
  let tail = [];
  for (let from = 0; from < SEED_MESSAGES; from += SEED_CHUNK) {
    const chunk = {
      workspaceId: list.id,
      numberIds: list.numbers,
      count: SEED_MESSAGES,
      from,
      to: Math.min(SEED_MESSAGES, from + SEED_CHUNK),
      now,
    };
    const res = await ctx.call("POST", "/bench/seed", adminToken, chunk);
    if (res.status !== 200) ctx.fail(`POST /bench/seed answered ${res.status}: ${res.text.slice(0, 300)}`);
    for (const [shape, n] of Object.entries(/** @type {Record<string, number>} */ (res.json.shapes)))
      shapes[shape] = (shapes[shape] ?? 0) + n;
    tail = res.json.tail;
  }
  const ms = Date.now() - started;
  ctx.phases.push(`seeding ${(ms / 1000).toFixed(1)} s`);
  ctx.say(`seeded in ${(ms / 1000).toFixed(1)} s`);

  // The pages the API must answer, from the seed's own account of its newest records.
  const newestFirst = [...tail].sort((a, b) => (a.id < b.id ? 1 : -1));
  const filterNumber = /** @type {string} */ (list.numbers[0]);
  const expected = {
    first: newestFirst.slice(0, LIST_LIMIT).map((m) => m.id),
    second: newestFirst.slice(LIST_LIMIT, 2 * LIST_LIMIT).map((m) => m.id),
    filtered: newestFirst
      .filter((m) => m.status === LIST_FILTER_STATUS && m.channelNumberId === filterNumber)
      .slice(0, LIST_LIMIT)
      .map((m) => m.id),
  };
  if (expected.filtered.length !== LIST_LIMIT)
    ctx.fail(`the seed's newest records hold ${expected.filtered.length} for the filtered page, not ${LIST_LIMIT}`);
  const listFile =
    findWorkspaceFile(stateDir, /** @type {string} */ (expected.first[0])) ??
    ctx.fail("the list workspace's SQLite file was not found in the bench state");

  // The pages once each, checked: the cases below then assert every answer.
  /** @param {string} query */
  const listPath = (query) => `/api/v1/messages${query ? `?${query}` : ""}`;
  const filterQuery = `status=${LIST_FILTER_STATUS}&channelNumberId=${filterNumber}`;
  const firstListStarted = Date.now();
  const first = await ctx.call("GET", listPath(""), list.apiKey);
  const firstListMs = Date.now() - firstListStarted;
  if (first.status !== 200 || !sameIds(first.json?.data, expected.first) || !first.json?.nextCursor)
    ctx.fail(`GET /messages did not answer the expected first page: ${first.status} ${first.text.slice(0, 300)}`);
  const cursorQuery = `cursor=${encodeURIComponent(first.json.nextCursor)}`;
  for (const [query, ids] of /** @type {const} */ ([
    [filterQuery, expected.filtered],
    [cursorQuery, expected.second],
  ])) {
    const res = await ctx.call("GET", listPath(query), list.apiKey);
    if (res.status !== 200 || !sameIds(res.json?.data, ids))
      ctx.fail(`GET ${listPath(query)} did not answer the expected page: ${res.status} ${res.text.slice(0, 300)}`);
  }

  /** @type {CaseRow[]} */
  const listResults = [];
  /** @param {string} label @param {string} what @param {(t: import("../statistics.mjs").Tally) => import("../load.mjs").LoadRequest[]} requests */
  const measure = async (label, what, requests) => {
    ctx.say(`${label} ${what}, ${DURATION_S} s`);
    const tally = newTally();
    listResults.push(
      summarize(label, what, await ctx.load({ duration: DURATION_S, requests: requests(tally) }), tally),
    );
  };
  await ctx.load({ duration: WARMUP_S, requests: meRequests(workspaces, newTally()) });
  await measure("(a2)", "GET /api/v1/me (baseline before the list cases)", (t) => meRequests(workspaces, t));
  await measure("(e)", `GET ${listPath("")} (first page)`, (t) =>
    listRequests(list.apiKey, listPath(""), expected.first, t),
  );
  await measure("(f)", `GET /api/v1/messages?status=${LIST_FILTER_STATUS}&channelNumberId=… (filtered page)`, (t) =>
    listRequests(list.apiKey, listPath(filterQuery), expected.filtered, t),
  );
  await measure("(g)", "GET /api/v1/messages?cursor=… (second page)", (t) =>
    listRequests(list.apiKey, listPath(cursorQuery), expected.second, t),
  );
  await measure("(a2')", "GET /api/v1/me again (drift check after the list cases)", (t) => meRequests(workspaces, t));

  const newest = now - MARGIN_MS;
  return {
    seed: {
      count: SEED_MESSAGES,
      ms,
      oldest: now - SPAN_MS,
      newest,
      shapes,
      storage: storageOf(listFile),
      firstListMs,
    },
    listResults,
    listFile,
  };
}
