// `npm run bench`: one autocannon run against the local Worker, with the CPU time the runtime
// and this client used during it.
import { createRequire } from "node:module";
import { CONNECTIONS } from "./parameters.mjs";
import { runtimeCpuMs } from "./runtime-cpu.mjs";

/** @typedef {import("./statistics.mjs").LoadResult} LoadResult */
/** @typedef {{ method: string, path?: string, headers?: Record<string, string>, body?: string }} RequestParams */
/** @typedef {Record<string, unknown> & { sent?: import("./requests.mjs").Sent }} RequestContext */
/**
 * One of autocannon's request descriptions: `setupRequest` shapes each request, `onResponse`
 * checks its answer.
 * @typedef {object} LoadRequest
 * @property {string} method
 * @property {string} [path]
 * @property {Record<string, string>} [headers]
 * @property {(req: RequestParams, context: RequestContext) => RequestParams} [setupRequest]
 * @property {(status: number, body: string, context: RequestContext, headers: Record<string, string>) => void} [onResponse]
 */
/**
 * @typedef {{ requests: LoadRequest[], duration?: number, amount?: number, overallRate?: number, ignoreCoordinatedOmission?: boolean }} LoadOptions
 */

const require = createRequire(import.meta.url);

/** Whether autocannon is installed (it is a devDependency). */
export function hasAutocannon() {
  try {
    require.resolve("autocannon");
    return true;
  } catch {
    return false;
  }
}

/**
 * @param {{ baseUrl: string, group: () => number | null }} target the Worker, and its process group's id now
 * @returns {(opts: LoadOptions) => Promise<LoadResult>}
 */
export function loadRunner({ baseUrl, group }) {
  /** @type {(opts: object, done: (err: Error | null, res: Omit<LoadResult, "runtimeCpuMs" | "runtimeCpuParts" | "clientCpuMs">) => void) => void} */
  const autocannon = require("autocannon");
  const proxyEntry = new URL(baseUrl).host;
  return async (opts) => {
    const runtimeBefore = runtimeCpuMs(group(), proxyEntry);
    const clientBefore = process.cpuUsage();
    const result = await new Promise(
      /** @param {(res: Omit<LoadResult, "runtimeCpuMs" | "runtimeCpuParts" | "clientCpuMs">) => void} resolve @param {(err: Error) => void} reject */
      (resolve, reject) => {
        autocannon({ url: baseUrl, connections: CONNECTIONS, pipelining: 1, timeout: 10, ...opts }, (err, res) =>
          err ? reject(err) : resolve(res),
        );
      },
    );
    const runtimeAfter = runtimeCpuMs(group(), proxyEntry);
    const client = process.cpuUsage(clientBefore);
    const known = runtimeBefore !== null && runtimeAfter !== null;
    return {
      ...result,
      runtimeCpuMs: known ? runtimeAfter.total - runtimeBefore.total : null,
      runtimeCpuParts: known
        ? Object.fromEntries(
            Object.entries(runtimeAfter.parts).map(([k, ms]) => [
              k,
              ms - runtimeBefore.parts[/** @type {keyof typeof runtimeBefore.parts} */ (k)],
            ]),
          )
        : null,
      clientCpuMs: (client.user + client.system) / 1000,
    };
  };
}
