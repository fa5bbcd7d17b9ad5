import { describe, expect, it } from "vitest";
import type { WebhookEvent, WebhookQueueMessage } from "../../../src/messages/events";
import { PACK_BYTES, PACK_EVENTS, packEvents, publishEventPacks } from "../../../src/lib/event-packs";
import { QUEUE_BUDGET, type QueueSender } from "../../../src/lib/queue-batches";

const event = (n: number, bodyChars = 10): WebhookEvent => ({
  id: `evt_${String(n).padStart(32, "0")}`,
  type: "webhook.test",
  workspaceId: "w",
  channelNumberId: "n",
  createdAt: "2026-11-24T00:00:00.000Z",
  data: { message: "x".repeat(bodyChars) },
});

/** A queue that records what it accepted and refuses what `refuse` says (the platform's binding is not reachable from a unit test). */
function recordingQueue(refuse: (body: WebhookQueueMessage) => boolean) {
  const accepted: WebhookQueueMessage[] = [];
  const take = (body: WebhookQueueMessage) => {
    if (refuse(body)) throw new Error("refused");
    accepted.push(body);
  };
  const queue: QueueSender = {
    send: async (body: WebhookQueueMessage) => take(body),
    sendBatch: async (items: Iterable<MessageSendRequest<WebhookQueueMessage>>) => {
      const list = [...items];
      if (list.some((i) => refuse(i.body))) throw new Error("refused");
      for (const i of list) take(i.body);
    },
  };
  return { queue, accepted };
}

const ids = (m: WebhookQueueMessage) => ("events" in m ? m.events : [m.event]).map((e) => Number(e.id.slice(4)));

describe("packEvents", () => {
  it("packs events in order, at most PACK_EVENTS to a pack", () => {
    const items = Array.from({ length: PACK_EVENTS * 2 + 3 }, (_, i) => ({ key: i, event: event(i) }));
    const { packs, oversize } = packEvents(items);
    expect(oversize).toEqual([]);
    expect(packs.map((p) => p.length)).toEqual([PACK_EVENTS, PACK_EVENTS, 3]);
    expect(packs.flat().map((p) => p.key)).toEqual(items.map((i) => i.key));
  });

  it("starts a new pack before PACK_BYTES is passed, and sets apart an event too large for any message", () => {
    const third = Math.floor(PACK_BYTES / 3);
    const items = [event(0, third), event(1, third), event(2, third), event(3, QUEUE_BUDGET.messageBytes)].map(
      (e, i) => ({ key: i, event: e }),
    );
    const { packs, oversize } = packEvents(items);
    expect(packs.map((p) => p.map((i) => i.key))).toEqual([[0, 1], [2]]);
    expect(oversize.map((o) => o.key)).toEqual([3]);
  });
});

describe("publishEventPacks", () => {
  it("sends each pack as one message and reports every key sent", async () => {
    const { queue, accepted } = recordingQueue(() => false);
    const sent: number[] = [];
    await publishEventPacks(
      queue,
      Array.from({ length: PACK_EVENTS + 1 }, (_, i) => ({ key: i, event: event(i) })),
      {
        sent: (keys) => sent.push(...keys),
        setAside: () => {
          throw new Error("nothing is set aside");
        },
      },
    );
    expect(accepted.map(ids)).toEqual([Array.from({ length: PACK_EVENTS }, (_, i) => i), [PACK_EVENTS]]);
    expect(sent).toEqual(Array.from({ length: PACK_EVENTS + 1 }, (_, i) => i));
  });

  it("a pack refused because of one poison event: its neighbours go one by one, only the poison is set aside", async () => {
    const { queue, accepted } = recordingQueue((body) => ids(body).includes(1));
    const sent: number[] = [];
    const setAside: number[] = [];
    await publishEventPacks(
      queue,
      [0, 1, 2].map((i) => ({ key: i, event: event(i) })),
      { sent: (k) => sent.push(...k), setAside: (k) => setAside.push(k) },
    );
    expect(setAside).toEqual([1]);
    expect(sent.sort()).toEqual([0, 2]);
    expect(accepted.flatMap(ids).sort()).toEqual([0, 2]);
  });

  it("a failing queue throws and reports nothing sent", async () => {
    const { queue } = recordingQueue(() => true);
    const sent: number[] = [];
    await expect(
      publishEventPacks(
        queue,
        [0, 1].map((i) => ({ key: i, event: event(i) })),
        { sent: (k) => sent.push(...k), setAside: () => undefined },
      ),
    ).rejects.toThrow("refused");
    expect(sent).toEqual([]);
  });
});
