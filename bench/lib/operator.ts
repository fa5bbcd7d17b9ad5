// The fake channel operator (shaped like the WhatsApp Cloud API) of the soak and the latency bench: its API
// below, its webhooks (the soak's) at the end. The API answers the number check and message sends on
// loopback after a latency, in the bench's own process, and records every call with when it arrived and,
// when the Worker stamps it (X-Call-Started-At), when the number object started it: the pace is checked
// on that stamp, since the arrival also holds a transit the object cannot observe.
//
// With `faults` (the soak), by the recipient's last digit (a recipient keeps its class for the run):
//   0  400 error 131026 (undeliverable): final, the message fails
//   1  first attempt 500 error 131000 (transient): retried, then accepted
//   2  first attempt 429 error 131056 (pair rate) with Retry-After: 1, then accepted
//   3  accepted; the operator reports it failed (131047) after `sent`
//   4  outcome lost: a bare 502 or a connection dropped after the body was read (half each);
//      the operator did receive and process it, so it reports `sent` and `delivered`
//   5  first attempt 503 error 2 (service unavailable) with Retry-After: 1, then accepted
//   6–9 accepted, `sent` then `delivered` (sometimes `read`); 4% of these calls drop the connection
//      after reading the body (accepted by the operator all the same)
// and any call may get a bare 429 with Retry-After: 2 (at most once per number): the number holds.
import { createServer } from "node:http";
import { performance } from "node:perf_hooks";
import type { InjectedInbound, MessageRecord } from "../soak/checks.ts";
import { callApi, operatorEnvelope, postOperatorWebhook, seededRandom, sleep, type Random } from "./run.ts";

export interface OperatorCall {
  seq: number;
  /** Receive time: the wall clock, to a fraction of a millisecond (ms). */
  at: number;
  /** X-Call-Started-At: when the number object started the call. */
  startedAt: number | null;
  phoneNumberId: string;
  /** The call's jobId (biz_opaque_callback_data); null when it carried none. */
  jobId: string | null;
  attempt: number;
  to: string;
  text: string | null;
  messagingProduct: string | null;
  answer: "accepted" | "error" | "bare502" | "dropped";
  /** null: the connection was dropped. */
  httpStatus?: number | null;
  code: string | number | null;
  /** Whether the operator processed the call (a delivery). */
  processed: boolean;
  finalStatus?: string | null;
  wamid?: string | null;
  /** When the answer left (the clock of `at`). */
  answeredAt?: number;
}

type CallBody = {
  biz_opaque_callback_data?: unknown;
  to?: unknown;
  text?: { body?: string };
  messaging_product?: string;
};
/** How the operator answers a call: `code` and `message` make a Graph API error body. */
type Plan = Pick<OperatorCall, "answer" | "processed"> & {
  status: number | null;
  finalStatus?: string;
  code?: number;
  message?: string;
  transient?: boolean;
  retryAfter?: string;
};

const metaError = (code: number, message: string, transient = false) =>
  JSON.stringify({
    error: {
      ...{ message, type: "OAuthException", code, error_data: { messaging_product: "whatsapp", details: message } },
      ...{ fbtrace_id: "Bench", ...(transient ? { is_transient: true } : {}) },
    },
  });

/** Starts the operator on 127.0.0.1:`port`; `onCall` gets each call once it was answered or dropped. */
export async function startOperator(o: {
  port: number;
  seed?: number;
  version: string;
  faults: boolean;
  latencyMs: [number, number];
  onCall?: (call: OperatorCall) => void;
}) {
  // The wall clock at the start, then the monotonic one: a fraction of a millisecond, never going back.
  const origin = Date.now() - performance.now();
  const now = () => origin + performance.now();
  const rnd = seededRandom(o.seed ?? 1);
  const calls: OperatorCall[] = [];
  /** The access token of each known phone number id. */
  const tokens = new Map<string, string>();
  const attempts = new Map<string | null, number>();
  const heldNumbers = new Set<string>();
  let seq = 0;

  const accept = (final = "delivered"): Plan => ({
    answer: "accepted",
    status: 200,
    processed: true,
    finalStatus: final === "delivered" && rnd.chance(0.3) ? "read" : final,
  });
  const refuse = (status: number, code: number, message: string, retryAfter?: string): Plan => ({
    ...{ answer: "error", status, processed: false },
    ...{ code, message, retryAfter, transient: code === 131000 },
  });
  const lost = (answer: "bare502" | "dropped"): Plan => ({
    ...{ answer, status: answer === "bare502" ? 502 : null },
    ...{ processed: true, finalStatus: "delivered" },
  });
  /** By the recipient's last digit: the first attempt's answer (a class without a later one answers alike every time). */
  const FAULTS: Array<(first: boolean) => Plan> = [
    () => refuse(400, 131026, "Message undeliverable"),
    (first) => (first ? refuse(500, 131000, "Something went wrong") : accept()),
    (first) =>
      first ? refuse(429, 131056, "(Business Account, Consumer Account) pair rate limit hit", "1") : accept(),
    () => accept("failed"),
    () => lost(rnd.chance(0.5) ? "bare502" : "dropped"),
    (first) => (first ? refuse(503, 2, "Service temporarily unavailable", "1") : accept()),
  ];
  const decide = (recipient: string, attempt: number, phoneNumberId: string): Plan => {
    if (!o.faults) return { answer: "accepted", status: 200, processed: true, finalStatus: "delivered" };
    if (!heldNumbers.has(phoneNumberId) && rnd.chance(0.003)) {
      heldNumbers.add(phoneNumberId);
      return { answer: "error", status: 429, retryAfter: "2", processed: false };
    }
    const fault = FAULTS[Number(recipient.at(-1))];
    return fault ? fault(attempt === 1) : rnd.chance(0.04) ? lost("dropped") : accept();
  };

  const server = createServer((req, res) => {
    const at = now();
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const parts = new URL(req.url ?? "/", "http://operator").pathname.split("/").filter(Boolean);
      const phoneNumberId = parts[1] ?? "";
      const token = tokens.get(phoneNumberId);
      const json = (status: number, body: string, headers = {}) =>
        res.writeHead(status, { "Content-Type": "application/json", ...headers }).end(body);
      if (parts[0] !== o.version || !token || `Bearer ${token}` !== req.headers.authorization)
        return void json(401, metaError(190, "Invalid OAuth access token."));
      const numberFields = { id: phoneNumberId, display_phone_number: "+1 555-010-0000", verified_name: "Bench" };
      if (req.method === "GET" && parts.length === 2) return void json(200, JSON.stringify(numberFields));
      if (req.method !== "POST" || parts[2] !== "messages") return void res.writeHead(404).end();
      let body: CallBody = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        // recorded as is
      }
      const jobId = typeof body.biz_opaque_callback_data === "string" ? body.biz_opaque_callback_data : null;
      const to = typeof body.to === "string" ? body.to : "";
      const attempt = (attempts.get(jobId) ?? 0) + 1;
      attempts.set(jobId, attempt);
      const plan = decide(to.replace(/^\+/, ""), attempt, phoneNumberId);
      const wamid = `wamid.BENCH${String(++seq).padStart(7, "0")}`;
      const call: OperatorCall = {
        ...{ seq, at, startedAt: Number(req.headers["x-call-started-at"]) || null, phoneNumberId, jobId, attempt, to },
        ...{ text: body.text?.body ?? null, messagingProduct: body.messaging_product ?? null },
        ...{ answer: plan.answer, httpStatus: plan.status, code: plan.code ?? null, processed: plan.processed },
        ...{ finalStatus: plan.finalStatus ?? null, wamid: plan.processed ? wamid : null },
      };
      setTimeout(
        () => {
          call.answeredAt = now();
          const contacts = [{ input: to, wa_id: to.replace(/^\+/, "") }];
          const messages = [{ id: wamid, message_status: "accepted" }];
          const retry = plan.retryAfter ? { "Retry-After": plan.retryAfter } : {};
          if (plan.answer === "dropped") req.socket.destroy();
          else if (plan.answer === "accepted")
            json(200, JSON.stringify({ messaging_product: "whatsapp", contacts, messages }));
          else if (plan.answer === "bare502")
            res.writeHead(502, { "Content-Type": "text/html" }).end("<html><body>502 Bad Gateway</body></html>");
          else if (plan.code === undefined) res.writeHead(plan.status ?? 500, retry).end("");
          else json(plan.status ?? 500, metaError(plan.code, plan.message ?? "", plan.transient), retry);
          calls.push(call);
          o.onCall?.(call);
        },
        rnd.between(...o.latencyMs),
      );
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(o.port, "127.0.0.1", resolve));
  return {
    calls,
    /** Makes `phoneNumberId` known with its access token. */
    addNumber: (phoneNumberId: string, token: string) => void tokens.set(phoneNumberId, token),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
export type Operator = Awaited<ReturnType<typeof startOperator>>;

// ---- The operator's webhooks in `npm run soak`: status reports for every call it processed, and inbound
// messages, signed. A webhook the Worker acknowledged and queued is lost with the local in-memory queue at
// a kill (production's is durable); the operator delivers at least once, so this one checks, some seconds
// after each 200, that the API shows the effect, and posts the same bytes again (counted) when it does not.

type StatusName = "sent" | "delivered" | "read" | "failed";
const seconds = (ms: number) => String(Math.floor(ms / 1000));

/** `checkKeyOf(phoneNumberId)`: the API key that confirms an effect; `confirmAfterMs`: how long after a 200 it must show. */
export function createOperatorWebhooks(o: {
  baseUrl: string;
  checkKeyOf: (phoneNumberId: string) => string;
  random: Random;
  confirmAfterMs?: number;
}) {
  const { baseUrl, random, confirmAfterMs = 8_000 } = o;
  const stats = { posts: 0, repeats: 0, postFailures: 0, inboundDuplicates: 0, pending: 0, gaveUp: 0 };
  /** Inbound messages injected, by wamid. */
  const inbound = new Map<string, InjectedInbound>();
  let stopped = false;
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  /** The operator retries until it gets a 200 (here: every second, while the run lasts). */
  async function post(raw: string) {
    while (!stopped) {
      stats.posts++;
      if ((await postOperatorWebhook(baseUrl, raw)) === 200) return true;
      stats.postFailures++;
      await sleep(1_000);
    }
    return false;
  }

  /** Posts `payload` until acknowledged, then again whenever `effectShows()` is still false `confirmAfterMs` later (null: not known yet). */
  async function deliver(payload: unknown, effectShows: () => Promise<boolean | null>) {
    stats.pending++;
    const raw = JSON.stringify(payload);
    try {
      for (let first = true; !stopped; first = false) {
        if (!first) stats.repeats++;
        if (!(await post(raw))) break;
        await sleep(confirmAfterMs);
        let shows: boolean | null = null;
        while (!stopped && shows === null) {
          shows = await effectShows().catch(() => null);
          if (shows === null) await sleep(1_000);
        }
        if (shows) return;
      }
      stats.gaveUp++;
    } finally {
      stats.pending--;
    }
  }

  const read = async (phoneNumberId: string, path: string) => {
    const res = await callApi(baseUrl, "GET", path, o.checkKeyOf(phoneNumberId));
    return res.status === 200 ? res.json : null; // unknown yet: ask again
  };

  // A failed message ignores later delivery reports by design (failed is final).
  const effects: Record<StatusName, (m: MessageRecord) => boolean> = {
    sent: (m) => m.status === "sent" || m.status === "failed",
    delivered: (m) => m.deliveredAt !== null || m.status === "failed",
    read: (m) => m.readAt !== null || m.status === "failed",
    failed: (m) => m.status === "failed",
  };

  /** Reports one status of a call the operator processed. */
  function status(call: OperatorCall, name: StatusName, at: number) {
    const item: Record<string, unknown> = {
      id: call.wamid,
      status: name,
      timestamp: seconds(at),
      recipient_id: call.to.replace(/^\+/, ""),
      biz_opaque_callback_data: call.jobId,
    };
    if (name === "failed") {
      const details =
        "Message failed to send because more than 24 hours have passed since the customer last replied to this number.";
      item.errors = [
        { code: 131047, title: "Re-engagement message", message: "Re-engagement message", error_data: { details } },
      ];
    }
    return deliver(operatorEnvelope(call.phoneNumberId, { statuses: [item] }), async () => {
      const m: MessageRecord | null = await read(call.phoneNumberId, `/api/v1/messages/${call.jobId}`);
      return m === null ? null : effects[name](m);
    });
  }

  return {
    stats,
    inbound,
    /** Schedules the status webhooks of a call the operator processed: `sent`, then its final report. */
    onCall(call: OperatorCall) {
      if (!call.processed || !call.jobId) return;
      const sentAt = call.at + random.between(100, 600);
      later(sentAt - Date.now(), () => {
        void status(call, "sent", sentAt);
        const finalAt = Date.now() + random.between(500, 2_500);
        later(finalAt - Date.now(), () => {
          if (call.finalStatus === "failed") void status(call, "failed", finalAt);
          else {
            void status(call, "delivered", finalAt);
            if (call.finalStatus === "read")
              later(random.between(300, 1_500), () => void status(call, "read", Date.now()));
          }
        });
      });
    },
    /** One inbound text from `from` to the number; sometimes posted twice, as the operator may. */
    inject(phoneNumberId: string, from: string, wamid: string, text: string) {
      inbound.set(wamid, { from, text });
      const payload = operatorEnvelope(phoneNumberId, {
        contacts: [{ profile: { name: "Soak" }, wa_id: from }],
        messages: [{ from, id: wamid, timestamp: seconds(Date.now()), type: "text", text: { body: text } }],
      });
      void deliver(payload, async () => {
        const page = await read(phoneNumberId, `/api/v1/messages?direction=inbound&from=${from}&limit=5`);
        return page === null
          ? null
          : (page.data ?? []).some((m: { upstreamMessageId?: string }) => m.upstreamMessageId === wamid);
      });
      if (random.chance(0.1)) {
        stats.inboundDuplicates++;
        later(random.between(200, 3_000), () => void post(JSON.stringify(payload)));
      }
    },
    /** True while some webhook is scheduled, unacknowledged or not yet confirmed. */
    busy: () => stats.pending > 0 || timers.size > 0,
    stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}
