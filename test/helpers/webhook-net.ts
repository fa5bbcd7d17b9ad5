import { env } from "cloudflare:workers";
import { afterEach, beforeEach, expect } from "vitest";
import { answerAtEdge } from "./edge";

/** What a receiver saw: one outbound request of the Worker. */
export interface Seen {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  redirect: RequestInit["redirect"];
}

export type Receiver = (req: Seen, signal: AbortSignal | undefined) => Response | Promise<Response>;

/**
 * The network edge for webhook tests (./edge.ts): answers the DNS-over-HTTPS
 * resolver from `dns` and customer endpoints from `receivers` (keyed by exact
 * URL). Any other request is recorded in `unhandled` and fails with a network
 * error; tests assert it stays empty. `restore()` takes it off the edge.
 */
export function mockNetwork() {
  const dns = new Map<string, string[]>();
  const receivers = new Map<string, Receiver>();
  const seen: Seen[] = [];
  const dnsQueries: string[] = [];
  const unhandled: string[] = [];
  const resolver = new URL(env.DOH_RESOLVER_URL);

  const restore = answerAtEdge(async (input, init) => {
    const req = new Request(input, init);
    const url = new URL(req.url);
    if (url.origin === resolver.origin && url.pathname === resolver.pathname) {
      const name = url.searchParams.get("name") ?? "";
      const type = url.searchParams.get("type");
      dnsQueries.push(`${name} ${type}`);
      const addresses = dns.get(name);
      if (!addresses) {
        unhandled.push(`DNS ${name} ${type}`);
        throw new Error(`unexpected DNS query for ${name}`);
      }
      const wanted = addresses.filter((a) => (type === "AAAA" ? a.includes(":") : !a.includes(":")));
      const answer = wanted.map((data) => ({ name, type: type === "AAAA" ? 28 : 1, TTL: 60, data }));
      return Response.json({ Status: 0, Answer: answer }, { headers: { "content-type": "application/dns-json" } });
    }
    const receiver = receivers.get(req.url);
    if (!receiver) {
      unhandled.push(`${req.method} ${req.url}`);
      throw new Error(`unexpected request to ${req.url}`);
    }
    const record: Seen = {
      url: req.url,
      method: req.method,
      headers: Object.fromEntries(req.headers),
      body: await req.text(),
      redirect: init?.redirect,
    };
    seen.push(record);
    return receiver(record, init?.signal ?? undefined);
  });

  return { dns, receivers, seen, dnsQueries, unhandled, restore };
}

export type Network = ReturnType<typeof mockNetwork>;

/**
 * A mockNetwork() for each test of the file (or of the describe it is called in): set up before
 * the test, taken off the edge after it, and the test fails if the Worker asked it anything it did
 * not expect. What it returns reads the running test's network.
 */
export function mockNetworkPerTest(): Network {
  let current: Network | undefined;
  beforeEach(() => {
    current = mockNetwork();
  });
  afterEach(() => {
    const net = running();
    net.restore();
    expect(net.unhandled).toEqual([]);
  });
  const running = (): Network => {
    if (!current) throw new Error("mockNetworkPerTest: no test is running");
    return current;
  };
  return {
    get dns() {
      return running().dns;
    },
    get receivers() {
      return running().receivers;
    },
    get seen() {
      return running().seen;
    },
    get dnsQueries() {
      return running().dnsQueries;
    },
    get unhandled() {
      return running().unhandled;
    },
    restore: () => running().restore(),
  };
}

/** A receiver that answers with the given statuses in turn (the last one repeats). */
export function answers(...statuses: number[]): Receiver {
  let i = 0;
  return () => new Response(null, { status: statuses[Math.min(i++, statuses.length - 1)] });
}

/** A receiver that never answers: it only settles when the caller aborts. */
export const hangs: Receiver = (_req, signal) =>
  new Promise<Response>((_, reject) => {
    if (!signal) return; // never settles: the test would time out, which is the failure we want
    signal.addEventListener("abort", () => reject(signal.reason));
  });
