// The customer's webhook endpoint of `npm run soak`: verifies each delivery's Standard Webhooks
// signature with its number's secret, refuses a share of them with 503 (the gateway must retry;
// at most 3 times per event), and records every delivery with its `webhook-id`. Also the event
// tap (`POST /tap`, DEV_EVENT_TAP_URL): the ids of the events each accepted queue send carried,
// which tell an event the engine never published from one the in-memory queue lost at a kill.
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const MAX_REFUSALS_PER_EVENT = 3;

/**
 * Standard Webhooks: HMAC-SHA256 of `{id}.{timestamp}.{body}` keyed with the secret after `whsec_`.
 * @param {string} secret @param {import("node:http").IncomingHttpHeaders} headers @param {string} rawBody
 */
export function verifyStandardWebhook(secret, headers, rawBody) {
  const id = headers["webhook-id"];
  const ts = headers["webhook-timestamp"];
  const sigs = headers["webhook-signature"];
  if (typeof id !== "string" || typeof ts !== "string" || typeof sigs !== "string" || !/^[0-9]{1,12}$/.test(ts))
    return false;
  if (Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false;
  const expected = createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64"))
    .update(`${id}.${ts}.${rawBody}`)
    .digest();
  return sigs.split(" ").some((entry) => {
    const [version, sig] = entry.split(",");
    const given = Buffer.from(sig ?? "", "base64");
    return version === "v1" && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/**
 * Listens on 127.0.0.1:`port`; a number's webhook URL is `/hooks/{numberId}`. `secrets` (numberId →
 * whsec_…) is filled in after the webhooks are created. `random` decides the refusals.
 * @param {{ port: number, failShare: number, random: import("./soak-random.mjs").Random, secrets: Map<string, string> }} options
 */
export async function startReceiver({ port, failShare, random, secrets }) {
  /** Every delivery: what came, and what we answered. @type {import("./soak-checks.mjs").Delivery[]} */
  const deliveries = [];
  /** @type {Map<string | undefined, number>} */
  const refusedSoFar = new Map();
  /** What the event tap heard, first time each. @type {import("./soak-checks.mjs").Published} */
  const published = { byEventId: new Map(), receivedByWamid: new Map() };
  let tapPosts = 0;
  const server = createServer((req, res) => {
    /** @type {Buffer[]} */
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      if (req.url === "/tap") {
        tapPosts++;
        const at = Date.now();
        try {
          for (const e of JSON.parse(raw)) {
            if (typeof e?.id !== "string") continue;
            if (!published.byEventId.has(e.id)) published.byEventId.set(e.id, at);
            if (typeof e.upstreamMessageId === "string") published.receivedByWamid.set(e.upstreamMessageId, e.id);
          }
        } catch {
          // not a tap's body: nothing heard
        }
        res.writeHead(204).end();
        return;
      }
      const numberId = (req.url ?? "").split("/")[2] ?? "";
      const secret = secrets.get(numberId);
      const verified = secret !== undefined && verifyStandardWebhook(secret, req.headers, raw);
      let body = null;
      try {
        body = JSON.parse(raw);
      } catch {
        // recorded unparsed
      }
      // A delivery we cannot verify is refused like a real customer would; it counts as a failure below.
      // At most MAX_REFUSALS_PER_EVENT refusals per event: the gateway gives an event 9 attempts, then
      // it is dead (replayable from the delivery log). Independent 30% refusals would kill ~1 event in
      // 50,000 (0.3^9) by design; that path is not what this run checks.
      const webhookId = typeof req.headers["webhook-id"] === "string" ? req.headers["webhook-id"] : undefined;
      const refusals = refusedSoFar.get(webhookId) ?? 0;
      const status = !verified ? 400 : refusals < MAX_REFUSALS_PER_EVENT && random.chance(failShare) ? 503 : 204;
      if (status === 503) refusedSoFar.set(webhookId, refusals + 1);
      deliveries.push({ at: Date.now(), numberId, webhookId: webhookId ?? null, verified, status, body });
      res.writeHead(status).end();
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(undefined));
  });
  return {
    deliveries,
    published,
    tapPosts: () => tapPosts,
    /** @returns {Promise<void>} */
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
