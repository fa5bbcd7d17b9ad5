// `npm run bench`, storage: the workspace object's SQLite file before and after STORAGE_SENDS
// accepted sends, on the storage workspace (its own, so that (b)–(d) stay what they were). Each of
// its numbers has a webhook to a receiver of the bench's own on loopback (it accepts every
// delivery), so that the delivery log is written as for a customer with a healthy endpoint.
import { mapLimit } from "../../lib/map-limit.mjs";
import { seededRandom } from "../../lib/soak-random.mjs";
import { startReceiver } from "../../lib/soak-receiver.mjs";
import { freePort } from "../../lib/local-worker.mjs";
import { sleep } from "../context.mjs";

/** Webhooks one API key may configure in a minute (src/domain/abuse-limits.ts, webhookConfigure: 60 per 60 s), with a margin. */
const WEBHOOKS_PER_KEY = 50;
/** How long nothing may change before the storage workspace counts as done (its last change is then the measure). */
const QUIET_MS = 3_000;
import { BODY_CHARS, SETTLE_LIMIT_MS, STORAGE_NUMBERS, STORAGE_RATE, STORAGE_SENDS } from "../parameters.mjs";
import { sendRequests } from "../requests.mjs";
import { newTally } from "../statistics.mjs";
import { findWorkspaceFile, pendingWork, storageOf } from "../workspace-file.mjs";

/** @typedef {import("../context.mjs").BenchContext} BenchContext */
/** @typedef {import("../requests.mjs").Accepted} Accepted */
/** @typedef {ReturnType<typeof storageOf>} Storage */
/** @typedef {{ before: Storage, after: Storage, sends: number, rps: number, deliveryMs: number, deliveries: number, eventIds: number }} StorageMeasure */

/**
 * @param {BenchContext} ctx
 * @param {{ store: import("../requests.mjs").Workspace, stateDir: string, adminToken: string }} o
 * @returns {Promise<{ storage: StorageMeasure, storeFile: string }>}
 */
export async function runStorageCase(ctx, { store, stateDir, adminToken }) {
  /** @type {Map<string, string>} */
  const secrets = new Map();
  // BENCH_PORT fixes the Worker's port, the inspector's (the next) and the receiver's (the one after).
  const receiverPort = process.env.BENCH_PORT ? Number(process.env.BENCH_PORT) + 2 : await freePort();
  const receiver = await startReceiver({ port: receiverPort, failShare: 0, random: seededRandom(1), secrets });
  try {
    return await measure(ctx, { store, stateDir, adminToken, receiver, receiverPort, secrets });
  } finally {
    await receiver.stop();
  }
}

/**
 * @param {BenchContext} ctx
 * @param {{ store: import("../requests.mjs").Workspace, stateDir: string, adminToken: string,
 *   receiver: Awaited<ReturnType<typeof startReceiver>>, receiverPort: number, secrets: Map<string, string> }} o
 * @returns {Promise<{ storage: StorageMeasure, storeFile: string }>}
 */
async function measure(ctx, { store, stateDir, adminToken, receiver, receiverPort, secrets }) {
  // Webhook configuration is limited per API key (WEBHOOKS_PER_KEY a minute): one key per so many numbers.
  /** @type {string[]} */
  const keys = [];
  for (let i = 0; i < Math.ceil(store.numbers.length / WEBHOOKS_PER_KEY); i++) {
    const res = await ctx.call("POST", `/admin/v1/workspaces/${store.id}/api-keys`, adminToken, {
      name: `webhooks ${i}`,
    });
    if (res.status !== 201)
      ctx.fail(`POST /admin/v1/workspaces/…/api-keys answered ${res.status}: ${res.text.slice(0, 300)}`);
    keys.push(String(res.json.key));
  }
  await mapLimit(store.numbers, 8, async (numberId, i) => {
    const key = /** @type {string} */ (keys[Math.floor(i / WEBHOOKS_PER_KEY)]);
    const hook = await ctx.call("POST", "/api/v1/webhooks", key, {
      channelNumberId: numberId,
      url: `http://127.0.0.1:${receiverPort}/hooks/${numberId}`,
    });
    if (hook.status !== 201) ctx.fail(`POST /webhooks answered ${hook.status}: ${hook.text.slice(0, 300)}`);
    secrets.set(numberId, String(hook.json.secret));
  });
  /** Event ids the receiver accepted (2xx, signature verified). */
  const delivered = () =>
    new Set(receiver.deliveries.filter((d) => d.verified && d.status < 300).map((d) => d.webhookId)).size;
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
  /**
   * Waits until the object has nothing left to write about its messages: every record settled
   * (none queued, processing or in a number's work list), at least the first two events of each
   * (`processing`, then `sent` or `failed`) delivered, every delivery reported into the log, and
   * nothing new for QUIET_MS (the sandbox reports its failures a second after the call).
   * @param {string} file @param {number} messages accepted so far
   */
  async function quiet(file, messages) {
    const started = Date.now();
    let last = "";
    let stableSince = Date.now();
    while (Date.now() - started < SETTLE_LIMIT_MS) {
      const left = pendingWork(file);
      const accepted = receiver.deliveries.filter((d) => d.verified && d.status < 300).length;
      const now = JSON.stringify([left, accepted]);
      if (now !== last) [last, stableSince] = [now, Date.now()];
      const done = left.active === 0 && delivered() >= 2 * messages && left.logged >= accepted;
      if (done && Date.now() - stableSince >= QUIET_MS) return stableSince - started;
      await sleep(250);
    }
    return ctx.fail(
      `the storage workspace still had work after ${SETTLE_LIMIT_MS / 1000} s: ${JSON.stringify({ ...pendingWork(file), deliveries: receiver.deliveries.length, events: delivered(), messages })}`,
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
  /** @type {Accepted[]} */
  const warmAccepted = [];
  await ctx.phase("storage warm-up sends", () => storeSend("store-warm", STORAGE_NUMBERS, warmAccepted));
  const storeFile =
    findWorkspaceFile(stateDir, /** @type {Accepted} */ (warmAccepted[0]).jobId) ??
    ctx.fail("the storage workspace's SQLite file was not found in the bench state");
  await ctx.phase("storage warm-up delivery", () => quiet(storeFile, STORAGE_NUMBERS));
  const before = storageOf(storeFile);
  ctx.say(`storage: ${STORAGE_SENDS} sends with ${BODY_CHARS}-character bodies at ${STORAGE_RATE}/s over its numbers`);
  /** @type {Accepted[]} */
  const storeAccepted = [];
  const storeRaw = await ctx.phase("storage sends", () => storeSend("store", STORAGE_SENDS, storeAccepted));
  const deliveryMs = await ctx.phase("storage delivery", () => quiet(storeFile, STORAGE_NUMBERS + STORAGE_SENDS));
  const after = storageOf(storeFile);
  return {
    storage: {
      before,
      after,
      sends: storeAccepted.length,
      rps: storeRaw.requests.total / storeRaw.duration,
      deliveryMs,
      deliveries: receiver.deliveries.length,
      eventIds: delivered(),
    },
    storeFile,
  };
}
