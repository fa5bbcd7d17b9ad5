import { publishInOrder, queuedBytes, QUEUE_BUDGET, type PublishHooks, type QueueSender } from "./queue-batches";

/**
 * Queues bill each write, read and delete per 64 KB of message: a pack of
 * events up to this size costs what one event costs. Kept under 64 KB with a
 * margin for the platform's envelope.
 */
export const PACK_BYTES = 60 * 1024;
/**
 * At most this many events per message, so that one consumer invocation (10
 * messages) has bounded work: its deliveries to one endpoint run one after
 * another, and an endpoint that fails stops being tried for the rest of it.
 */
export const PACK_EVENTS = 50;

export interface KeyedEvent<K, E> {
  key: K;
  event: E;
}

/** A queue message of events, as the consumer reads it: the events of a pack, in order. */
export interface EventPack<E> {
  events: E[];
}

/** Groups events, in order, into packs within PACK_BYTES and PACK_EVENTS; an event too large for a message of its own is returned apart. */
export function packEvents<K, E>(
  items: readonly KeyedEvent<K, E>[],
  packBytes = PACK_BYTES,
  packEvents = PACK_EVENTS,
): { packs: KeyedEvent<K, E>[][]; oversize: { key: K; bytes: number }[] } {
  const packs: KeyedEvent<K, E>[][] = [];
  const oversize: { key: K; bytes: number }[] = [];
  let current: KeyedEvent<K, E>[] = [];
  let currentBytes = 0;
  for (const item of items) {
    const bytes = queuedBytes(item.event);
    if (queuedBytes({ events: [item.event] } satisfies EventPack<E>) > QUEUE_BUDGET.messageBytes) {
      oversize.push({ key: item.key, bytes });
      continue;
    }
    if (current.length > 0 && (current.length >= packEvents || currentBytes + bytes > packBytes)) {
      packs.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(item);
    currentBytes += bytes;
  }
  if (current.length > 0) packs.push(current);
  return { packs, oversize };
}

/**
 * Publishes events in order, packed several to a queue message, one message
 * per send (a send is billed per message either way). A pack the queue refuses
 * is published again event by event, so that only a poison event is ever set
 * aside, never its neighbours; when the queue refuses those too, it is failing
 * and this throws (the caller's step backs off and starts again from the first
 * event not yet published).
 */
export async function publishEventPacks<K, E>(
  queue: QueueSender,
  items: readonly KeyedEvent<K, E>[],
  hooks: PublishHooks<K>,
): Promise<void> {
  const { packs, oversize } = packEvents(items);
  for (const o of oversize)
    hooks.setAside(
      o.key,
      `${o.bytes} bytes is more than one queue message can carry (${QUEUE_BUDGET.messageBytes} bytes)`,
    );
  for (let i = 0; i < packs.length; i++) {
    const pack = packs[i]!;
    try {
      await queue.send({ events: pack.map((p) => p.event) } satisfies EventPack<E>, { contentType: "json" });
      hooks.sent(pack.map((p) => p.key));
    } catch {
      // One by one for the rest of this round: publishInOrder tells a poison event (refused
      // alone while its neighbour goes through) from a failing queue (it throws).
      const rest = packs.slice(i).flat();
      await publishInOrder(
        queue,
        rest.map((p) => ({ key: p.key, body: { events: [p.event] } satisfies EventPack<E> })),
        hooks,
      );
      return;
    }
  }
}
