// `npm run bench:media`: what a 16 MB video costs the local runtime's memory, and whether it holds up
// the number's other recipients. One `wrangler dev` (its workerd's resident memory read from /proc
// every 25 ms) and one fake operator in this process whose media endpoint reads an upload at 4 MB/s.
// Each figure is a ratio to a baseline of the same run: a 1 MB video's memory peak, and text sends
// to other recipients right after a text. Writes bench/media-memory.md. Linux only (/proc).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { join } from "node:path";
import { startRuntime } from "./lib/runtime.ts";
import {
  LOCAL_SECRETS,
  liveNumber,
  machine,
  operatorEnvelope,
  options,
  percentile,
  postOperatorWebhook,
  runMain,
  sayAs,
  sleep,
  workspace,
  writeResult,
} from "./lib/run.ts";

const say = sayAs("media");
const opts = options({ port: { env: "MEDIA_BENCH_PORT", fallback: 8846 } });
const VERSION = "v21.0";
const MB = 1024 * 1024;
/** The operator reads an upload at this rate, so that a 16 MB upload lasts ~4 s. */
const OPERATOR_BYTES_PER_S = 4 * MB;
const TEXTS = 6;
/** Runs of each memory row: a run's peak is noisy (the allocator's and the collector's timing). */
const REPEATS = 3;

/** Resident memory (KiB) of the workerd processes in the runtime's process group. */
function workerdRssKiB(group: number): number {
  let kib = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) !== group || !stat.includes("(workerd)")) continue;
      kib += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
    } catch {
      // a process that ended meanwhile
    }
  }
  return kib;
}

/** The highest resident memory while `work` runs, above the level just before it (MiB). */
async function peakGrowth<T>(group: number, work: () => Promise<T>): Promise<{ mib: number; value: T }> {
  const before = workerdRssKiB(group);
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, workerdRssKiB(group))), 25);
  const value = await work().finally(() => clearInterval(timer));
  return { mib: (Math.max(peak, workerdRssKiB(group)) - before) / 1024, value };
}

/** An MP4's first box (`ftyp`), then filler: what the store's first-bytes check reads as a video. */
function mp4(size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  bytes.set([0, 0, 0, 0x18, ...Buffer.from("ftypmp42")]);
  for (let i = 12; i < size; i++) bytes[i] = (i * 31 + 7) & 0xff;
  return bytes;
}

async function startFakeOperator(port: number) {
  const calls = new Map<string, number>();
  const uploads: { bytes: number; at: number }[] = [];
  const answer = (res: ServerResponse, body: unknown) =>
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts = new URL(req.url ?? "/", "http://operator").pathname.split("/").filter(Boolean);
    if (req.method === "GET")
      return answer(res, { id: parts[1], display_phone_number: "+1 555-010-0000", verified_name: "Bench" });
    if (parts[2] === "media") {
      // Read at OPERATOR_BYTES_PER_S: pause the request whenever it is ahead of that rate.
      const started = Date.now();
      let bytes = 0;
      req.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        const due = started + (bytes / OPERATOR_BYTES_PER_S) * 1000;
        if (due > Date.now()) {
          req.pause();
          setTimeout(() => req.resume(), due - Date.now());
        }
      });
      req.on("end", () => {
        uploads.push({ bytes, at: Date.now() });
        answer(res, { id: `${1_000_000_000 + uploads.length}` });
      });
      return;
    }
    let raw = "";
    req.on("data", (c: Buffer) => (raw += c.toString()));
    req.on("end", () => {
      const body = JSON.parse(raw) as { biz_opaque_callback_data?: string; to: string };
      if (body.biz_opaque_callback_data) calls.set(body.biz_opaque_callback_data, Date.now());
      answer(res, {
        messaging_product: "whatsapp",
        contacts: [{ input: body.to, wa_id: body.to }],
        messages: [{ id: `wamid.${body.biz_opaque_callback_data ?? crypto.randomUUID()}` }],
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { calls, uploads, stop: () => server.close() };
}

let stopAll: () => Promise<unknown> = async () => undefined;

runMain(
  "media",
  async () => {
    const operator = await startFakeOperator(opts.port + 2);
    const state = mkdtempSync(join(os.tmpdir(), "bench-media-"));
    const runtime = await startRuntime({
      port: opts.port,
      state,
      logFile: join(state, "wrangler.log"),
      vars: { UPSTREAM_CLOUD_API_BASE_URL: `http://127.0.0.1:${opts.port + 2}`, UPSTREAM_CLOUD_API_VERSION: VERSION },
      // The bench's entry: production's Worker plus /bench/stream-body, the control below.
      script: "bench/worker.ts",
    });
    stopAll = async () => {
      await runtime.stop();
      operator.stop();
      rmSync(state, { recursive: true, force: true });
    };
    {
      const base = runtime.baseUrl;
      const group = runtime.pid() ?? 0;
      const ws = await workspace(base, "Media bench");
      const phoneNumberId = `${Date.now()}`;
      const numberId = await liveNumber(base, ws.id, "+15550100000", phoneNumberId, "bench-media-token");
      const v2 = (path: string, init: RequestInit & { headers?: Record<string, string> }) =>
        fetch(`${base}/api/v2${path}`, { ...init, headers: { Authorization: `Bearer ${ws.apiKey}`, ...init.headers } });
      const upload = async (size: number) => {
        const headers = { "Content-Type": "video/mp4", "Content-Length": String(size) };
        const res = await v2("/media", { method: "POST", headers, body: mp4(size) });
        if (res.status !== 201) throw new Error(`upload: ${res.status} ${await res.text()}`);
        return ((await res.json()) as { id: string }).id;
      };
      // `at` is when the request left: the number may call the operator before the 201 is back.
      const send = async (to: string, message: Record<string, unknown>) => {
        const at = Date.now();
        const res = await v2("/messages", {
          method: "POST",
          headers: { "Content-Type": "application/json", "Idempotency-Key": crypto.randomUUID() },
          body: JSON.stringify({ channelNumberId: numberId, to, ...message }),
        });
        if (res.status !== 201) throw new Error(`send: ${res.status} ${await res.text()}`);
        return { id: ((await res.json()) as { jobId: string }).jobId, at };
      };
      const called = async (id: string) => {
        for (let i = 0; i < 1200 && !operator.calls.has(id); i++) await sleep(25);
        return operator.calls.get(id) ?? Number.NaN;
      };
      // Every recipient writes first: a video is free-form, sent within their 24-hour window.
      const recipients = Array.from({ length: TEXTS * 2 + 2 }, (_, i) => `${551192000000 + i}`);
      for (const from of recipients) {
        const envelope = operatorEnvelope(phoneNumberId, {
          contacts: [{ wa_id: from }],
          messages: [
            {
              from,
              id: `wamid.IN.${from}`,
              timestamp: `${Math.floor(Date.now() / 1000)}`,
              type: "text",
              text: { body: "hi" },
            },
          ],
        });
        const status = await postOperatorWebhook(base, JSON.stringify(envelope));
        if (status !== 200) throw new Error(`inbound: ${status}`);
      }
      // Warm-up: the paths' modules and objects are loaded before anything is measured.
      await called((await send(recipients[0]!, { type: "video", video: { mediaId: await upload(MB / 4) } })).id);
      await sleep(1_500);

      const textLatency = async (offset: number) => {
        const out: number[] = [];
        for (let i = 0; i < TEXTS; i++) {
          const s = await send(recipients[offset + i]!, { type: "text", text: { body: `Order ${i} shipped.` } });
          out.push((await called(s.id)) - s.at);
          await sleep(600);
        }
        return out;
      };
      // The number paces its calls 505 ms apart (2 a second): the first text after the video waits for
      // the slot behind the video's call, so the baseline's first text follows another send too.
      say("baseline: texts right after a text to the video's recipient, no upload under way");
      await send(recipients[TEXTS * 2 + 1]!, { type: "text", text: { body: "Your video is on its way." } });
      const quiet = await textLatency(1);

      const streamBody = async (into: string) => {
        const body = mp4(16 * MB);
        const res = await fetch(`${base}/bench/stream-body?into=${into}`, {
          method: "POST",
          headers: { Authorization: `Bearer ${LOCAL_SECRETS.ADMIN_TOKEN}`, "Content-Length": String(body.byteLength) },
          body,
        });
        if (res.status !== 204) throw new Error(`stream-body: ${res.status} ${await res.text()}`);
      };
      // The runtime's first 16 MB body grows its memory pools once, whatever carries it: a row of its
      // own, then every row is the median of REPEATS in the warmed runtime (none pays it by going first).
      say("the runtime's first 16 MB body (stored)");
      const first = (await peakGrowth(group, () => upload(16 * MB))).mib;
      const stored: Record<number, number[]> = {};
      const sent: Record<number, number[]> = {};
      let during: number[] = [];
      for (const size of [MB, 16 * MB])
        for (let r = 0; r < REPEATS; r++) {
          await sleep(1_500);
          say(
            `${size / MB} MB (${r + 1}/${REPEATS}): stored, then sent (the operator reads ${OPERATOR_BYTES_PER_S / MB} MB/s)`,
          );
          const up = await peakGrowth(group, () => upload(size));
          (stored[size] ??= []).push(up.mib);
          await sleep(1_500);
          const uploadsBefore = operator.uploads.length;
          const out = await peakGrowth(group, async () => {
            const video = await send(recipients[TEXTS * 2 + 1]!, { type: "video", video: { mediaId: up.value } });
            // Other recipients of the same number, while the video's upload is under way.
            const texts = size === 16 * MB && r === 0 ? await textLatency(TEXTS + 1) : [];
            await called(video.id);
            return texts;
          });
          if (operator.uploads.length !== uploadsBefore + 1)
            throw new Error("the video reached the operator other than once");
          (sent[size] ??= []).push(out.mib);
          if (out.value.length > 0) during = out.value;
        }
      // The control: the same 16 MB body streamed by a bench route into nothing, and into R2 alone.
      const control: Record<string, number[]> = {};
      for (const into of ["nothing", "r2"])
        for (let r = 0; r < REPEATS; r++) {
          await sleep(1_500);
          (control[into] ??= []).push((await peakGrowth(group, () => streamBody(into))).mib);
        }
      const big = 16 * MB;
      const p50 = (v: number[]) => percentile(v, 50) ?? Number.NaN;
      const f = (n: number) => n.toFixed(1);
      const row = (v: number[]) => `${f(p50(v))} MiB (${v.map(f).join(", ")})`;
      const ratio = (v: Record<number, number[]>) => f(p50(v[big]!) / Math.max(p50(v[MB]!), 0.1));
      writeResult("media-memory.md", [
        "# A 16 MB video: the runtime's memory, and the number's other recipients",
        "",
        `\`npm run bench:media\` (${machine()}): one local \`wrangler dev\`; the resident memory of its workerd processes`,
        "sampled every 25 ms; a fake operator reading uploads at 4 MB/s (a 16 MB upload lasts ~4 s).",
        "",
        "| | 1 MB video | 16 MB video | ratio (16 MB / 1 MB) |",
        "|---|---:|---:|---:|",
        `| the runtime's first 16 MB body (stored; its memory pools grow once) | | ${f(first)} MiB | |`,
        `| peak memory growth while it is stored (\`POST /api/v2/media\`) | ${row(stored[MB]!)} | ${row(stored[big]!)} | ${ratio(stored)} |`,
        `| peak memory growth while it is sent (uploaded to the operator, then its message) | ${row(sent[MB]!)} | ${row(sent[big]!)} | ${ratio(sent)} |`,
        `| control: the same 16 MB body streamed by a bench route into nothing / into R2 alone | | ${row(control.nothing!)} / ${row(control.r2!)} | |`,
        "",
        `Each row after the first is the median of ${REPEATS} runs (all of them in brackets), taken once the runtime's`,
        "first 16 MB body has grown its pools. A file held whole once in memory grows the peak by its size (a ratio",
        "near 16); streamed end to end, the peak stays near the 1 MB file's. The figure is the whole local runtime's,",
        "the local R2 simulator's included: the control streams the same body into nothing, then natively into R2",
        "alone, and so gives what the runtime and the simulator cost by themselves; the rest of a row is the Worker's.",
        "",
        `Text sends to ${TEXTS} other recipients of the same number, request → operator call (p50); the first of each`,
        "row is sent right after another send of the number, whose call took the pace's slot (2 calls a second per",
        "number, 505 ms apart): it waits for the next slot, by the pace, not for the upload.",
        `- right after a text, with no upload under way: ${p50(quiet).toFixed(0)} ms (${quiet.map((n) => n.toFixed(0)).join(", ")})`,
        `- right after the 16 MB video's send, while it is being uploaded: ${p50(during).toFixed(0)} ms (${during.map((n) => n.toFixed(0)).join(", ")}); ratio ${(p50(during) / p50(quiet)).toFixed(2)}`,
      ]);
    }
  },
  () => stopAll(),
  600_000,
);
