// The operator's side of the webhooks in `npm run soak`: status reports for every call the fake
// operator processed, and inbound messages, POSTed to the Worker signed with X-Hub-Signature-256.
//
// Local Queues live in memory: a webhook the Worker acknowledged (200) and queued on `upstream-events`
// is lost when the runtime is killed before the consumer ran. In production that queue is durable. The
// operator itself delivers at least once and repeats its webhooks, so this emulates the durable queue
// the way the operator would cover for it: after each 200 it checks, some seconds later, that the API
// shows the effect (status, deliveredAt, readAt, the inbound message), and posts the same bytes again
// when it does not. Every repeat is counted.
import type { OperatorCall } from "../lib/operator.ts";
import { callApi, operatorEnvelope, postOperatorWebhook, sleep, type Random } from "../lib/run.ts";
import type { MessageRecord } from "./checks.ts";

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
  const stats = {
    posts: 0,
    repeats: 0,
    postFailures: 0,
    statuses: 0,
    inbound: 0,
    inboundDuplicates: 0,
    pending: 0,
    gaveUp: 0,
  };
  /** Inbound messages injected, by wamid (`at`: when first posted). */
  const inbound = new Map<string, { phoneNumberId: string; from: string; text: string; at: number }>();
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
    stats.statuses++;
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
    if (name === "delivered" || name === "sent") {
      item.conversation = { id: "CONV-SOAK", origin: { type: "service" } };
      item.pricing = { billable: false, pricing_model: "PMP", category: "service" };
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
      stats.inbound++;
      inbound.set(wamid, { phoneNumberId, from, text, at: Date.now() });
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
