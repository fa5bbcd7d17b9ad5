// `npm run bench`: one autocannon run against the local Worker with the CPU time the runtime and this
// client used during it; the requests of each case (each checks its answer and counts what it cannot
// accept as `bad`); and what a case's responses add up to, from the Server-Timing header the Worker
// adds when SERVER_TIMING=true.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";

export interface Workspace {
  id: string;
  apiKey: string;
  numbers: string[];
}
export interface Target {
  ws: Workspace;
  numberId: string;
}
/** A send as made (and its jobId once accepted). */
export interface Sent {
  apiKey: string;
  workspaceId: string;
  numberId: string;
  key: string;
  body: string;
  jobId?: string;
}
export type Accepted = Sent & { jobId: string };
type Params = { method: string; path?: string; headers?: Record<string, string>; body?: string };
type Context = { sent?: Sent };
/** One of autocannon's request descriptions: `setupRequest` shapes each request, `onResponse` checks its answer. */
interface LoadRequest extends Params {
  setupRequest?: (req: Params, context: Context) => Params;
  onResponse?: (status: number, body: string, context: Context, headers: Record<string, string>) => void;
}
export interface LoadOptions {
  requests: LoadRequest[];
  duration?: number;
  amount?: number;
  overallRate?: number;
  ignoreCoordinatedOmission?: boolean;
}
type CpuParts = Record<"runtime" | "proxy" | "wrangler" | "other", number>;
/** The part of autocannon's result the bench reads, plus the CPU time measured around the run. */
export interface LoadResult {
  duration: number;
  requests: { total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodeStats?: Record<string, { count: number }>;
  runtimeCpuMs: number | null;
  runtimeCpuParts: CpuParts | null;
  clientCpuMs: number;
}
/** Per-case counters filled from every response. */
export interface Tally {
  responses: number;
  d1: number;
  d1Histogram: Map<number, number>;
  serverMs: number;
  timed: number;
  bad: number;
}

const require = createRequire(import.meta.url);
export const CONNECTIONS = 10; // the same for every case

/** `Server-Timing: d1;desc="D1 statements";dur=N, total;dur=M` → { d1: N, total: M }. */
export function parseServerTiming(headers: Record<string, string | string[] | undefined>) {
  const entry = Object.entries(headers).findLast(([name]) => name.toLowerCase() === "server-timing")?.[1];
  if (!entry) return null;
  const out: Record<string, number> = {};
  for (const metric of (Array.isArray(entry) ? entry.join(", ") : entry).split(",")) {
    const dur = /;\s*dur=([0-9.]+)/.exec(metric);
    if (dur) out[(metric.split(";")[0] ?? "").trim()] = Number(dur[1]);
  }
  return out;
}

export const newTally = (): Tally => ({ responses: 0, d1: 0, d1Histogram: new Map(), serverMs: 0, timed: 0, bad: 0 });

export function tallyResponse(tally: Tally, headers: Record<string, string | string[] | undefined>) {
  tally.responses++;
  const timing = parseServerTiming(headers);
  if (timing?.d1 !== undefined) {
    tally.d1 += timing.d1;
    tally.d1Histogram.set(timing.d1, (tally.d1Histogram.get(timing.d1) ?? 0) + 1);
  }
  if (timing?.total !== undefined) {
    tally.serverMs += timing.total;
    tally.timed++;
  }
}

/** One row of the report. */
export function summarize(label: string, what: string, result: LoadResult, tally: Tally, capped = false) {
  // requests.total counts completed responses (latency.totalCount may hold corrected samples).
  const completed = result.requests.total;
  const ms = result.duration * 1000;
  const cpu = result.runtimeCpuMs;
  return {
    label,
    what,
    capped,
    duration: result.duration,
    completed,
    rps: completed / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statuses: Object.fromEntries(
      Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count]),
    ) as Record<string, number>,
    d1Total: tally.d1,
    d1PerRequest: tally.responses > 0 ? tally.d1 / tally.responses : null,
    d1Histogram: tally.d1Histogram,
    serverMs: tally.timed > 0 ? tally.serverMs / tally.timed : null,
    bad: tally.bad,
    // Runtime CPU per request, and as a share of one core over the case.
    cpuPerRequest: cpu === null || completed === 0 ? null : cpu / completed,
    runtimeCores: cpu === null ? null : cpu / ms,
    clientCores: result.clientCpuMs / ms,
    coresByRole:
      result.runtimeCpuParts &&
      (Object.fromEntries(Object.entries(result.runtimeCpuParts).map(([k, v]) => [k, v / ms])) as CpuParts),
  };
}
export type CaseRow = ReturnType<typeof summarize>;

let clockTicks = 0;
/**
 * CPU time (ms) used so far by the processes of the group `group` (Linux /proc; null elsewhere), by
 * role: the workerd that runs the Worker and its objects, the workerd of wrangler's proxy (it listens
 * on `proxyEntry`, our host:port), and wrangler's own Node process (which prints every request's log line).
 */
function runtimeCpuMs(group: number | null, proxyEntry: string): CpuParts | null {
  if (process.platform !== "linux" || group === null) return null;
  clockTicks ||= Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100;
  const parts: CpuParts = { runtime: 0, proxy: 0, wrangler: 0, other: 0 };
  for (const entry of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    let stat: string;
    let cmdline: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
    } catch {
      continue; // exited meanwhile
    }
    // pid (comm) state ppid pgrp … utime stime: fields after the command name.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) !== group) continue;
    const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const role =
      comm === "workerd"
        ? cmdline.includes(`entry=${proxyEntry} `)
          ? "proxy"
          : "runtime"
        : comm === "node" || comm.startsWith("MainThread")
          ? "wrangler"
          : "other";
    parts[role] += ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
  }
  return parts;
}

/** One autocannon run against `baseUrl`, with the CPU time of the runtime's process group (`group()`) and of this client. */
export function loadRunner(baseUrl: string, group: () => number | null) {
  const autocannon: (opts: object, done: (err: Error | null, res: LoadResult) => void) => void = require("autocannon");
  const proxyEntry = new URL(baseUrl).host;
  const total = (p: CpuParts) => p.runtime + p.proxy + p.wrangler + p.other;
  return async (opts: LoadOptions): Promise<LoadResult> => {
    const before = runtimeCpuMs(group(), proxyEntry);
    const clientBefore = process.cpuUsage();
    const result = await new Promise<LoadResult>((resolve, reject) =>
      autocannon({ url: baseUrl, connections: CONNECTIONS, pipelining: 1, timeout: 10, ...opts }, (err, res) =>
        err ? reject(err) : resolve(res),
      ),
    );
    const after = runtimeCpuMs(group(), proxyEntry);
    const client = process.cpuUsage(clientBefore);
    const parts =
      before && after
        ? (Object.fromEntries(
            Object.entries(after).map(([k, ms]) => [k, ms - before[k as keyof CpuParts]]),
          ) as CpuParts)
        : null;
    return {
      ...result,
      runtimeCpuMs: parts && total(parts),
      runtimeCpuParts: parts,
      clientCpuMs: (client.user + client.system) / 1000,
    };
  };
}
export type Load = ReturnType<typeof loadRunner>;

const json = (body: string): Record<string, unknown> | null => {
  try {
    const value = JSON.parse(body);
    return value && typeof value === "object" ? value : null;
  } catch {
    return null;
  }
};
const auth = (apiKey: string) => ({ authorization: `Bearer ${apiKey}` });
/** A request description whose answers are tallied and checked by `ok`. */
const checked = (
  tally: Tally,
  base: LoadRequest,
  ok: (status: number, body: Record<string, unknown> | null, context: Context) => boolean,
): LoadRequest[] => [
  {
    ...base,
    onResponse: (status, body, context, headers) => {
      tallyResponse(tally, headers);
      if (!ok(status, json(body), context)) tally.bad++;
    },
  },
];

/**
 * POST `path` (a send, or the accept baseline) round-robin over `over`, each with a fresh
 * Idempotency-Key; accepted sends are pushed to `accepted`.
 */
export function sendRequests(o: {
  key: string;
  tally: Tally;
  accepted: Accepted[];
  over: Target[];
  bodyOf: (numberId: string, j: number) => string;
  path?: string;
}) {
  let j = 0;
  return checked(
    o.tally,
    {
      method: "POST",
      path: o.path ?? "/api/v1/messages",
      setupRequest: (req, context) => {
        const i = j++;
        const { ws, numberId } = o.over[i % o.over.length] as Target;
        const sent = {
          apiKey: ws.apiKey,
          workspaceId: ws.id,
          numberId,
          key: `${o.key}-${i}`,
          body: o.bodyOf(numberId, i),
        };
        context.sent = sent;
        return {
          ...req,
          headers: {
            ...req.headers,
            ...auth(ws.apiKey),
            "content-type": "application/json",
            "idempotency-key": sent.key,
          },
          body: sent.body,
        };
      },
    },
    (status, body, context) => {
      const jobId = body?.jobId;
      if (status !== 201 || !context.sent || typeof jobId !== "string" || !jobId) return false;
      o.accepted.push({ ...context.sent, jobId });
      return true;
    },
  );
}

/** GET /me round-robin over the workspaces' keys. */
export function meRequests(workspaces: Workspace[], tally: Tally) {
  let j = 0;
  const path = "/api/v1/me";
  const setupRequest = (req: Params) => ({
    ...req,
    headers: { ...req.headers, ...auth((workspaces[j++ % workspaces.length] as Workspace).apiKey) },
  });
  return checked(tally, { method: "GET", path, setupRequest }, (status) => status === 200);
}

/** The accepted (key, body) pairs again (`replay`: each must answer 200 duplicado_identico with its jobId), or their reads. */
export function againRequests(accepted: Accepted[], tally: Tally, replay: boolean) {
  let j = 0;
  return checked(
    tally,
    {
      method: replay ? "POST" : "GET",
      setupRequest: (req, context) => {
        const s = accepted[j++ % accepted.length] as Accepted;
        context.sent = s;
        return replay
          ? {
              ...req,
              path: "/api/v1/messages",
              headers: {
                ...req.headers,
                ...auth(s.apiKey),
                "content-type": "application/json",
                "idempotency-key": s.key,
              },
              body: s.body,
            }
          : { ...req, path: `/api/v1/messages/${s.jobId}`, headers: { ...req.headers, ...auth(s.apiKey) } };
      },
    },
    (status, body, context) =>
      replay
        ? status === 200 && body?.status === "duplicado_identico" && body?.jobId === context.sent?.jobId
        : status === 200 && body?.id === context.sent?.jobId,
  );
}

/** Whether a page's `data` holds exactly `ids`, in order. */
export const sameIds = (data: unknown, ids: string[]) =>
  Array.isArray(data) && data.length === ids.length && data.every((m: { id?: unknown } | null, i) => m?.id === ids[i]);

/** One list page, whose every answer must hold exactly `ids`. */
export const listRequests = (apiKey: string, path: string, ids: string[], tally: Tally) =>
  checked(
    tally,
    { method: "GET", path, headers: auth(apiKey) },
    (status, body) => status === 200 && sameIds(body?.data, ids),
  );
