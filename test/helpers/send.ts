import { api, json } from "./http";

export interface SendBody {
  channelNumberId?: unknown;
  to?: unknown;
  type?: unknown;
  text?: unknown;
  [extra: string]: unknown;
}

export const textMessage = (channelNumberId: string, body = "Hello", to = "5511999998888"): SendBody => ({
  channelNumberId,
  to,
  text: { body },
});

export function send(
  key: string,
  idempotencyKey: string | null,
  body: unknown,
  init: RequestInit = {},
): Promise<Response> {
  const headers = new Headers(init.headers);
  if (idempotencyKey !== null) headers.set("Idempotency-Key", idempotencyKey);
  return api("/messages", key, { method: "POST", ...init, headers, json: body });
}

/** Moves the shared clock (Date) seen by the Worker and the Durable Objects. */
export const at = (iso: string): Date => new Date(iso);

/** Accepted sends of the current month, as GET /usage reports them. */
export async function usedMessages(key: string): Promise<number> {
  return (await json<{ messages: { used: number } }>(await api("/usage", key))).messages.used;
}
