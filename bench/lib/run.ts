// What every measurement run shares: options, the local API, the tenants it makes, statistics,
// the operator's signed webhook, and the one result file it writes.
import { createHmac, randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { callApi } from "../../scripts/lib/http-call.mjs";
import { LOCAL_SECRETS, ROOT } from "../../scripts/lib/local-worker.mjs";

export { callApi, ROOT };

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Thrown by `fail`: the run stops with its message, without a stack. */
class Fatal extends Error {}
export const fail = (msg: string): never => {
  throw new Fatal(msg);
};

/** A logger with the run's name in front. */
export const sayAs = (name: string) => (msg: string) => console.log(`[${name}] ${msg}`);

/** Whole-number options: `--name N` or the environment variable, else the default; anything else ends the run. */
export function options<K extends string>(spec: Record<K, { env?: string; fallback: number }>): Record<K, number> {
  const strings = Object.fromEntries(Object.keys(spec).map((k) => [k, { type: "string" as const }]));
  const args = parseArgs({ options: strings, allowPositionals: true, strict: false }).values;
  const entries = Object.entries<{ env?: string; fallback: number }>(spec).map(([k, { env, fallback }]) => {
    const raw = args[k] ?? (env ? process.env[env] : undefined);
    const n = raw === undefined || raw === "" || raw === true ? fallback : Number(raw);
    return [k, Number.isInteger(n) && n >= 0 ? n : fail(`--${k}: a whole number, got ${String(raw)}`)];
  });
  return Object.fromEntries(entries) as Record<K, number>;
}

/** Runs `main`, reports a Fatal without its stack, and stops `cleanup` whatever happened, within `limitMs`. */
export function runMain(
  name: string,
  main: () => Promise<boolean | void>,
  cleanup: () => Promise<unknown>,
  limitMs: number,
) {
  const watchdog = setTimeout(() => {
    console.error(`[${name}] the run took longer than ${limitMs / 1000} s; stopping`);
    void cleanup().then(() => process.exit(1));
  }, limitMs).unref();
  main()
    .then((passed) => void (passed === false && (process.exitCode = 1)))
    .catch((err: unknown) => {
      console.error(`[${name}] ${err instanceof Fatal ? err.message : err instanceof Error ? err.stack : String(err)}`);
      process.exitCode = 1;
    })
    .finally(async () => {
      await cleanup();
      clearTimeout(watchdog);
      // A forked operator or keep-alive sockets must not hold the process open.
      setTimeout(() => process.exit(process.exitCode ?? 0), 200).unref();
    });
}

/** Runs fn over items with at most `limit` at once; results in order. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>) {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i] as T, i);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** The nearest-rank percentile of `values` (not sorted in place); null when there are none. */
export function percentile(values: number[], p: number): number | null {
  const s = [...values].sort((a, b) => a - b);
  return s.length ? (s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? null) : null;
}

/** The most of `times` (ascending) inside any window shorter than `windowMs`. */
export function maxInWindow(times: number[], windowMs = 1_000) {
  let max = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while ((times[i] ?? 0) - (times[j] ?? 0) >= windowMs) j++;
    max = Math.max(max, i - j + 1);
  }
  return max;
}

/** mulberry32: a seeded source, so that a run's choices repeat with its seed (not for secrets). */
export function seededRandom(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    between: (min: number, max: number) => min + next() * (max - min),
    chance: (p: number) => next() < p,
    pick: <T>(items: T[]): T => items[Math.floor(next() * items.length)] as T,
    /** Exponential inter-arrival time (ms) for `perSecond` events per second. */
    interval: (perSecond: number) => (-Math.log(1 - next()) / perSecond) * 1000,
  };
}
export type Random = ReturnType<typeof seededRandom>;

/** POST /admin/v1… (or a customer route with its key), which must answer `expected`; its JSON. */
export async function created(
  baseUrl: string,
  path: string,
  body: unknown,
  token = LOCAL_SECRETS.ADMIN_TOKEN,
  expected = 201,
) {
  const res = await callApi(baseUrl, "POST", path, token, body);
  return res.status === expected ? res.json : fail(`POST ${path} answered ${res.status}: ${res.text.slice(0, 300)}`);
}

/** A new API key of `workspaceId`. */
export const apiKey = async (baseUrl: string, workspaceId: string, name = "bench") =>
  String((await created(baseUrl, `/admin/v1/workspaces/${workspaceId}/api-keys`, { name })).key);

/** A workspace on the scale plan with one API key. */
export async function workspace(baseUrl: string, name: string) {
  const id = String((await created(baseUrl, "/admin/v1/workspaces", { name, plan: "scale" })).id);
  return { id, apiKey: await apiKey(baseUrl, id) };
}

const SANDBOX = { type: "sandbox" };
/** A number of `workspaceId` (a sandbox number unless `upstream` says otherwise); its id. */
export async function number(baseUrl: string, workspaceId: string, display: string, upstream: object = SANDBOX) {
  const body = { displayPhoneNumber: display, upstream };
  return String((await created(baseUrl, `/admin/v1/workspaces/${workspaceId}/channel-numbers`, body)).id);
}

/** A live number of `workspaceId`, connected through the fake operator. */
export const liveNumber = (
  baseUrl: string,
  workspaceId: string,
  display: string,
  phoneNumberId: string,
  accessToken: string,
) => number(baseUrl, workspaceId, display, { type: "cloud", phoneNumberId, accessToken });

/** A webhook of `numberId` to `url`; its signing secret. */
export const webhook = async (baseUrl: string, apiKey: string, numberId: string, url: string) =>
  String((await created(baseUrl, "/api/v1/webhooks", { channelNumberId: numberId, url }, apiKey)).secret);

/** POST /api/v1/messages (or `path`) with its Idempotency-Key: the answer's status, JSON (null when not JSON) and text. */
export const postSend = (
  baseUrl: string,
  apiKey: string,
  body: unknown,
  key: string = randomUUID(),
  path = "/api/v1/messages",
) => callApi(baseUrl, "POST", path, apiKey, body, { "Idempotency-Key": key });

/** The operator's webhook body for one number's `messages` change. */
export const operatorEnvelope = (phoneNumberId: string, value: Record<string, unknown>) => {
  const metadata = { display_phone_number: "15550100000", phone_number_id: phoneNumberId };
  const change = { field: "messages", value: { messaging_product: "whatsapp", metadata, ...value } };
  return { object: "whatsapp_business_account", entry: [{ id: "WABA-BENCH", changes: [change] }] };
};

/** POSTs an operator webhook signed as the operator signs it (X-Hub-Signature-256); its status, null when unreachable. */
export async function postOperatorWebhook(baseUrl: string, raw: string): Promise<number | null> {
  const signature = `sha256=${createHmac("sha256", LOCAL_SECRETS.UPSTREAM_APP_SECRET).update(raw).digest("hex")}`;
  const headers = { "Content-Type": "application/json", "X-Hub-Signature-256": signature };
  const init = { method: "POST", headers, body: raw, signal: AbortSignal.timeout(10_000) };
  try {
    const res = await fetch(`${baseUrl}/upstream/cloud/webhook`, init);
    await res.arrayBuffer();
    return res.status;
  } catch {
    return null;
  }
}

/** The machine line every result file starts with. */
export function machine() {
  const cpus = os.cpus();
  const load = os.loadavg().map((l) => l.toFixed(2));
  return `${new Date().toISOString()}; ${cpus[0]?.model.trim() ?? "CPU"} × ${cpus.length} logical cores, load ${load.join(" / ")}; ${os.type()} ${os.release()}; Node ${process.version}`;
}

/** A figure for a result file: `digits` decimals, thousands separated; "n/a" when it was not measured. */
export const fig = (n: number | null | undefined, digits = 0) =>
  n === null || n === undefined || !Number.isFinite(n)
    ? "n/a"
    : n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** A Markdown table; a header cell ending in ":" is a right-aligned column (figures). */
export const table = (header: string[], rows: Array<Array<string | number>>) => [
  `| ${header.map((h) => h.replace(/:$/, "")).join(" | ")} |`,
  `| ${header.map((h) => (h.endsWith(":") ? "---:" : "---")).join(" | ")} |`,
  ...rows.map((r) => `| ${r.join(" | ")} |`),
];

/** Writes `bench/<name>` (the bench's one result file) and says so. */
export function writeResult(name: string, lines: string[]) {
  writeFileSync(join(ROOT, "bench", name), `${lines.join("\n")}\n`);
  console.log(`wrote bench/${name}`);
}
