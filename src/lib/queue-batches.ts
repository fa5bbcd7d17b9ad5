import { log } from "./log";

/**
 * Cloudflare Queues limits (queues/platform/limits): 128 KB per message, 256 KB
 * and 100 messages per `sendBatch`. Our budgets keep a margin under both, because
 * the platform adds its own envelope to each message.
 */
export const QUEUE_BUDGET = {
  messageBytes: 120 * 1024,
  batchBytes: 200 * 1024,
  batchMessages: 100,
} as const;

/** What publishing needs of a queue binding (narrow, so that a unit test can stand in for one). */
export interface QueueSender {
  send(body: unknown, options?: QueueSendOptions): Promise<unknown>;
  sendBatch(messages: Iterable<MessageSendRequest>, options?: QueueSendBatchOptions): Promise<unknown>;
}

export interface Outgoing<K> {
  key: K;
  body: unknown;
}

interface Sized<K> extends Outgoing<K> {
  bytes: number;
}

const encoder = new TextEncoder();

/** Bytes the body takes on the queue (sent as JSON). */
export const queuedBytes = (body: unknown): number => encoder.encode(JSON.stringify(body)).byteLength;

/** Splits items, in order, into batches within the byte and count budgets; items too large to ever send are returned apart. */
export function planBatches<K>(
  items: readonly Outgoing<K>[],
  budget = QUEUE_BUDGET,
): { batches: Sized<K>[][]; oversize: Sized<K>[] } {
  const batches: Sized<K>[][] = [];
  const oversize: Sized<K>[] = [];
  let current: Sized<K>[] = [];
  let currentBytes = 0;
  for (const item of items) {
    const sized = { ...item, bytes: queuedBytes(item.body) };
    if (sized.bytes > budget.messageBytes) {
      oversize.push(sized);
      continue;
    }
    if (
      current.length > 0 &&
      (current.length >= budget.batchMessages || currentBytes + sized.bytes > budget.batchBytes)
    ) {
      batches.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(sized);
    currentBytes += sized.bytes;
  }
  if (current.length > 0) batches.push(current);
  return { batches, oversize };
}

export interface PublishHooks<K> {
  /** Called right after the queue accepted these items (mark them published). */
  sent(keys: K[]): void;
  /** An item that can never be sent: too large, or refused alone while the queue accepts its neighbours. */
  setAside(key: K, reason: string): void;
}

/**
 * Publishes items in order within the queue's limits. A batch the queue refuses
 * is retried item by item: an item refused alone while the next one goes
 * through is poison and is set aside; when the next one is refused too, the
 * queue itself is failing and this throws (the caller's step backs off and
 * tries again later, from the first unpublished item).
 */
export async function publishInOrder<K>(
  queue: QueueSender,
  items: readonly Outgoing<K>[],
  hooks: PublishHooks<K>,
  budget = QUEUE_BUDGET,
): Promise<void> {
  const { batches, oversize } = planBatches(items, budget);
  for (const item of oversize) {
    hooks.setAside(
      item.key,
      `${item.bytes} bytes is more than the ${budget.messageBytes}-byte budget of one queue message`,
    );
  }
  for (let b = 0; b < batches.length; b++) {
    const batch = batches[b]!;
    try {
      await queue.sendBatch(batch.map((item) => ({ body: item.body, contentType: "json" as const })));
      hooks.sent(batch.map((item) => item.key));
      continue;
    } catch (err) {
      log("warn", "queue refused a batch; sending its items one by one", { items: batch.length, error: String(err) });
    }
    // One by one for the rest of this round: the batch's items, then the later batches'.
    const rest = batches.slice(b).flat();
    for (let i = 0; i < rest.length; i++) {
      const item = rest[i]!;
      try {
        await queue.send(item.body, { contentType: "json" });
        hooks.sent([item.key]);
        continue;
      } catch (err) {
        const next = rest[i + 1];
        if (!next) throw err;
        // The neighbour tells a poison item from a failing queue.
        await queue.send(next.body, { contentType: "json" });
        hooks.setAside(item.key, `the queue refused it alone while accepting the next item: ${String(err)}`);
        hooks.sent([next.key]);
        i++;
      }
    }
    return;
  }
}
