// `npm run bench`: the tenants every case runs on, made through the admin API.
import { mapLimit } from "../../lib/map-limit.mjs";
import { NUMBERS, NUMBERS_PER_WORKSPACE, STORAGE_NUMBERS, WORKSPACES } from "../parameters.mjs";

/** @typedef {import("../context.mjs").BenchContext} BenchContext */
/** @typedef {import("../requests.mjs").Workspace} Workspace */
/** @typedef {import("../requests.mjs").Target} Target */

/**
 * WORKSPACES × NUMBERS_PER_WORKSPACE sandbox numbers with one API key per workspace, and the
 * storage and list workspace (STORAGE_NUMBERS numbers, measured after (a')).
 * @param {BenchContext} ctx @param {string} adminToken
 * @returns {Promise<{ workspaces: Workspace[], store: Workspace, targets: Target[] }>}
 */
export async function createTenants(ctx, adminToken) {
  /** @param {string} path @param {unknown} body */
  const admin = async (path, body) => {
    const res = await ctx.call("POST", `/admin/v1${path}`, adminToken, body);
    if (res.status !== 201) ctx.fail(`POST /admin/v1${path} answered ${res.status}: ${res.text.slice(0, 300)}`);
    return res.json;
  };
  const setupStarted = Date.now();
  const workspaces = await mapLimit(
    Array.from({ length: WORKSPACES }, (_, w) => w),
    4,
    async (w) => {
      const ws = await admin("/workspaces", { name: `Bench ${ctx.runId} #${w}`, plan: "scale" });
      const key = await admin(`/workspaces/${ws.id}/api-keys`, { name: "bench" });
      return { id: String(ws.id), apiKey: String(key.key), numbers: /** @type {string[]} */ ([]) };
    },
  );
  const numberJobs = workspaces.flatMap((ws, w) =>
    Array.from({ length: NUMBERS_PER_WORKSPACE }, (_, n) => ({ ws, w, n })),
  );
  await mapLimit(numberJobs, 8, async ({ ws, w, n }) => {
    const display = `1555${String(w).padStart(3, "0")}${String(n).padStart(4, "0")}`;
    const number = await admin(`/workspaces/${ws.id}/channel-numbers`, {
      displayPhoneNumber: display,
      upstream: { type: "sandbox" },
    });
    ws.numbers[n] = number.id;
  });
  const store = await (async () => {
    const ws = await admin("/workspaces", { name: `Bench ${ctx.runId} storage`, plan: "scale" });
    const key = await admin(`/workspaces/${ws.id}/api-keys`, { name: "bench" });
    const numbers = await mapLimit(
      Array.from({ length: STORAGE_NUMBERS }, (_, n) => n),
      8,
      async (n) => {
        const number = await admin(`/workspaces/${ws.id}/channel-numbers`, {
          displayPhoneNumber: `1556000${String(n).padStart(4, "0")}`,
          upstream: { type: "sandbox" },
        });
        return String(number.id);
      },
    );
    return { id: String(ws.id), apiKey: String(key.key), numbers };
  })();
  // Round-robin order: consecutive sends go to different workspaces and numbers.
  /** @type {Target[]} */
  const targets = [];
  for (let n = 0; n < NUMBERS_PER_WORKSPACE; n++)
    for (const ws of workspaces) targets.push({ ws, numberId: /** @type {string} */ (ws.numbers[n]) });
  const took = ((Date.now() - setupStarted) / 1000).toFixed(1);
  ctx.phases.push(`tenants ${took} s`);
  ctx.say(
    `created ${WORKSPACES + 1} workspaces (plan scale), ${WORKSPACES + 1} API keys, ${NUMBERS + STORAGE_NUMBERS} sandbox numbers in ${took} s`,
  );
  return { workspaces, store, targets };
}
