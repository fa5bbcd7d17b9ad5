// The fake channel operator of `npm run soak` (shaped like the WhatsApp Cloud API): answers the
// number check and message sends on loopback, slowly and with faults, and records every call it
// received, with the time the number object started each call (X-Call-Started-At, which the soak
// asks for) beside the time the call arrived. The arrival times are measured precisely, so it runs in
// its own process (raised priority when allowed), away from the soak's load and checks, and it
// measures its own lateness: a 1 ms timer ticks throughout, and a request handled at `hr` arrived
// no earlier than the tick before the last tick preceding `hr` (`earliest`). On a healthy event
// loop that interval is ~1–2 ms; when the process was not scheduled it is as long as the stall.
//
// Faults, by the recipient's last digit (a recipient keeps its class for the whole run):
//   0  400 error 131026 (undeliverable): final, the message fails
//   1  first attempt 500 error 131000 (transient): retried, then accepted
//   2  first attempt 429 error 131056 (pair rate) with Retry-After: 1, then accepted
//   3  accepted; the operator reports it failed (131047) after `sent`
//   4  outcome lost: a bare 502 or a connection dropped after the body was read (half each);
//      the operator did receive and process it, so it reports `sent` and `delivered`
//   5  first attempt 503 error 2 (service unavailable) with Retry-After: 1, then accepted
//   6–9 accepted, `sent` then `delivered` (sometimes `read`); 4% of these calls drop the connection
//      after reading the body (accepted by the operator all the same)
// Any call may also get a bare 429 with Retry-After: 2 (at most once per number): the number holds.
import { createServer } from "node:http";
import { fork } from "node:child_process";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { seededRandom } from "./soak-random.mjs";

const ROLE_FLAG = "--soak-operator";

/** @typedef {import("./soak-checks.mjs").OperatorCall} OperatorCall */
/**
 * The operator process's settings, sent to it when it starts.
 * @typedef {{ port: number, seed: number, version: string, numbers: Record<string, string>, latencyMs: [number, number] }} OperatorConfig
 */
/** What the operator process tells the soak. @typedef {{ type: "listening", priority: number | null } | { type: "call", call: OperatorCall }} OperatorMessage */
/**
 * How the operator answers one call.
 * @typedef {{ kind: "accepted" | "error" | "bare502" | "dropped", status: number | null, processed: boolean, finalStatus?: string, code?: number | null, body?: string, retryAfter?: string }} Plan
 */

/** Sends `msg` to the soak over the IPC channel (this file runs as a forked child). @param {OperatorMessage} msg */
const tell = (msg) => process.send?.(msg);

/**
 * Starts the operator process on 127.0.0.1:`port`. `numbers` maps phone number id → access token.
 * `onCall` receives each call's record once it was answered (or its connection dropped).
 * @param {Omit<OperatorConfig, "latencyMs"> & { latencyMs?: [number, number], onCall?: (call: OperatorCall) => void }} options
 */
export async function startOperator({ port, seed, version, numbers, latencyMs = [50, 700], onCall }) {
  const child = fork(fileURLToPath(import.meta.url), [ROLE_FLAG], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  /** @type {OperatorCall[]} */
  const calls = [];
  /** @type {number | null} */
  let priority = null;
  const exited = new Promise((r) => child.once("exit", r));
  /** @type {Promise<void>} */
  const ready = new Promise((resolve, reject) => {
    child.once("error", reject);
    exited.then(() => reject(new Error("the fake operator exited before it listened")));
    child.on("message", (/** @type {OperatorMessage} */ msg) => {
      if (msg.type === "listening") {
        priority = msg.priority;
        resolve();
      }
      if (msg.type === "call") {
        calls.push(msg.call);
        onCall?.(msg.call);
      }
    });
  });
  child.send({ type: "config", port, seed, version, numbers, latencyMs });
  await ready;
  return {
    calls,
    priority: () => priority,
    /** Stops the server; resolves when the process has ended. */
    stop: async () => {
      if (child.exitCode === null && child.connected) child.send({ type: "stop" });
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3_000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    },
  };
}

/** Meta's error object. @param {number} code @param {string} message @param {Record<string, unknown>} [extra] */
const metaError = (code, message, extra = {}) =>
  JSON.stringify({
    error: {
      message,
      type: "OAuthException",
      code,
      error_data: { messaging_product: "whatsapp", details: message },
      fbtrace_id: "Soak",
      ...extra,
    },
  });

/** @param {OperatorConfig} config */
function runOperatorProcess({ port, seed, version, numbers, latencyMs }) {
  /** @type {number | null} */
  let priority = null;
  try {
    os.setPriority(-10);
    priority = -10;
  } catch {
    // not allowed here: the measured lateness says what that cost
  }
  const hrNow = () => performance.timeOrigin + performance.now();
  // The lateness ticks: a ring of the last ticks is enough, a request looks back two ticks.
  const ticks = new Float64Array(64);
  let tickCount = 0;
  const tick = () => {
    ticks[tickCount++ % ticks.length] = hrNow();
  };
  tick();
  const ticker = setInterval(tick, 1);
  /** The tick before the last tick at or before now: the request was not there yet then. */
  const earliestArrival = () => /** @type {number} */ (ticks[(tickCount - 2 + ticks.length) % ticks.length]);
  const rnd = seededRandom(seed);
  /** @type {Map<string | null, number>} jobId → calls so far */
  const attempts = new Map();
  /** @type {Set<string>} numbers that already got their bare 429 */
  const heldNumbers = new Set();
  let seq = 0;
  /** @type {Set<import("node:net").Socket>} */
  const sockets = new Set();

  /** @param {string} recipient @param {number} attempt @param {string} phoneNumberId @returns {Plan} */
  const decide = (recipient, attempt, phoneNumberId) => {
    if (!heldNumbers.has(phoneNumberId) && rnd.chance(0.003)) {
      heldNumbers.add(phoneNumberId);
      return { kind: "error", status: 429, body: "", retryAfter: "2", code: null, processed: false };
    }
    const cls = Number(recipient.at(-1));
    /** @returns {Plan} */
    const accept = (finalStatus = "delivered") => ({
      kind: "accepted",
      status: 200,
      processed: true,
      finalStatus: finalStatus === "delivered" && rnd.chance(0.3) ? "read" : finalStatus,
    });
    switch (cls) {
      case 0:
        return {
          kind: "error",
          status: 400,
          code: 131026,
          body: metaError(131026, "Message undeliverable"),
          processed: false,
        };
      case 1:
        return attempt === 1
          ? {
              kind: "error",
              status: 500,
              code: 131000,
              body: metaError(131000, "Something went wrong", { is_transient: true }),
              processed: false,
            }
          : accept();
      case 2:
        return attempt === 1
          ? {
              kind: "error",
              status: 429,
              code: 131056,
              retryAfter: "1",
              body: metaError(131056, "(Business Account, Consumer Account) pair rate limit hit"),
              processed: false,
            }
          : accept();
      case 3:
        return accept("failed");
      case 4:
        return rnd.chance(0.5)
          ? { kind: "bare502", status: 502, processed: true, finalStatus: "delivered" }
          : { kind: "dropped", status: null, processed: true, finalStatus: "delivered" };
      case 5:
        return attempt === 1
          ? {
              kind: "error",
              status: 503,
              code: 2,
              retryAfter: "1",
              body: metaError(2, "Service temporarily unavailable"),
              processed: false,
            }
          : accept();
      default:
        return rnd.chance(0.04)
          ? { kind: "dropped", status: null, processed: true, finalStatus: "delivered" }
          : accept();
    }
  };

  const server = createServer((req, res) => {
    // Receive time first: the request's headers have just been parsed.
    const hr = hrNow();
    const earliest = tickCount >= 2 ? earliestArrival() : hr;
    const at = Date.now();
    /** @type {Buffer[]} */
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://operator");
      const parts = url.pathname.split("/").filter(Boolean); // [version, phoneNumberId, "messages"?]
      const token = (req.headers.authorization ?? "").replace(/^Bearer /, "");
      const phoneNumberId = parts[1] ?? "";
      if (parts[0] !== version || numbers[phoneNumberId] === undefined || numbers[phoneNumberId] !== token) {
        res.writeHead(401, { "Content-Type": "application/json" }).end(metaError(190, "Invalid OAuth access token."));
        return;
      }
      if (req.method === "GET" && parts.length === 2) {
        res
          .writeHead(200, { "Content-Type": "application/json" })
          .end(JSON.stringify({ id: phoneNumberId, display_phone_number: "+1 555-010-0000", verified_name: "Soak" }));
        return;
      }
      if (req.method !== "POST" || parts[2] !== "messages") {
        res.writeHead(404).end();
        return;
      }
      let body = null;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        // recorded as is
      }
      const jobId = typeof body?.biz_opaque_callback_data === "string" ? body.biz_opaque_callback_data : null;
      const to = typeof body?.to === "string" ? body.to : "";
      const attempt = (attempts.get(jobId) ?? 0) + 1;
      attempts.set(jobId, attempt);
      const plan = decide(to.replace(/^\+/, ""), attempt, phoneNumberId);
      const wamid = `wamid.SOAK${String(++seq).padStart(7, "0")}`;
      /** @type {OperatorCall} */
      const call = {
        seq,
        at,
        hr,
        earliest,
        startedAt: Number(req.headers["x-call-started-at"]) || null,
        phoneNumberId,
        jobId,
        attempt,
        to,
        text: body?.text?.body ?? null,
        messagingProduct: body?.messaging_product ?? null,
        answer: plan.kind,
        httpStatus: plan.status,
        code: plan.code ?? null,
        processed: plan.processed,
        finalStatus: plan.finalStatus ?? null,
        wamid: plan.processed ? wamid : null,
      };
      const delay = rnd.between(latencyMs[0], latencyMs[1]);
      setTimeout(() => {
        call.answeredHr = hrNow();
        if (plan.kind === "dropped") {
          req.socket.destroy();
        } else if (plan.kind === "accepted") {
          res.writeHead(200, { "Content-Type": "application/json" }).end(
            JSON.stringify({
              messaging_product: "whatsapp",
              contacts: [{ input: to, wa_id: to.replace(/^\+/, "") }],
              messages: [{ id: wamid, message_status: "accepted" }],
            }),
          );
        } else if (plan.kind === "bare502") {
          res.writeHead(502, { "Content-Type": "text/html" }).end("<html><body>502 Bad Gateway</body></html>");
        } else {
          const headers = {
            "Content-Type": "application/json",
            ...(plan.retryAfter ? { "Retry-After": plan.retryAfter } : {}),
          };
          res.writeHead(plan.status ?? 500, headers).end(plan.body);
        }
        tell({ type: "call", call });
      }, delay);
    });
  });
  server.keepAliveTimeout = 5_000;
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.listen(port, "127.0.0.1", () => tell({ type: "listening", priority }));
  const stop = () => {
    clearInterval(ticker);
    server.close(() => process.exit(0));
    for (const s of sockets) s.destroy();
  };
  process.on("message", (/** @type {{ type?: string }} */ msg) => msg.type === "stop" && stop());
  // The soak ended (or died): never outlive it.
  process.on("disconnect", stop);
}

if (process.argv[2] === ROLE_FLAG)
  process.once("message", (/** @type {OperatorConfig} */ config) => runOperatorProcess(config));
