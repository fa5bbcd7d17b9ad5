// The operator's side of the webhooks in `npm run soak`: status reports for every call the fake
// operator processed, and inbound messages, POSTed to the Worker signed with X-Hub-Signature-256.
//
// Local Queues live in memory: a webhook the Worker acknowledged (200) and queued on
// `upstream-events` is lost when the runtime is killed before the consumer ran. In production that
// queue is durable. The operator itself delivers at least once and repeats its webhooks, so this
// module emulates the durable queue the way the operator would cover for it: after each 200 it
// checks, some seconds later, that the API shows the effect (status, deliveredAt, readAt, the
// inbound message), and posts the same bytes again when it does not. Every repeat is counted.
import { callApi } from "./http-call.mjs";
import { operatorEnvelope, operatorSignature } from "./operator-envelope.mjs";

/** @typedef {import("./soak-checks.mjs").OperatorCall} OperatorCall */
/** @typedef {import("./soak-checks.mjs").MessageRecord} MessageRecord */
/** @typedef {"sent" | "delivered" | "read" | "failed"} StatusName */

const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** @param {string} phoneNumberId @param {Record<string, unknown>} value */
const change = (phoneNumberId, value) => operatorEnvelope("WABA-SOAK", phoneNumberId, value);
const seconds = (/** @type {number} */ ms) => String(Math.floor(ms / 1000));

/**
 * `tenantOf(phoneNumberId)` → { checkKey } for the API reads that confirm an effect.
 * `confirmAfterMs`: how long after a 200 the effect must show before the webhook is posted again.
 * @param {{ baseUrl: string, appSecret: string, tenantOf: (phoneNumberId: string) => { checkKey: string },
 *   random: import("./soak-random.mjs").Random, confirmAfterMs?: number }} options
 */
export function createOperatorWebhooks({ baseUrl, appSecret, tenantOf, random, confirmAfterMs = 8_000 }) {
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
  /** Inbound messages injected: wamid → { phoneNumberId, from, text, at } (`at`: when first posted). @type {Map<string, { phoneNumberId: string, from: string, text: string, at: number }>} */
  const inbound = new Map();
  let stopped = false;
  /** @type {Set<NodeJS.Timeout>} */
  const timers = new Set();
  /** @param {number} ms @param {() => void} fn */
  const later = (ms, fn) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  /** @param {string} raw */
  async function post(raw) {
    const signature = operatorSignature(appSecret, raw);
    // The operator retries until it gets a 200 (here: every second, while the run lasts).
    while (!stopped) {
      stats.posts++;
      try {
        const res = await fetch(`${baseUrl}/upstream/cloud/webhook`, {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-Hub-Signature-256": signature },
          body: raw,
          signal: AbortSignal.timeout(10_000),
        });
        await res.arrayBuffer();
        if (res.status === 200) return true;
      } catch {
        // the runtime is down or restarting
      }
      stats.postFailures++;
      await sleep(1_000);
    }
    return false;
  }

  /**
   * Posts `payload` until acknowledged, then again whenever `effectShows()` is still false `confirmAfterMs` later.
   * @param {unknown} payload @param {() => Promise<boolean | null>} effectShows (null: not known yet)
   */
  async function deliver(payload, effectShows) {
    stats.pending++;
    const raw = JSON.stringify(payload);
    try {
      let first = true;
      while (!stopped) {
        if (!first) stats.repeats++;
        first = false;
        if (!(await post(raw))) break;
        await sleep(confirmAfterMs);
        let shows = null;
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

  /** @param {string} phoneNumberId @param {string | null} jobId @returns {Promise<MessageRecord | null>} */
  const readMessage = async (phoneNumberId, jobId) => {
    const res = await callApi(baseUrl, "GET", `/api/v1/messages/${jobId}`, tenantOf(phoneNumberId).checkKey);
    if (res.status !== 200) return null; // unknown yet: ask again
    return res.json;
  };

  // A failed message ignores later delivery reports by design (failed is final).
  /** @type {Record<StatusName, (m: MessageRecord) => boolean>} */
  const effects = {
    sent: (m) => m.status === "sent" || m.status === "failed",
    delivered: (m) => m.deliveredAt !== null || m.status === "failed",
    read: (m) => m.readAt !== null || m.status === "failed",
    failed: (m) => m.status === "failed",
  };

  /** Reports one status of a call the operator processed. @param {OperatorCall} call @param {StatusName} name @param {number} at */
  function status(call, name, at) {
    stats.statuses++;
    /** @type {Record<string, unknown>} */
    const item = {
      id: call.wamid,
      status: name,
      timestamp: seconds(at),
      recipient_id: call.to.replace(/^\+/, ""),
      biz_opaque_callback_data: call.jobId,
    };
    if (name === "failed") {
      item.errors = [
        {
          code: 131047,
          title: "Re-engagement message",
          message: "Re-engagement message",
          error_data: {
            details:
              "Message failed to send because more than 24 hours have passed since the customer last replied to this number.",
          },
        },
      ];
    }
    if (name === "delivered" || name === "sent") {
      item.conversation = { id: "CONV-SOAK", origin: { type: "service" } };
      item.pricing = { billable: false, pricing_model: "PMP", category: "service" };
    }
    return deliver(change(call.phoneNumberId, { statuses: [item] }), async () => {
      const m = await readMessage(call.phoneNumberId, call.jobId);
      return m === null ? null : effects[name](m);
    });
  }

  return {
    stats,
    inbound,
    /** Schedules the status webhooks of a call the operator processed: `sent`, then its final report. */
    /** @param {OperatorCall} call */
    onCall(call) {
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
    /** @param {string} phoneNumberId @param {string} from @param {string} wamid @param {string} text */
    inject(phoneNumberId, from, wamid, text) {
      stats.inbound++;
      inbound.set(wamid, { phoneNumberId, from, text, at: Date.now() });
      const payload = change(phoneNumberId, {
        contacts: [{ profile: { name: "Soak" }, wa_id: from }],
        messages: [{ from, id: wamid, timestamp: seconds(Date.now()), type: "text", text: { body: text } }],
      });
      const shows = async () => {
        const res = await callApi(
          baseUrl,
          "GET",
          `/api/v1/messages?direction=inbound&from=${from}&limit=5`,
          tenantOf(phoneNumberId).checkKey,
        );
        if (res.status !== 200) return null;
        return (res.json?.data ?? []).some(
          (/** @type {{ upstreamMessageId?: string }} */ m) => m.upstreamMessageId === wamid,
        );
      };
      void deliver(payload, shows);
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
