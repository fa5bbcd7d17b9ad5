import { runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, expectError, json } from "../helpers/http";
import { connectSandboxNumber, createTenant, type Tenant } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { eventOfMessage } from "../helpers/events";
import { testNumber } from "../helpers/objects";
import { answers, mockNetworkPerTest, type Seen } from "../helpers/webhook-net";
import { eventIdOf, newEventId } from "../../src/messages/events";
import { KEEP_DELIVERIES_MS } from "../../src/durable-objects/workspace/delivery-log";
import { newUuidV7 } from "../../src/lib/job-id";
import { fakeClockPerTest } from "../helpers/clock";

// Events are not stored: a replay rebuilds the event from its id (which names its message and its
// change, or dates a test event) and the record, and publishes it again through the real queue.

const clock = fakeClockPerTest(Date.UTC(2051, 8, 1, 9), (t) => t + 7 * 24 * 3_600_000);
const net = mockNetworkPerTest();
afterEach(() => vi.restoreAllMocks());

/** A webhook to a receiver that answers 204, for the tenant's number (or another of its numbers). */
async function webhookOf(t: Tenant, numberId = t.numberId) {
  const host = `replay-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
  net.dns.set(host, ["93.184.216.34"]);
  const url = `https://${host}/hook`;
  net.receivers.set(url, answers(204));
  const res = await api("/webhooks", t.key, { method: "POST", json: { channelNumberId: numberId, url } });
  expect(res.status).toBe(201);
  const { id } = await json<{ id: string }>(res);
  return { id, seen: (): Seen[] => net.seen.filter((s) => s.url === url) };
}

const replay = (t: Tenant, webhookId: string, eventId: string) =>
  api(`/webhooks/${webhookId}/deliveries/${eventId}/replay`, t.key, { method: "POST" });

/** Waits until the receiver got `n` requests, and returns them. */
async function receivedAt(hook: { seen: () => Seen[] }, n: number): Promise<Seen[]> {
  await vi.waitFor(() => expect(hook.seen()).toHaveLength(n), { timeout: 15_000, interval: 50 });
  return hook.seen();
}

describe("replays", () => {
  it("a message's event is rebuilt from its id: the same id and the same content, as of its change", async () => {
    const t = await createTenant();
    const hook = await webhookOf(t);
    const { jobId } = await json<{ jobId: string }>(
      await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Your order shipped")),
    );
    await runDurableObjectAlarm(testNumber(t.numberId));
    const first = await receivedAt(hook, 2); // processing, sent
    const sentId = eventIdOf(jobId, "sent");
    const original = first.find((s) => s.headers["webhook-id"] === sentId)!;
    expect(original).toBeDefined();

    // Later changes of the record (the sandbox reports delivery and read) do not change the sent event.
    clock.advance(10_000);
    await runDurableObjectAlarm(testNumber(t.numberId));
    await receivedAt(hook, 4);
    expect(await json(await api(`/messages/${jobId}`, t.key))).toMatchObject({ readAt: expect.any(String) });

    const res = await replay(t, hook.id, sentId);
    expect(res.status).toBe(202);
    expect(await json(res)).toEqual({ eventId: sentId, status: "queued" });
    const replayed = (await receivedAt(hook, 5))[4]!;
    expect(replayed.headers["webhook-id"]).toBe(sentId);
    expect(replayed.body).toBe(original.body);
    expect(JSON.parse(replayed.body)).toMatchObject({
      type: "message.status",
      data: { messageId: jobId, status: "sent", deliveredAt: null, readAt: null },
    });
    expect((await eventOfMessage(t.workspaceId, jobId, "sent")).id).toBe(sentId);
  });

  it("a test event is replayable by its id for the delivery log's 3 days, then no more", async () => {
    const t = await createTenant();
    const hook = await webhookOf(t);
    const { eventId } = await json<{ eventId: string }>(
      await api(`/webhooks/${hook.id}/test`, t.key, { method: "POST" }),
    );
    const [original] = await receivedAt(hook, 1);
    expect(original!.headers["webhook-id"]).toBe(eventId);

    const sent = clock.now();
    clock.set(sent + KEEP_DELIVERIES_MS - 60_000);
    expect((await replay(t, hook.id, eventId)).status).toBe(202);
    const replayed = (await receivedAt(hook, 2))[1]!;
    expect(replayed.headers["webhook-id"]).toBe(eventId);
    expect(replayed.body).toBe(original!.body);

    clock.set(sent + KEEP_DELIVERIES_MS + 60_000);
    await expectError(await replay(t, hook.id, eventId), 404, "not_found");
    // A test event's id dated in the future names nothing either.
    await expectError(await replay(t, hook.id, newEventId(sent + 3_600_000 + KEEP_DELIVERIES_MS)), 404, "not_found");
  });

  it("an unknown event id, a change the message never had, and another number's event are 404, and nothing is sent", async () => {
    const t = await createTenant();
    const hook = await webhookOf(t);
    const otherNumber = await connectSandboxNumber(t.workspaceId, "15550004001");
    const otherHook = await webhookOf(t, otherNumber);
    const other = await createTenant();
    const { jobId } = await json<{ jobId: string }>(
      await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "hello")),
    );
    const { jobId: foreign } = await json<{ jobId: string }>(
      await send(other.key, crypto.randomUUID(), textMessage(other.numberId, "elsewhere")),
    );
    await runDurableObjectAlarm(testNumber(t.numberId));
    await runDurableObjectAlarm(testNumber(other.numberId));
    await receivedAt(hook, 2);

    for (const [webhookId, eventId] of [
      [hook.id, eventIdOf(newUuidV7(clock.now()), "sent")], // no such message
      [hook.id, eventIdOf(jobId, "read")], // not read (yet)
      [hook.id, eventIdOf(jobId, "failed")], // never failed
      [otherHook.id, eventIdOf(jobId, "sent")], // another number's event, in the same workspace
      [hook.id, eventIdOf(foreign, "sent")], // another workspace's message
      [hook.id, "evt_not-an-event-id"],
    ] as const) {
      await expectError(await replay(t, webhookId, eventId), 404, "not_found");
    }
    // A positive signal that replays are delivered: the real one arrives; nothing else came.
    expect((await replay(t, hook.id, eventIdOf(jobId, "sent"))).status).toBe(202);
    const seen = await receivedAt(hook, 3);
    expect(seen[2]!.headers["webhook-id"]).toBe(eventIdOf(jobId, "sent"));
    expect(otherHook.seen()).toEqual([]);
  });
});
