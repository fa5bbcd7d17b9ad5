import { inject } from "vitest";
import { MessagingClient, type ClientOptions } from "../../src/index.js";

export const baseUrl = inject("baseUrl");

async function admin<T>(path: string, body: unknown): Promise<T> {
  const res = await fetch(`${baseUrl}/admin/v1${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${inject("adminToken")}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`admin ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

let displayNumber = 15550100000;
const TEST_CONTACTS = ["5511999998888", "5511000000001", "5511000000002"];

export interface Tenant {
  workspaceId: string;
  apiKey: string;
  numberId: string;
  client: (options?: Partial<ClientOptions>) => MessagingClient;
  addNumber: () => Promise<string>;
}

/** A fresh workspace with an API key and one sandbox number, created through the admin API. */
export async function createTenant(): Promise<Tenant> {
  const workspace = await admin<{ id: string }>("/workspaces", { name: "SDK test", plan: "pro" });
  const key = await admin<{ key: string }>(`/workspaces/${workspace.id}/api-keys`, { name: "sdk" });
  const addNumber = async () => {
    const id = (
      await admin<{ id: string }>(`/workspaces/${workspace.id}/channel-numbers`, {
        displayPhoneNumber: String(displayNumber++),
        upstream: { type: "sandbox" },
      })
    ).id;
    // The sandbox holds sends to the 24-hour window, as the operator does: the suites' recipients are test contacts.
    for (const phone of TEST_CONTACTS) {
      const res = await fetch(`${baseUrl}/api/v1/sandbox/test-contacts`, {
        method: "POST",
        headers: { Authorization: `Bearer ${key.key}`, "Content-Type": "application/json" },
        body: JSON.stringify({ channelNumberId: id, phone }),
      });
      if (res.status !== 201) throw new Error(`test contact ${phone}: ${res.status} ${await res.text()}`);
    }
    return id;
  };
  const numberId = await addNumber();
  return {
    workspaceId: workspace.id,
    apiKey: key.key,
    numberId,
    client: (options = {}) => new MessagingClient({ apiKey: key.key, baseUrl, ...options }),
    addNumber,
  };
}

export interface Seen {
  method: string;
  url: string;
  idempotencyKey: string | null;
  status: number | "network error";
  at: number;
}

/**
 * A fetch for the client that records every request it passes to the real network;
 * `dropResponse(n)` makes it lose the answer of the n-th request after the server handled
 * it (a network failure on the way back).
 */
export function recordingFetch(options: { dropResponse?: (index: number, request: Request) => boolean } = {}) {
  const seen: Seen[] = [];
  const doFetch = async (request: Request): Promise<Response> => {
    const index = seen.length;
    const entry: Seen = {
      method: request.method,
      url: request.url,
      idempotencyKey: request.headers.get("idempotency-key"),
      status: "network error",
      at: Date.now(),
    };
    seen.push(entry);
    const response = await fetch(request);
    if (options.dropResponse?.(index, request)) {
      await response.arrayBuffer();
      throw new TypeError("fetch failed: the connection was reset (simulated)");
    }
    entry.status = response.status;
    return response;
  };
  return { fetch: doFetch, seen };
}
