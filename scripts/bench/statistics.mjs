// `npm run bench`: what each case's responses add up to. Pure functions over autocannon's
// result and the Server-Timing headers the Worker adds when SERVER_TIMING=true.

/**
 * Per-case counters filled from every response (autocannon's onResponse).
 * @typedef {{ responses: number, d1: number, d1Histogram: Map<number, number>, serverMs: number, timed: number, bad: number }} Tally
 */

/**
 * The part of autocannon's result the bench reads, plus the CPU time measured around the run.
 * @typedef {object} LoadResult
 * @property {number} duration seconds
 * @property {{ total: number }} requests completed responses
 * @property {{ p50: number, p99: number }} latency ms
 * @property {number} non2xx
 * @property {number} errors
 * @property {number} timeouts
 * @property {Record<string, { count: number }>} [statusCodeStats]
 * @property {number | null} runtimeCpuMs CPU of wrangler dev's processes during the run (null: not measurable here)
 * @property {Record<string, number> | null} runtimeCpuParts the same by role (runtime, proxy, wrangler, other)
 * @property {number} clientCpuMs CPU of this process during the run
 */

/**
 * One row of the report.
 * @typedef {object} CaseRow
 * @property {string} label
 * @property {string} what
 * @property {number} duration
 * @property {number} completed
 * @property {number} rps
 * @property {number} p50
 * @property {number} p99
 * @property {number} non2xx
 * @property {number} errors
 * @property {number} timeouts
 * @property {Record<string, number>} statuses
 * @property {number} d1Total
 * @property {number | null} d1PerRequest
 * @property {Map<number, number>} d1Histogram
 * @property {number | null} serverMs
 * @property {number} bad
 * @property {number | null} cpuPerRequest
 * @property {number | null} runtimeCores
 * @property {number} clientCores
 * @property {Record<string, number> | null} coresByRole
 * @property {boolean} [capped]
 */

/**
 * `Server-Timing: d1;desc="D1 statements";dur=N, total;dur=M` → { d1: N, total: M }.
 * @param {Record<string, string | string[] | undefined>} headers
 * @returns {Record<string, number> | null}
 */
export function parseServerTiming(headers) {
  /** @type {string | undefined} */
  let value;
  for (const [name, v] of Object.entries(headers))
    if (name.toLowerCase() === "server-timing") value = Array.isArray(v) ? v.join(", ") : v;
  if (!value) return null;
  /** @type {Record<string, number>} */
  const out = {};
  for (const metric of String(value).split(",")) {
    const name = (metric.split(";")[0] ?? "").trim();
    const dur = /;\s*dur=([0-9.]+)/.exec(metric);
    if (dur) out[name] = Number(dur[1]);
  }
  return out;
}

/** @returns {Tally} */
export function newTally() {
  return { responses: 0, d1: 0, d1Histogram: new Map(), serverMs: 0, timed: 0, bad: 0 };
}

/** @param {Tally} tally @param {Record<string, string | string[] | undefined>} headers */
export function tallyResponse(tally, headers) {
  tally.responses++;
  const timing = parseServerTiming(headers);
  if (!timing) return;
  if (timing.d1 !== undefined) {
    tally.d1 += timing.d1;
    tally.d1Histogram.set(timing.d1, (tally.d1Histogram.get(timing.d1) ?? 0) + 1);
  }
  if (timing.total !== undefined) {
    tally.serverMs += timing.total;
    tally.timed++;
  }
}

/**
 * @param {string} label @param {string} what @param {LoadResult} result @param {Tally} tally
 * @param {{ capped?: boolean }} [extra]
 * @returns {CaseRow}
 */
export function summarize(label, what, result, tally, extra = {}) {
  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count]));
  // requests.total counts completed responses (latency.totalCount may hold corrected samples).
  const completed = result.requests.total;
  const runtimeCpuParts = result.runtimeCpuParts;
  return {
    label,
    what,
    duration: result.duration,
    completed,
    rps: completed / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statuses,
    d1Total: tally.d1,
    d1PerRequest: tally.responses > 0 ? tally.d1 / tally.responses : null,
    d1Histogram: tally.d1Histogram,
    serverMs: tally.timed > 0 ? tally.serverMs / tally.timed : null,
    bad: tally.bad,
    // Runtime CPU per request, and as a share of one core over the case.
    cpuPerRequest: result.runtimeCpuMs === null || completed === 0 ? null : result.runtimeCpuMs / completed,
    runtimeCores: result.runtimeCpuMs === null ? null : result.runtimeCpuMs / (result.duration * 1000),
    clientCores: result.clientCpuMs / (result.duration * 1000),
    coresByRole:
      runtimeCpuParts === null
        ? null
        : Object.fromEntries(Object.entries(runtimeCpuParts).map(([k, ms]) => [k, ms / (result.duration * 1000)])),
    ...extra,
  };
}
