import { eventsOf, type WebhookQueueMessage } from "../../messages/events";
import type { QueueSender } from "../../lib/queue-batches";
import { log } from "../../lib/log";

/**
 * Local soak runs only (DEV_EVENT_TAP_URL): the queue as the publisher sees it, which tells `url`
 * the ids of the events each send carried once the queue accepted it. The soak tells apart, by
 * it, an event the engine never published from one the local in-memory queue lost when its process
 * was killed. Ids only (and an inbound message's operator id, which names it to the soak): no
 * content. Told once the queue accepted the send, and awaited before the send returns: the
 * publisher settles its owed list only after the tap heard, so an event whose obligation is gone
 * was heard (a kill in between leaves it owed, published again after the restart). Not awaited,
 * a loaded machine's slow tap made the soak count events the queue had taken as never published.
 * A tap that cannot be told is logged, never fails the send (the soak then over-counts, never
 * excuses).
 */
export function withEventTap(queue: QueueSender, url: string | undefined): QueueSender {
  if (url === undefined) return queue;
  const tell = async (bodies: unknown[]) => {
    const events = bodies.flatMap((b) => eventsOf(b as WebhookQueueMessage));
    const told = events.map((e) => ({
      id: e.id,
      upstreamMessageId: e.type === "message.received" ? e.data.upstreamMessageId : undefined,
    }));
    try {
      await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(told) });
    } catch (err) {
      log("warn", "event tap not told", { events: told.length, error: String(err) });
    }
  };
  return {
    async send(body, options) {
      const sent = await queue.send(body, options);
      await tell([body]);
      return sent;
    },
    async sendBatch(messages, options) {
      const list = [...messages];
      const sent = await queue.sendBatch(list, options);
      await tell(list.map((m) => m.body));
      return sent;
    },
  };
}
