// The customer's webhook endpoint of the soak and the benches (`/hooks/{numberId}`): verifies each
// delivery's signature with its number's secret, refuses a share with 503 (at most 3 times per event),
// records every delivery. Also the event tap (`POST /tap`, DEV_EVENT_TAP_URL): the ids of the events
// each queue send carried, which tell an event never published from one the in-memory queue lost.
import { createServer, type IncomingHttpHeaders } from "node:http";
import { Webhook } from "standardwebhooks";
import type { Random } from "./run.ts";

const MAX_REFUSALS_PER_EVENT = 3;

export interface WebhookBody {
  type?: string;
  data: Record<string, unknown> & { messageId?: string; upstreamMessageId?: string };
}
export interface Delivery {
  at: number;
  numberId: string;
  webhookId: string | null;
  verified: boolean;
  status: number;
  body: WebhookBody | null;
}
/** What the event tap heard: when the queue first accepted each event, and each inbound message's event by the operator's id. */
export interface Published {
  byEventId: Map<string, number>;
  receivedByWamid: Map<string, string>;
}

/** Whether a delivery's Standard Webhooks signature verifies with `secret`, as a customer would check it (the library). */
function verifies(secret: string | undefined, headers: IncomingHttpHeaders, rawBody: string) {
  try {
    return secret !== undefined && new Webhook(secret).verify(rawBody, headers as Record<string, string>) !== undefined;
  } catch {
    return false;
  }
}

/** On 127.0.0.1:`port`; `secrets` (numberId → whsec_…) filled in as webhooks are made; `random` decides refusals. */
export async function startReceiver(o: {
  port: number;
  secrets: Map<string, string>;
  failShare?: number;
  random?: Random;
  onDelivery?: (d: Delivery) => void;
}) {
  const deliveries: Delivery[] = [];
  const refusedSoFar = new Map<string | undefined, number>();
  const published: Published = { byEventId: new Map(), receivedByWamid: new Map() };
  let tapPosts = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const at = Date.now();
      const raw = Buffer.concat(chunks).toString("utf8");
      if (req.url === "/tap") {
        tapPosts++;
        try {
          for (const e of JSON.parse(raw) as Array<{ id?: unknown; upstreamMessageId?: unknown }>) {
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
      const verified = verifies(o.secrets.get(numberId), req.headers, raw);
      let body: WebhookBody | null = null;
      try {
        body = JSON.parse(raw);
      } catch {
        // recorded unparsed
      }
      // An unverified delivery is refused as a customer would. At most MAX_REFUSALS_PER_EVENT refusals:
      // the gateway gives an event 9 attempts, and independent 30% refusals would kill ~1 in 50,000.
      const webhookId = typeof req.headers["webhook-id"] === "string" ? req.headers["webhook-id"] : undefined;
      const refusals = refusedSoFar.get(webhookId) ?? 0;
      const refuse = () => refusals < MAX_REFUSALS_PER_EVENT && (o.random?.chance(o.failShare ?? 0) ?? false);
      const status = !verified ? 400 : refuse() ? 503 : 204;
      if (status === 503) refusedSoFar.set(webhookId, refusals + 1);
      const delivery = { at, numberId, webhookId: webhookId ?? null, verified, status, body };
      deliveries.push(delivery);
      res.writeHead(status).end();
      if (status === 204) o.onDelivery?.(delivery);
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, "127.0.0.1", () => resolve());
  });
  return {
    url: (numberId: string) => `http://127.0.0.1:${o.port}/hooks/${numberId}`,
    deliveries,
    published,
    tapPosts: () => tapPosts,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
