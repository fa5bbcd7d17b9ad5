// `npm run bench`: what every case is given by scripts/bench.mjs.

/** @typedef {import("../lib/http-call.mjs").ApiAnswer} ApiAnswer */

/**
 * @typedef {object} BenchContext
 * @property {string} runId tells this run's tenants and keys apart
 * @property {(opts: import("./load.mjs").LoadOptions) => Promise<import("./statistics.mjs").LoadResult>} load one autocannon run
 * @property {(method: string, path: string, token: string, body?: unknown) => Promise<ApiAnswer>} call one API call (setup and checks)
 * @property {(msg: string) => void} say
 * @property {(msg: string) => never} fail ends the run with `msg`
 * @property {<T>(name: string, fn: () => Promise<T>) => Promise<T>} phase runs `fn`, noting its wall time for the report
 * @property {string[]} phases where the run's wall time went
 */

/** Thrown by `fail`: the run stops with its message, without a stack. */
export class Fatal extends Error {}

/** @param {string} msg @returns {never} */
export const fail = (msg) => {
  throw new Fatal(msg);
};

export const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** @param {number} ms */
export const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
