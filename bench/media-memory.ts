// `npm run bench:media`: what a 16 MB video costs the local runtime's memory (its workerd processes' resident
// memory, from /proc every 25 ms: Linux only), and whether its upload to a fake operator reading 4 MB/s holds up
// the number's other recipients. Each figure is a ratio to a baseline of the same run. Writes bench/media-memory.md.
import { randomFillSync } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import os from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { text } from "node:stream/consumers";
import { MEDIA_SIZE_LIMITS } from "../src/domain/media-rules";
import * as run from "./lib/run.ts";
import { startRuntime, type Runtime } from "./lib/runtime.ts";

const say = run.sayAs("media");
const opts = run.options({ port: { env: "MEDIA_BENCH_PORT", fallback: 8846 } });
const MB = 1024 * 1024;
const BIG = MEDIA_SIZE_LIMITS.video;
/** The operator reads an upload at this rate, so that a 16 MB upload lasts ~4 s. */
const OPERATOR_BYTES_PER_S = 4 * MB;
const TEXTS = 6;
/** Runs of each memory row: a run's peak is noisy (the allocator's and the collector's timing). */
const REPEATS = 3;

/** The resident memory (KiB) of `pids`: the runtime's workerd processes, which live as long as it does. */
const rssKiB = (pids: string[]) =>
  pids.reduce((kib, pid) => kib + Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]), 0);

/** The highest resident memory while `work` runs, above the level just before it (MiB). */
async function peakGrowth<T>(pids: string[], work: () => Promise<T>): Promise<{ mib: number; value: T }> {
  const before = rssKiB(pids);
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, rssKiB(pids))), 25);
  const value = await work().finally(() => clearInterval(timer));
  return { mib: (Math.max(peak, rssKiB(pids)) - before) / 1024, value };
}

/** An MP4's first box (`ftyp`), then random bytes: what the store's first-bytes check reads as a video. */
function mp4(size: number) {
  const bytes = randomFillSync(new Uint8Array(size), 12);
  bytes.set([0, 0, 0, 0x18, ...Buffer.from("ftypmp42")]);
  return bytes;
}

/** The operator's API: the number check, uploads read at OPERATOR_BYTES_PER_S, sends (when each arrived, by jobId). */
function fakeOperator() {
  const calls = new Map<string, number>();
  let uploads = 0;
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://operator").pathname.split("/");
    const json = (body: unknown) => res.end(JSON.stringify(body));
    if (req.method === "GET") return json({ id: path[2], display_phone_number: "+1 555-010-0000" });
    if (path[3] === "media") {
      const wait = (chunk: Buffer) => (chunk.length / OPERATOR_BYTES_PER_S) * 1000;
      const slow = new Writable({ write: (chunk: Buffer, _, done) => setTimeout(done, wait(chunk)) });
      return req.pipe(slow).on("finish", () => json({ id: `${1_000_000_000 + ++uploads}` }));
    }
    void text(req).then((raw) => {
      const jobId = (JSON.parse(raw) as { biz_opaque_callback_data: string }).biz_opaque_callback_data;
      calls.set(jobId, Date.now());
      json({ messaging_product: "whatsapp", messages: [{ id: `wamid.${jobId}` }] });
    });
  });
  server.listen(opts.port + 2, "127.0.0.1");
  return { calls, uploads: () => uploads, stop: () => server.close() };
}

const operator = fakeOperator();
const state = mkdtempSync(join(os.tmpdir(), "bench-media-"));
let runtime: Runtime | undefined;

async function main() {
  const vars = { UPSTREAM_CLOUD_API_BASE_URL: `http://127.0.0.1:${opts.port + 2}` };
  runtime = await startRuntime({ port: opts.port, state, logFile: join(state, "wrangler.log"), vars });
  const base = runtime.baseUrl;
  const pgrep = execFileSync("pgrep", ["--pgroup", String(runtime.pid()), "workerd"], { encoding: "utf8" });
  const pids = pgrep.trim().split("\n");
  const ws = await run.workspace(base, "Media bench");
  const phoneNumberId = `${Date.now()}`;
  const numberId = await run.liveNumber(base, ws.id, "+15550100000", phoneNumberId, "bench-media-token");
  const post = async (path: string, contentType: string, body: BodyInit) => {
    const headers = { Authorization: `Bearer ${ws.apiKey}`, "Content-Type": contentType };
    const init = { method: "POST", headers: { ...headers, "Idempotency-Key": crypto.randomUUID() }, body };
    const res = await fetch(`${base}/api/v2${path}`, init);
    if (res.status !== 201) run.fail(`POST ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { id?: string; jobId?: string };
  };
  const upload = async (size: number) => String((await post("/media", "video/mp4", mp4(size))).id);
  // `at` is when the request left: the number may call the operator before the 201 is back.
  const send = async (to: string, message: object) => {
    const at = Date.now();
    const body = JSON.stringify({ channelNumberId: numberId, to, ...message });
    return { id: String((await post("/messages", "application/json", body)).jobId), at };
  };
  const called = async (id: string) => {
    for (let i = 0; i < 1200 && !operator.calls.has(id); i++) await run.sleep(25);
    return operator.calls.get(id) ?? Number.NaN;
  };
  // Every recipient writes first: a video is free-form, sent within their 24-hour window.
  const recipients = Array.from({ length: TEXTS * 2 + 1 }, (_, i) => `${551192000000 + i}`);
  const timestamp = `${Math.floor(Date.now() / 1000)}`;
  const hi = (from: string) => ({ from, id: `wamid.IN.${from}`, timestamp, type: "text", text: { body: "hi" } });
  const inbound = run.operatorEnvelope(phoneNumberId, { messages: recipients.map(hi) });
  const status = await run.postOperatorWebhook(base, JSON.stringify(inbound));
  if (status !== 200) run.fail(`the operator's webhook answered ${status}`);
  const video = recipients.at(-1)!;
  // Warm-up: the paths' modules and objects are loaded before anything is measured.
  await called((await send(video, { type: "video", video: { mediaId: await upload(MB / 4) } })).id);

  // The number paces its calls 505 ms apart: each row's first text waits for the slot behind another send.
  const texts = (first: number) =>
    run.mapLimit(recipients.slice(first, first + TEXTS), 1, async (to) => {
      const s = await send(to, { type: "text", text: { body: "Your order shipped." } });
      const latency = (await called(s.id)) - s.at;
      await run.sleep(600);
      return latency;
    });
  await run.sleep(1_500);
  await send(video, { type: "text", text: { body: "Your video is on its way." } });
  const quiet = await texts(0);

  // The runtime's first 16 MB body grows its memory pools once, whatever carries it: a row of its own.
  const first = (await peakGrowth(pids, () => upload(BIG))).mib;
  const stored: number[][] = [[], []];
  const sent: number[][] = [[], []];
  let during: number[] = [];
  for (const [i, size] of [MB, BIG].entries())
    for (let r = 0; r < REPEATS; r++) {
      say(`${size / MB} MB (${r + 1}/${REPEATS}): stored, then sent (the operator reads 4 MB/s)`);
      await run.sleep(1_500);
      const up = await peakGrowth(pids, () => upload(size));
      stored[i]!.push(up.mib);
      await run.sleep(1_500);
      const uploadsBefore = operator.uploads();
      const out = await peakGrowth(pids, async () => {
        const s = await send(video, { type: "video", video: { mediaId: up.value } });
        // Other recipients of the same number, while the video's upload is under way.
        if (size === BIG && r === 0) during = await texts(TEXTS);
        await called(s.id);
      });
      if (operator.uploads() !== uploadsBefore + 1) run.fail("the video reached the operator other than once");
      sent[i]!.push(out.mib);
    }

  const p50 = (v: number[]) => run.percentile(v, 50) ?? Number.NaN;
  const all = (v: number[], digits: number) =>
    `${run.fig(p50(v), digits)} (${v.map((n) => run.fig(n, digits)).join(", ")})`;
  const ratio = ([small, big]: number[][]) => run.fig(p50(big!) / Math.max(p50(small!), 0.1), 1);
  const row = (label: string, v: number[][]) => [label, ...v.map((x) => `${all(x, 1)} MiB`), ratio(v)];
  run.writeResult("media-memory.md", [
    "# A 16 MB video: the runtime's memory, and the number's other recipients",
    "",
    `\`npm run bench:media\` (${run.machine()}); how it measures and how to read it: \`bench/README.md\`.`,
    "",
    ...run.table(
      ["peak memory growth of the local runtime", "1 MB video:", "16 MB video:", "ratio (16 MB / 1 MB):"],
      [
        ["the runtime's first 16 MB body (stored; its memory pools grow once)", "", `${run.fig(first, 1)} MiB`, ""],
        row(`while it is stored (\`POST /api/v2/media\`), median of ${REPEATS}`, stored),
        row(`while it is sent (uploaded to the operator, then its message), median of ${REPEATS}`, sent),
      ],
    ),
    "",
    `Text sends to ${TEXTS} other recipients of the same number, request → operator call (p50), each row right after another send:`,
    `- after a text, with no upload under way: ${all(quiet, 0)} ms`,
    `- after the 16 MB video's send, while it is being uploaded: ${all(during, 0)} ms; ratio ${run.fig(p50(during) / p50(quiet), 2)}`,
  ]);
}

async function stop() {
  await runtime?.stop();
  operator.stop();
  rmSync(state, { recursive: true, force: true });
}

run.runMain("media", main, stop, 600_000);
