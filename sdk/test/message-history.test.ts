import { afterAll, beforeAll, describe, expect, expectTypeOf, it, vi } from "vitest";
import {
  ApiError,
  type InboundMessage,
  type Message,
  type MessageTimelineEntry,
  type OutboundMessage,
} from "../src/index.js";
import { startReceiver } from "./helpers/receiver.js";
import { createTenant, recordingFetch, type Tenant } from "./helpers/tenant.js";

// The message history through the SDK, against the real Worker: GET /messages with its
// filters and cursors, GET /messages/{id}/events, GET /message-archives.
// (Pages that come back short while more exist need more rows than this suite should create
// over HTTP: test/api/sdk-in-workers.test.ts covers them with the SDK inside workerd.)

let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  receiver = await startReceiver(Number(process.env.SDK_TEST_RECEIVER_PORT ?? 8801) + 2);
});
afterAll(() => receiver.close());

const CONTACT = "5511977776666";
const OTHER_CONTACT = "5511955554444";

/**
 * The time the list orders by and `createdAfter`/`createdBefore` compare (docs/customers/api.md): an inbound
 * message's `receivedAt` (the operator's time, in its id), which can be a few milliseconds before
 * the `createdAt` of its record; a send's `createdAt`.
 */
const listedAt = (m: Message): string => (m.direction === "inbound" ? m.receivedAt : m.createdAt);

/** Two sandbox numbers with three sends and three inbound messages between them; returns the records, newest first. */
async function history(t: Tenant) {
  const client = t.client();
  const b = await t.addNumber();
  const ids: string[] = [];
  const send = async (channelNumberId: string, to: string, body: string) =>
    ids.push((await client.messages.send({ channelNumberId, to, text: { body } })).jobId);
  const inbound = async (channelNumberId: string, from: string, body: string) =>
    ids.push((await client.sandbox.injectInbound({ channelNumberId, from, text: { body } })).messageId);
  await send(t.numberId, "5511000000001", "a1");
  await inbound(t.numberId, CONTACT, "hi a");
  await send(b, "5511000000001", "b1");
  await inbound(b, CONTACT, "hi b");
  await send(t.numberId, "5511000000002", "a2");
  await inbound(t.numberId, OTHER_CONTACT, "hello a");
  const records = await Promise.all(ids.map((id) => client.messages.get(id)));
  // The list's order: newest first by listedAt, ties broken by id (descending).
  const newestFirst = [...records].sort((x, y) =>
    listedAt(x) === listedAt(y) ? (x.id < y.id ? 1 : -1) : listedAt(x) < listedAt(y) ? 1 : -1,
  );
  return { a: t.numberId, b, records: newestFirst };
}

const idsOf = (messages: Message[]) => messages.map((m) => m.id);

describe("client.messages.list", () => {
  it("walks every page, newest first, following nextCursor", async () => {
    const t = await createTenant();
    const { records } = await history(t);
    const net = recordingFetch();
    const client = t.client({ fetch: net.fetch });

    const pages = [];
    for await (const page of client.messages.list({ limit: 2 }).pages()) pages.push(idsOf(page.data));
    expect(pages).toEqual([idsOf(records.slice(0, 2)), idsOf(records.slice(2, 4)), idsOf(records.slice(4, 6))]);
    const requests = net.seen.map((s) => new URL(s.url));
    expect(requests.map((u) => u.pathname)).toEqual(["/api/v1/messages", "/api/v1/messages", "/api/v1/messages"]);
    expect(requests[0]!.searchParams.get("cursor")).toBeNull();
    expect(requests.slice(1).every((u) => u.searchParams.get("cursor") && u.searchParams.get("limit") === "2")).toBe(
      true,
    );

    // The records as GET /messages/{id} shows them, and for await gives the same sequence.
    const all: Message[] = [];
    for await (const m of client.messages.list({ limit: 4 })) all.push(m);
    expect(all).toEqual(records);
  });

  it("applies every filter on every page", async () => {
    const t = await createTenant();
    const { a, b, records } = await history(t);
    const client = t.client();
    const list = async (params: Parameters<typeof client.messages.list>[0]) =>
      idsOf(await client.messages.list({ limit: 1, ...params }).toArray());
    const expected = (keep: (m: Message) => boolean) => idsOf(records.filter(keep));

    expect(await list({ direction: "outbound" })).toEqual(expected((m) => m.direction === "outbound"));
    expect(await list({ direction: "inbound", channelNumberId: a })).toEqual(
      expected((m) => m.direction === "inbound" && m.channelNumberId === a),
    );
    expect(await list({ status: "received", channelNumberId: b })).toEqual(
      expected((m) => m.status === "received" && m.channelNumberId === b),
    );
    expect(await list({ to: "5511000000001" })).toEqual(
      expected((m) => m.direction === "outbound" && m.to === "5511000000001"),
    );
    expect(await list({ from: CONTACT })).toEqual(expected((m) => m.direction === "inbound" && m.from === CONTACT));
    expect(await list({ channelNumberId: b })).toHaveLength(2);

    // createdAfter and createdBefore are exclusive.
    const oldest = listedAt(records.at(-1)!);
    const newest = listedAt(records[0]!);
    const window = await list({ createdAfter: oldest, createdBefore: newest });
    expect(window).toEqual(expected((m) => listedAt(m) > oldest && listedAt(m) < newest));
    expect(window.length).toBeGreaterThanOrEqual(2);
  });

  it("narrows the message union on `direction`", async () => {
    const t = await createTenant();
    await history(t);
    const recipients: string[] = [];
    const senders: string[] = [];
    for await (const m of t.client().messages.list({ limit: 100 })) {
      if (m.direction === "outbound") {
        expectTypeOf(m).toEqualTypeOf<OutboundMessage>();
        expect(["queued", "processing", "sent", "failed"]).toContain(m.status);
        recipients.push(`${m.to}:${m.text.body}`);
      } else {
        expectTypeOf(m).toEqualTypeOf<InboundMessage>();
        expectTypeOf(m.text).toEqualTypeOf<{ body: string } | null>();
        expect(m).toMatchObject({ status: "received", type: "text", content: null, receivedAt: expect.any(String) });
        senders.push(`${m.from}:${m.text?.body}`);
      }
    }
    expect(recipients.sort()).toEqual(["5511000000001:a1", "5511000000001:b1", "5511000000002:a2"]);
    expect(senders.sort()).toEqual([`${CONTACT}:hi a`, `${CONTACT}:hi b`, `${OTHER_CONTACT}:hello a`].sort());
  });

  it("toArray(max) stops at max without requesting the page after it", async () => {
    const t = await createTenant();
    const { records } = await history(t);
    const net = recordingFetch();
    const firstTwo = await t.client({ fetch: net.fetch }).messages.list({ limit: 1 }).toArray(2);
    expect(idsOf(firstTwo)).toEqual(idsOf(records.slice(0, 2)));
    expect(net.seen).toHaveLength(2);
  });

  it("a bad filter or cursor is a typed 400, not retried", async () => {
    const t = await createTenant();
    const net = recordingFetch();
    const client = t.client({ fetch: net.fetch });
    const conflict = await client.messages
      .list({ to: "5511000000001", direction: "inbound" })
      .toArray()
      .catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(ApiError);
    expect(conflict).toMatchObject({
      status: 400,
      code: "invalid_request",
      details: [{ path: "query.to", rule: "conflict" }],
    });
    const cursor = await client.messages
      .list({ cursor: "not-a-cursor" })
      .toArray()
      .catch((e: unknown) => e);
    expect(cursor).toMatchObject({ status: 400, code: "invalid_request", details: [{ path: "query.cursor" }] });
    expect(net.seen.map((s) => s.status)).toEqual([400, 400]);
  });
});

describe("client.messages.events", () => {
  it("a sent message: its timeline, and the delivery of its event to the webhook", async () => {
    const t = await createTenant();
    const client = t.client();
    await client.webhooks.configure({ channelNumberId: t.numberId, url: receiver.url(`/events/${t.numberId}`) });
    const { jobId } = await client.messages.send({
      channelNumberId: t.numberId,
      to: "5511999998888",
      text: { body: "timeline" },
    });
    // The positive signals: the message reaches `sent`, and its event reaches the receiver and the delivery log.
    await vi.waitFor(async () => expect((await client.messages.get(jobId)).status).toBe("sent"), {
      timeout: 15_000,
      interval: 100,
    });
    const delivery = await receiver.delivered((d) => d.body.includes(jobId) && d.body.includes('"status":"sent"'));
    const events = await vi.waitFor(
      async () => {
        const e = await client.messages.events(jobId);
        expect(
          e.deliveries.some((d) => d.eventId === delivery.headers["webhook-id"] && d.outcome === "delivered"),
        ).toBe(true);
        return e;
      },
      { timeout: 15_000, interval: 100 },
    );

    expect(events.messageId).toBe(jobId);
    expectTypeOf(events.timeline).toEqualTypeOf<MessageTimelineEntry[]>();
    // Then the sandbox's delivered and read reports, seconds later, as the operator's.
    expect(events.timeline.map((e) => e.status).slice(0, 3)).toEqual(["queued", "processing", "sent"]);
    expect(events.timeline.every((e) => e.error === null)).toBe(true);
    const at = events.timeline.map((e) => e.at);
    expect([...at].sort()).toEqual(at);
    const message = await client.messages.get(jobId);
    if (message.direction !== "outbound") throw new Error("a send reads back as an outbound message");
    // The sandbox's delivery report may already be there (seconds later): the `sent` entry is the send's.
    expect([at[0], events.timeline.find((e) => e.status === "sent")?.at]).toEqual([message.createdAt, message.sentAt]);
    expect(events.deliveries.find((d) => d.eventId === delivery.headers["webhook-id"])).toMatchObject({
      eventType: "message.status",
      attempt: 1,
      statusCode: 204,
      outcome: "delivered",
    });
  });

  it("an inbound message is `received`; an unknown id is a typed 404", async () => {
    const t = await createTenant();
    const client = t.client();
    const { messageId } = await client.sandbox.injectInbound({
      channelNumberId: t.numberId,
      from: CONTACT,
      text: { body: "hi" },
    });
    const events = await client.messages.events(messageId);
    expect(events).toEqual({
      messageId,
      timeline: [{ status: "received", at: expect.any(String), error: null }],
      deliveries: [],
    });
    const missing = await client.messages.events(crypto.randomUUID()).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ApiError);
    expect(missing).toMatchObject({ status: 404, code: "not_found", requestId: expect.stringMatching(/^req_/) });
  });
});

describe("client.messageArchives", () => {
  it("a fresh workspace has no archived days; downloading one raises the typed 404 at once", async () => {
    const t = await createTenant();
    const net = recordingFetch();
    const client = t.client({ fetch: net.fetch });
    expect(await client.messageArchives.list().toArray()).toEqual([]);

    const download = client.messageArchives.download("2026-10-01");
    // Nothing is requested until iteration starts.
    expect(net.seen).toHaveLength(1);
    const seen: Message[] = [];
    const err = await (async () => {
      for await (const m of download) seen.push(m);
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 404, code: "not_found", requestId: expect.stringMatching(/^req_/) });
    expect(seen).toEqual([]);
    // A 404 is final: one request.
    expect(net.seen.map((s) => [new URL(s.url).pathname, s.status])).toEqual([
      ["/api/v1/message-archives", 200],
      ["/api/v1/message-archives/2026-10-01", 404],
    ]);
  });

  it("client.v2's archives: none for a fresh workspace, an unknown day the typed 404", async () => {
    const t = await createTenant();
    const client = t.client();
    expect(await client.v2.messageArchives.list().toArray()).toEqual([]);
    const err = await (async () => {
      for await (const m of client.v2.messageArchives.download("2026-10-01")) void m;
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 404, code: "not_found" });
  });
});
