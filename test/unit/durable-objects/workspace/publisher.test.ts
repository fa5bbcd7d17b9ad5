import { afterEach, describe, expect, it, vi } from "vitest";
import { eventsOf, type WebhookEvent, type WebhookQueueMessage } from "../../../../src/domain/events";
import type { QueueSender } from "../../../../src/lib/queue-publisher";
import { EventPublisher } from "../../../../src/durable-objects/workspace/publisher";
import { fakeClockPerTest } from "../../../helpers/clock";

// The publisher's clock is the object's (lib/clock.ts: Date.now), which the test moves.
const T = Date.UTC(2032, 0, 2, 3, 4, 5);
const clock = fakeClockPerTest(T, () => T);
afterEach(() => {
  vi.restoreAllMocks();
});
const at = (ms: number) => clock.set(T + ms);

let seq = 0;
const event = (): WebhookEvent => ({
  id: `evt_${(++seq).toString(16).padStart(32, "0")}`,
  type: "webhook.test",
  workspaceId: "w",
  channelNumberId: "n",
  createdAt: new Date(T).toISOString(),
  data: { message: `event ${seq}` },
});

/**
 * A queue that records each message it accepted (the events it carried, in order), and refuses
 * everything while `down` is set. `log` interleaves what it accepted with what the test notes.
 */
function fakeQueue() {
  const q = {
    down: false,
    messages: [] as string[][],
    log: [] as string[],
  };
  const take = (body: unknown) => {
    if (q.down) throw new Error("queue unavailable");
    const ids = eventsOf(body as WebhookQueueMessage).map((e) => e.id);
    q.messages.push(ids);
    q.log.push(`queued ${ids.join(",")}`);
  };
  const queue: QueueSender = {
    send: async (body) => take(body),
    sendBatch: async (items) => {
      const list = [...items];
      if (q.down) throw new Error("queue unavailable");
      for (const i of list) take(i.body);
    },
  };
  return { q, queue };
}

/** A publisher with the object's alarm recorded (`wakes`). */
function publisher(delayMs: number) {
  const { q, queue } = fakeQueue();
  const wakes: number[] = [];
  const p = new EventPublisher(queue, delayMs, async (t) => void wakes.push(t));
  return { p, q, wakes };
}

/** Lets the promises of a flush settle (the fake queue answers at once). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("packing on the object's clock", () => {
  it("events of changes within the delay leave together, in order, once the first is due", async () => {
    const { p, q, wakes } = publisher(1_000);
    const [a, b, c] = [event(), event(), event()];
    p.add([a]);
    // The object's alarm is set for when the first change is due.
    expect(wakes).toEqual([T + 1_000]);
    expect(p.due()).toBe(T + 1_000);
    at(400);
    p.add([b, c]);
    p.tick();
    at(999);
    p.tick();
    await settle();
    expect(q.messages).toEqual([]);
    at(1_000);
    p.tick();
    await settle();
    expect(q.messages).toEqual([[a.id, b.id, c.id]]);
    expect(p.due()).toBeNull();
    // One alarm per pack.
    expect(wakes).toEqual([T + 1_000]);
  });

  it("after a quiet spell the next change is due its delay after it, not after anything earlier", async () => {
    const { p, q, wakes } = publisher(1_000);
    p.add([event()]);
    at(1_000);
    p.tick();
    await settle();
    at(86_400_000);
    const late = event();
    p.add([late]);
    expect(p.due()).toBe(T + 86_400_000 + 1_000);
    expect(wakes.at(-1)).toBe(T + 86_400_000 + 1_000);
    at(86_400_000 + 1_000);
    p.tick();
    await settle();
    expect(q.messages.at(-1)).toEqual([late.id]);
  });

  it("with no delay, each commit's events leave at once", async () => {
    const { p, q, wakes } = publisher(0);
    const a = event();
    await p.awaitFlushed(p.add([a]));
    expect(q.messages).toEqual([[a.id]]);
    expect(wakes).toEqual([]);
  });
});

describe("tickets", () => {
  it("resolve true once their events left, not before", async () => {
    const { p, q } = publisher(1_000);
    const ticket = p.add([event()]);
    const flushed = p.awaitFlushed(ticket).then((ok) => q.log.push(`flushed ${ok}`));
    at(1_000);
    p.tick();
    await flushed;
    expect(q.log).toEqual([`queued ${q.messages[0]![0]}`, "flushed true"]);
  });

  it("resolve false for a ticket of another instance (a restart lost what it held)", async () => {
    const first = publisher(0);
    const ticket = first.p.add([event()]);
    expect(await first.p.awaitFlushed(ticket)).toBe(true);
    const restarted = publisher(0);
    expect(await restarted.p.awaitFlushed(ticket)).toBe(false);
  });

  it("of a commit with nothing new to publish resolve at once", async () => {
    const { p, q } = publisher(0);
    const a = event();
    await p.awaitFlushed(p.add([a]));
    expect(await p.awaitFlushed(p.add([]))).toBe(true);
    expect(await p.awaitFlushed(p.add([a]))).toBe(true);
    expect(q.messages).toEqual([[a.id]]);
  });
});

describe("a queue that refuses", () => {
  it("keeps the events pending, in order ahead of later ones, and publishes them after its back-off", async () => {
    const { p, q, wakes } = publisher(0);
    q.down = true;
    const a = event();
    const ticket = p.add([a]);
    const flushed = p.awaitFlushed(ticket).then((ok) => q.log.push(`flushed ${ok}`));
    await settle();
    expect(q.messages).toEqual([]);
    // Tried again a second later: the object's alarm is set for it.
    expect(p.due()).toBe(T + 1_000);
    expect(wakes).toEqual([T + 1_000]);
    q.down = false;
    const b = event();
    p.add([b]);
    at(999);
    p.tick();
    await settle();
    expect(q.messages).toEqual([]);
    at(1_000);
    p.tick();
    await flushed;
    expect(q.messages).toEqual([[a.id, b.id]]);
    expect(q.log.at(-1)).toBe("flushed true");
  });

  it("backs off longer after each failure, and flushNow throws while it refuses", async () => {
    const { p, q } = publisher(0);
    q.down = true;
    p.add([event()]);
    await settle();
    expect(p.due()).toBe(T + 1_000);
    at(1_000);
    await expect(p.flushNow()).rejects.toThrow(/could not be queued/);
    expect(p.due()).toBe(T + 1_000 + 2_000);
    q.down = false;
    await p.flushNow();
    expect(q.messages).toHaveLength(1);
    expect(p.due()).toBeNull();
  });
});

describe("each event once per instance", () => {
  it("an event published by this instance is not published again; another instance publishes it", async () => {
    const { p, q } = publisher(0);
    const a = event();
    await p.awaitFlushed(p.add([a]));
    expect(p.known(a.id)).toBe(true);
    await p.awaitFlushed(p.add([a, event()]));
    expect(q.messages.flat().filter((id) => id === a.id)).toHaveLength(1);

    const restarted = publisher(0);
    expect(restarted.p.known(a.id)).toBe(false);
    await restarted.p.awaitFlushed(restarted.p.add([a]));
    expect(restarted.q.messages).toEqual([[a.id]]);
  });

  it("an event added again while it waits, or while its flush is under way, leaves once", async () => {
    const waiting = publisher(1_000);
    const a = event();
    waiting.p.add([a]);
    waiting.p.add([a]);
    at(1_000);
    waiting.p.tick();
    await settle();
    expect(waiting.q.messages).toEqual([[a.id]]);

    // The queue answers later: the event is in flight when it is added again.
    const { q, queue } = fakeQueue();
    let release!: () => void;
    const slow: QueueSender = {
      send: async (body, options) => {
        await new Promise<void>((resolve) => (release = resolve));
        return queue.send(body, options);
      },
      sendBatch: (items, options) => queue.sendBatch(items, options),
    };
    const p = new EventPublisher(slow, 0, async () => undefined);
    const b = event();
    const first = p.awaitFlushed(p.add([b]));
    await settle();
    const second = p.awaitFlushed(p.add([b]));
    release();
    expect(await first).toBe(true);
    expect(await second).toBe(true);
    expect(q.messages).toEqual([[b.id]]);
  });
});
