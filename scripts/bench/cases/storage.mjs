// `npm run bench`, storage: the workspace object's SQLite file before and after STORAGE_SENDS
// accepted sends, on the storage workspace (its own, so that (b)–(d) stay what they were).
import { sleep } from "../context.mjs";
import { BODY_CHARS } from "../seed-messages.mjs";
import { SETTLE_LIMIT_MS, STORAGE_NUMBERS, STORAGE_RATE, STORAGE_SENDS } from "../parameters.mjs";
import { sendRequests } from "../requests.mjs";
import { newTally } from "../statistics.mjs";
import { findWorkspaceFile, pendingWork, storageOf } from "../workspace-file.mjs";

/** @typedef {import("../context.mjs").BenchContext} BenchContext */
/** @typedef {import("../requests.mjs").Accepted} Accepted */
/** @typedef {ReturnType<typeof storageOf>} Storage */
/** @typedef {{ before: Storage, after: Storage, sends: number, rps: number, deliveryMs: number }} StorageMeasure */

/**
 * @param {BenchContext} ctx
 * @param {{ store: import("../requests.mjs").Workspace, stateDir: string }} o
 * @returns {Promise<{ storage: StorageMeasure, storeFile: string }>}
 */
export async function runStorageCase(ctx, { store, stateDir }) {
  const storeTargets = store.numbers.map((numberId) => ({ ws: store, numberId }));
  // A body of BODY_CHARS characters, like the storage budget's average message.
  /** @param {string} numberId @param {number} j */
  const storeBody = (numberId, j) => {
    const text = `Bench ${ctx.runId} storage message ${j}: your order has shipped and should arrive within two business days. `;
    return JSON.stringify({
      channelNumberId: numberId,
      to: `5511${910000000 + j}`,
      text: { body: text.repeat(3).slice(0, BODY_CHARS) },
    });
  };
  /** Waits until the object has nothing left to write about its messages (all settled, every event reported). @param {string} file */
  async function quiet(file) {
    const started = Date.now();
    while (Date.now() - started < SETTLE_LIMIT_MS) {
      const left = pendingWork(file);
      if (left.active === 0 && left.events === 0) return Date.now() - started;
      await sleep(250);
    }
    return ctx.fail(
      `the storage workspace still had work after ${SETTLE_LIMIT_MS / 1000} s: ${JSON.stringify(pendingWork(file))}`,
    );
  }
  /** @param {string} prefix @param {number} amount @param {Accepted[]} into */
  const storeSend = async (prefix, amount, into) => {
    const t = newTally();
    const out = await ctx.load({
      amount,
      overallRate: STORAGE_RATE,
      ignoreCoordinatedOmission: true,
      requests: sendRequests({
        runId: ctx.runId,
        prefix,
        tally: t,
        accepted: into,
        over: storeTargets,
        bodyOf: storeBody,
      }),
    });
    if (into.length !== amount)
      ctx.fail(
        `storage sends (${prefix}): ${into.length} of ${amount} accepted: ${JSON.stringify(out.statusCodeStats)}`,
      );
    return out;
  };
  ctx.say(`storage: one send to each of the storage workspace's ${STORAGE_NUMBERS} numbers (creates its objects)`);
  await ctx.phase("storage warm-up sends", () => storeSend("store-warm", STORAGE_NUMBERS, []));
  const storeFile =
    findWorkspaceFile(stateDir, store.id) ??
    ctx.fail("the storage workspace's SQLite file was not found in the bench state");
  await ctx.phase("storage warm-up delivery", () => quiet(storeFile));
  const before = storageOf(storeFile);
  ctx.say(`storage: ${STORAGE_SENDS} sends with ${BODY_CHARS}-character bodies at ${STORAGE_RATE}/s over its numbers`);
  /** @type {Accepted[]} */
  const storeAccepted = [];
  const storeRaw = await ctx.phase("storage sends", () => storeSend("store", STORAGE_SENDS, storeAccepted));
  const deliveryMs = await ctx.phase("storage delivery", () => quiet(storeFile));
  const after = storageOf(storeFile);
  return {
    storage: {
      before,
      after,
      sends: storeAccepted.length,
      rps: storeRaw.requests.total / storeRaw.duration,
      deliveryMs,
    },
    storeFile,
  };
}
