// `npm run bench`, cases (a2) to (a2'): a million messages written into the storage workspace's
// file while the runtime is stopped, then GET /messages on it (first page, a filtered page, the
// second page), each as a ratio to a baseline measured on the restarted runtime.
import { DURATION_S, LIST_FILTER_STATUS, LIST_LIMIT, SEED_MESSAGES, SEED_NUMBERS, WARMUP_S } from "../parameters.mjs";
import { listRequests, meRequests, sameIds } from "../requests.mjs";
import { seedMessages } from "../seed-messages.mjs";
import { newTally, summarize } from "../statistics.mjs";
import { expectedPages, storageOf } from "../workspace-file.mjs";

/** @typedef {import("../context.mjs").BenchContext} BenchContext */
/** @typedef {import("../statistics.mjs").CaseRow} CaseRow */
/** @typedef {ReturnType<typeof seedMessages> & { storage: ReturnType<typeof storageOf>, filterScanned: number, firstListMs: number }} Seed */

/**
 * @param {BenchContext} ctx
 * @param {{ store: import("../requests.mjs").Workspace, workspaces: import("../requests.mjs").Workspace[], storeFile: string, root: string,
 *   stopWorker: () => Promise<void>, startWorker: () => Promise<void> }} o
 * @returns {Promise<{ seed: Seed, listResults: CaseRow[] }>}
 */
export async function runListCases(ctx, { store, workspaces, storeFile, root, stopWorker, startWorker }) {
  await stopWorker();
  ctx.say("stopped wrangler dev");
  ctx.say(`seeding ${SEED_MESSAGES.toLocaleString("en-US")} message records into ${storeFile.slice(root.length + 1)}`);
  const seeded = seedMessages({
    file: storeFile,
    count: SEED_MESSAGES,
    numberIds: store.numbers.slice(0, SEED_NUMBERS),
    now: Date.now(),
  });
  ctx.phases.push(`seeding ${(seeded.ms / 1000).toFixed(1)} s`);
  ctx.say(`seeded in ${(seeded.ms / 1000).toFixed(1)} s`);
  const readStarted = Date.now();
  const storageSeeded = storageOf(storeFile);
  const filterNumber = /** @type {string} */ (store.numbers[0]);
  const expected = expectedPages(storeFile, {
    status: LIST_FILTER_STATUS,
    channelNumberId: filterNumber,
    limit: LIST_LIMIT,
  });
  ctx.phases.push(`reading the seeded file ${((Date.now() - readStarted) / 1000).toFixed(1)} s`);
  if (expected.filtered.length !== LIST_LIMIT)
    ctx.fail(
      `the filtered page would hold ${expected.filtered.length} messages, not ${LIST_LIMIT}: the seed's mix is wrong`,
    );
  await startWorker();

  // The pages once each, checked against the file: the cases below then assert every answer.
  /** @param {string} query */
  const listPath = (query) => `/api/v1/messages${query ? `?${query}` : ""}`;
  const filterQuery = `status=${LIST_FILTER_STATUS}&channelNumberId=${filterNumber}`;
  const firstListStarted = Date.now();
  const first = await ctx.call("GET", listPath(""), store.apiKey);
  const firstListMs = Date.now() - firstListStarted;
  if (first.status !== 200 || !sameIds(first.json?.data, expected.first) || !first.json?.nextCursor)
    ctx.fail(`GET /messages did not answer the expected first page: ${first.status} ${first.text.slice(0, 300)}`);
  const cursorQuery = `cursor=${encodeURIComponent(first.json.nextCursor)}`;
  for (const [query, ids] of /** @type {const} */ ([
    [filterQuery, expected.filtered],
    [cursorQuery, expected.second],
  ])) {
    const res = await ctx.call("GET", listPath(query), store.apiKey);
    if (res.status !== 200 || !sameIds(res.json?.data, ids))
      ctx.fail(`GET ${listPath(query)} did not answer the expected page: ${res.status} ${res.text.slice(0, 300)}`);
  }

  /** @type {CaseRow[]} */
  const listResults = [];
  await ctx.load({ duration: WARMUP_S, requests: meRequests(workspaces, newTally()) });
  ctx.say(`(a2) GET /api/v1/me on the restarted runtime, ${DURATION_S} s`);
  let tally = newTally();
  listResults.push(
    summarize(
      "(a2)",
      "GET /api/v1/me (baseline after the restart)",
      await ctx.load({ duration: DURATION_S, requests: meRequests(workspaces, tally) }),
      tally,
    ),
  );
  /** @type {Array<[string, string, string, string[]]>} */
  const listCases = [
    ["(e)", `GET ${listPath("")} (first page)`, listPath(""), expected.first],
    [
      "(f)",
      `GET /api/v1/messages?status=${LIST_FILTER_STATUS}&channelNumberId=… (filtered page)`,
      listPath(filterQuery),
      expected.filtered,
    ],
    ["(g)", "GET /api/v1/messages?cursor=… (second page)", listPath(cursorQuery), expected.second],
  ];
  for (const [label, what, path, ids] of listCases) {
    ctx.say(`${label} ${what}, ${DURATION_S} s`);
    tally = newTally();
    listResults.push(
      summarize(
        label,
        what,
        await ctx.load({ duration: DURATION_S, requests: listRequests(store.apiKey, path, ids, tally) }),
        tally,
      ),
    );
  }
  ctx.say(`(a2') GET /api/v1/me again (drift check), ${DURATION_S} s`);
  tally = newTally();
  listResults.push(
    summarize(
      "(a2')",
      "GET /api/v1/me again (drift check after the list cases)",
      await ctx.load({ duration: DURATION_S, requests: meRequests(workspaces, tally) }),
      tally,
    ),
  );

  return {
    seed: { ...seeded, storage: storageSeeded, filterScanned: expected.filterScanned, firstListMs },
    listResults,
  };
}
