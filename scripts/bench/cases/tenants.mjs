// `npm run bench`: the tenants every case runs on, made through the admin API.
import { mapLimit } from "../../lib/map-limit.mjs";
import { NUMBERS, NUMBERS_PER_WORKSPACE, SEED_NUMBERS, STORAGE_NUMBERS, WORKSPACES } from "../parameters.mjs";

/** @typedef {import("../context.mjs").BenchContext} BenchContext */
/** @typedef {import("../requests.mjs").Workspace} Workspace */
/** @typedef {import("../requests.mjs").Target} Target */

/**
 * WORKSPACES × NUMBERS_PER_WORKSPACE sandbox numbers with one API key per workspace, the storage
 * workspace (STORAGE_NUMBERS numbers, measured after (a')) and the list workspace (SEED_NUMBERS
 * numbers, seeded: its pages are the seed's alone).
 * @param {BenchContext} ctx @param {string} adminToken
 * @returns {Promise<{ workspaces: Workspace[], store: Workspace, list: Workspace, targets: Target[] }>}
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
  /** A workspace of its own with `count` numbers and one API key. @param {string} label @param {number} count @param {string} prefix */
  const workspaceWith = async (label, count, prefix) => {
    const ws = await admin("/workspaces", { name: `Bench ${ctx.runId} ${label}`, plan: "scale" });
    const key = await admin(`/workspaces/${ws.id}/api-keys`, { name: "bench" });
    const numbers = await mapLimit(
      Array.from({ length: count }, (_, n) => n),
      8,
      async (n) => {
        const number = await admin(`/workspaces/${ws.id}/channel-numbers`, {
          displayPhoneNumber: `${prefix}${String(n).padStart(4, "0")}`,
          upstream: { type: "sandbox" },
        });
        return String(number.id);
      },
    );
    return { id: String(ws.id), apiKey: String(key.key), numbers };
  };
  const store = await workspaceWith("storage", STORAGE_NUMBERS, "1556000");
  const list = await workspaceWith("list", SEED_NUMBERS, "1557000");
  // Round-robin order: consecutive sends go to different workspaces and numbers.
  /** @type {Target[]} */
  const targets = [];
  for (let n = 0; n < NUMBERS_PER_WORKSPACE; n++)
    for (const ws of workspaces) targets.push({ ws, numberId: /** @type {string} */ (ws.numbers[n]) });
  const took = ((Date.now() - setupStarted) / 1000).toFixed(1);
  ctx.phases.push(`tenants ${took} s`);
  ctx.say(
    `created ${WORKSPACES + 2} workspaces (plan scale), ${WORKSPACES + 2} API keys, ${NUMBERS + STORAGE_NUMBERS + SEED_NUMBERS} sandbox numbers in ${took} s`,
  );
  return { workspaces, store, list, targets };
}
