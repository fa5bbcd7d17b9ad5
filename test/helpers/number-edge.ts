import { vi } from "vitest";
import { api, json } from "./http";
import { liveNumberTenant, operatorMessagesUrl, type OperatorCall } from "./operator";
import { answers, mockNetwork, type Network } from "./webhook-net";

type Reply = (call: OperatorCall, index: number) => Response | Promise<Response>;

/** One webhook delivery as the customer's receiver got it: the event id (`webhook-id`) and the envelope. */
export interface DeliveredEvent {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/**
 * The network edge of a number's tests: the operator's API (its calls, answered by `reply`)
 * and the customer's webhook receiver, both behind one fetch spy (webhook-net.ts: any other
 * request is recorded in `net.unhandled` and fails). `operator(phoneNumberId)` answers that number's
 * calls; `webhook(key, numberId)` configures a webhook for the number and returns what it received.
 */
export function mockEdge(reply: Reply) {
  const net: Network = mockNetwork();
  const calls: OperatorCall[] = [];
  return {
    net,
    calls,
    /** Routes the operator's messages endpoint of one number to `reply`. */
    operator(phoneNumberId: string): void {
      net.receivers.set(operatorMessagesUrl(phoneNumberId), (seen) => {
        const call: OperatorCall = {
          at: Date.now(),
          url: seen.url,
          auth: seen.headers.authorization ?? null,
          body: JSON.parse(seen.body) as OperatorCall["body"],
        };
        calls.push(call);
        return reply(call, calls.length - 1);
      });
    },
    webhook: (key: string, numberId: string) => customerWebhook(net, key, numberId),
  };
}

/**
 * A live number of a fresh pro workspace, whose operator answers `reply`, with a
 * webhook of the customer's that records what it gets (`hook`).
 */
export async function liveNumberOnEdge(reply: Reply) {
  const edge = mockEdge(reply);
  const t = await liveNumberTenant();
  edge.operator(t.phoneNumberId);
  const hook = await edge.webhook(t.key, t.numberId);
  return { ...t, calls: edge.calls, hook, net: edge.net };
}

/** A webhook of the number, through the API, whose receiver answers 204 and records what it got. */
export async function customerWebhook(net: Network, key: string, numberId: string) {
  const host = `hook-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
  net.dns.set(host, ["93.184.216.34"]);
  const url = `https://${host}/hook`;
  net.receivers.set(url, answers(204));
  const res = await api("/webhooks", key, { method: "POST", json: { channelNumberId: numberId, url } });
  if (res.status !== 201) throw new Error(`webhook: ${res.status} ${await res.text()}`);
  const { id: webhookId } = await json<{ id: string }>(res);

  const events = (): DeliveredEvent[] =>
    net.seen
      .filter((s) => s.url === url)
      .map((s) => ({ id: s.headers["webhook-id"]!, ...(JSON.parse(s.body) as Omit<DeliveredEvent, "id">) }));
  /** The `message.status` changes delivered about one message, as [previousStatus, status], in arrival order. */
  const statusChanges = (messageId: string): [unknown, unknown][] =>
    events()
      .filter((e) => e.type === "message.status" && e.data.messageId === messageId)
      .map((e) => [e.data.previousStatus, e.data.status]);
  return {
    webhookId,
    url,
    events,
    statusChanges,
    /** Waits until the receiver got a `message.status` event of `messageId` with `status`; returns it. */
    async waitForStatus(messageId: string, status: string): Promise<DeliveredEvent> {
      return vi.waitFor(
        () => {
          const e = events().find(
            (x) => x.type === "message.status" && x.data.messageId === messageId && x.data.status === status,
          );
          if (!e) throw new Error(`no ${status} event of ${messageId} delivered yet`);
          return e;
        },
        { timeout: 15_000, interval: 50 },
      );
    },
    /**
     * A positive signal before asserting that nothing more came: a test event published now is
     * delivered (the queue carries what was published before it no later, within its batch window).
     */
    async settled(): Promise<void> {
      const { eventId } = await json<{ eventId: string }>(
        await api(`/webhooks/${webhookId}/test`, key, { method: "POST" }),
      );
      await vi.waitFor(
        () => {
          if (!events().some((e) => e.id === eventId)) throw new Error("the marker event was not delivered yet");
        },
        { timeout: 15_000, interval: 50 },
      );
    },
  };
}

export type CustomerWebhook = Awaited<ReturnType<typeof customerWebhook>>;
