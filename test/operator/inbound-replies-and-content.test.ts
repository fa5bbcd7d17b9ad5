import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeClockPerTest } from "../helpers/clock";
import { api, json } from "../helpers/http";
import { send } from "../helpers/send";
import { liveNumberTenant, mockOperator, type OperatorCall } from "../helpers/operator";
import { eventsOfMessage, queuedEvents } from "../helpers/events";
import { inboundPayload, postOperator, seconds } from "../helpers/operator-webhook";
import { channelNumberStub } from "../../src/durable-objects/stubs";
import { MessageReceivedData, type WebhookEvent } from "../../src/messages/events";
import { InboundMessage } from "../../src/messages/message";

// What an inbound message answers, reacts to or came from (replies, reactions, click-to-chat ads),
// linked to our ids; and content that is always an object. Through the real webhook endpoint with
// signed payloads; sends through the real POST /messages, the operator faked at the fetch edge.

const clock = fakeClockPerTest(Date.UTC(2044, 0, 1), (t) => t + 24 * 3_600_000);
afterEach(() => {
  vi.restoreAllMocks();
});

type Tenant = Awaited<ReturnType<typeof liveNumberTenant>>;

const received = (queued: () => WebhookEvent[]) => queued().flatMap((e) => (e.type === "message.received" ? [e] : []));

const acceptedFor = (call: OperatorCall, id: string) =>
  Response.json({ messaging_product: "whatsapp", contacts: [{ input: call.body.to }], messages: [{ id }] });

/** Sends one message and lets the number call the operator, which names it `wamid`. */
async function sent(t: Tenant, recipient: { to: string } | { toUserId: string }, wamid: string): Promise<string> {
  mockOperator((call) => acceptedFor(call, wamid));
  const res = await send(t.key, crypto.randomUUID(), {
    channelNumberId: t.numberId,
    ...recipient,
    text: { body: "Hi" },
  });
  expect(res.status).toBe(201);
  const { jobId } = await json<{ jobId: string }>(res);
  await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
  vi.restoreAllMocks();
  clock.advance(2_000);
  return jobId;
}

/** Posts inbound messages of one sender, one payload each, and returns their message.received events in order (once per test: the queue spy keeps what it saw). */
async function inbound(
  t: Tenant,
  sender: Record<string, unknown>,
  contact: Record<string, unknown>,
  messages: Record<string, unknown>[],
) {
  const queued = queuedEvents();
  for (const [i, m] of messages.entries()) {
    const payload = inboundPayload(
      t.phoneNumberId,
      [{ ...sender, id: `wamid.IN.${crypto.randomUUID()}`, timestamp: seconds(clock.now() + i * 1_000), ...m }],
      [contact],
    );
    expect((await postOperator(payload)).status).toBe(200);
  }
  await vi.waitFor(() => expect(received(queued)).toHaveLength(messages.length), { timeout: 10_000, interval: 50 });
  return received(queued);
}

describe("replies and reactions", () => {
  it("name the message they answer by our id (and the operator's), also a user's own earlier message; an unknown one keeps the operator's id only", async () => {
    const t = await liveNumberTenant();
    const jobId = await sent(t, { to: "5511912345678" }, "wamid.OUT1");
    const user = { from: "5511912345678" };
    const contact = { wa_id: "5511912345678", profile: { name: "Ana" } };
    const [first, ...events] = await inbound(t, user, contact, [
      { id: "wamid.IN.FIRST", type: "text", text: { body: "first" } },
      { type: "text", text: { body: "yes!" }, context: { from: "15557770000", id: "wamid.OUT1" } },
      { type: "reaction", reaction: { message_id: "wamid.OUT1", emoji: "👍" } },
      { type: "reaction", reaction: { message_id: "wamid.OUT1" } },
      { type: "text", text: { body: "as I said" }, context: { from: "5511912345678", id: "wamid.IN.FIRST" } },
      { type: "text", text: { body: "?" }, context: { from: "15557770000", id: "wamid.LONG.AGO" } },
    ]);
    expect(events.map((e) => ({ type: e.data.type, replyTo: e.data.replyTo, reaction: e.data.reaction }))).toEqual([
      { type: "text", replyTo: { messageId: jobId, upstreamMessageId: "wamid.OUT1" }, reaction: null },
      {
        type: "reaction",
        replyTo: null,
        reaction: { messageId: jobId, upstreamMessageId: "wamid.OUT1", emoji: "👍", removed: false },
      },
      {
        type: "reaction",
        replyTo: null,
        reaction: { messageId: jobId, upstreamMessageId: "wamid.OUT1", emoji: null, removed: true },
      },
      {
        type: "text",
        replyTo: { messageId: first!.data.messageId, upstreamMessageId: "wamid.IN.FIRST" },
        reaction: null,
      },
      { type: "text", replyTo: { messageId: null, upstreamMessageId: "wamid.LONG.AGO" }, reaction: null },
    ]);
    for (const e of events) {
      expect(MessageReceivedData.safeParse(e.data).success).toBe(true);
      // The record says the same, and every rebuild of the event (a replay) is the event that left.
      const view = await json(await api(`/messages/${e.data.messageId}`, t.key));
      expect(InboundMessage.parse(view)).toMatchObject({ replyTo: e.data.replyTo, reaction: e.data.reaction });
      expect(await eventsOfMessage(t.workspaceId, e.data.messageId)).toEqual([e]);
    }
  });

  it("a removed reaction (the operator's emoji empty or left out) says so in the event and the record: removed, emoji null, the operator's part as sent", async () => {
    const t = await liveNumberTenant();
    const jobId = await sent(t, { to: "5511912345678" }, "wamid.OUT2");
    const user = { from: "5511912345678" };
    const events = await inbound(t, user, { wa_id: "5511912345678" }, [
      { type: "reaction", reaction: { message_id: "wamid.OUT2", emoji: "❤️" } },
      { type: "reaction", reaction: { message_id: "wamid.OUT2", emoji: "" } },
      { type: "reaction", reaction: { message_id: "wamid.OUT2" } },
    ]);
    const link = { messageId: jobId, upstreamMessageId: "wamid.OUT2" };
    expect(events.map((e) => [e.data.type, e.data.reaction, e.data.content])).toEqual([
      ["reaction", { ...link, emoji: "❤️", removed: false }, { message_id: "wamid.OUT2", emoji: "❤️" }],
      ["reaction", { ...link, emoji: null, removed: true }, { message_id: "wamid.OUT2", emoji: "" }],
      ["reaction", { ...link, emoji: null, removed: true }, { message_id: "wamid.OUT2" }],
    ]);
    for (const e of events) {
      expect(MessageReceivedData.parse(e.data)).toEqual(e.data);
      const view = await json(await api(`/messages/${e.data.messageId}`, t.key));
      expect(InboundMessage.parse(view)).toMatchObject({ reaction: e.data.reaction, content: e.data.content });
      expect(await eventsOfMessage(t.workspaceId, e.data.messageId)).toEqual([e]);
    }
  });

  it("a user known only by a user id: the reply finds the message sent to it with toUserId", async () => {
    const t = await liveNumberTenant();
    const jobId = await sent(t, { toUserId: "US.4444" }, "wamid.OUT.U");
    const [reply] = await inbound(t, { from: "", from_user_id: "US.4444" }, { user_id: "US.4444" }, [
      { type: "text", text: { body: "ok" }, context: { from: "15557770000", id: "wamid.OUT.U" } },
    ]);
    expect(reply!.data).toMatchObject({
      from: null,
      fromUserId: "US.4444",
      replyTo: { messageId: jobId, upstreamMessageId: "wamid.OUT.U" },
    });
  });
});

describe("forwards and ad referrals", () => {
  it("say whether the message was forwarded, and which ad the user came from (fields left out are null)", async () => {
    const t = await liveNumberTenant();
    const events = await inbound(t, { from: "5511955556666" }, { wa_id: "5511955556666" }, [
      { type: "text", text: { body: "fwd" }, context: { forwarded: true } },
      { type: "text", text: { body: "fwd many" }, context: { frequently_forwarded: true } },
      {
        type: "text",
        text: { body: "I saw your ad" },
        referral: {
          source_url: "https://fb.me/abc",
          source_id: "120210000000",
          source_type: "ad",
          headline: "Shoes -20%",
          body: "This week only",
          media_type: "image",
          image_url: "https://scontent.example/ad.jpg",
          ctwa_clid: "ARAkLkA8rmlFeiCktEJQ",
        },
      },
    ]);
    expect(events.map((e) => [e.data.forwarded, e.data.replyTo, e.data.referral])).toEqual([
      ["forwarded", null, null],
      ["frequently_forwarded", null, null],
      [
        null,
        null,
        {
          sourceType: "ad",
          sourceId: "120210000000",
          sourceUrl: "https://fb.me/abc",
          headline: "Shoes -20%",
          body: "This week only",
          mediaType: "image",
          imageUrl: "https://scontent.example/ad.jpg",
          videoUrl: null,
          thumbnailUrl: null,
          ctwaClid: "ARAkLkA8rmlFeiCktEJQ",
        },
      ],
    ]);
    const view = await json(await api(`/messages/${events[2]!.data.messageId}`, t.key));
    expect(InboundMessage.parse(view).referral).toEqual(events[2]!.data.referral);
  });
});

describe("content", () => {
  it("is an object for every type, as published: a shared contact card reads {contacts: [...]}", async () => {
    const t = await liveNumberTenant();
    const cards = [
      { name: { formatted_name: "Bia Lima", first_name: "Bia" }, phones: [{ phone: "+55 11 98888-7777" }] },
    ];
    const [event] = await inbound(t, { from: "5511944445555" }, { wa_id: "5511944445555" }, [
      { type: "contacts", contacts: cards },
    ]);
    expect(event!.data).toMatchObject({ type: "contacts", text: null, content: { contacts: cards } });
    expect(MessageReceivedData.safeParse(event!.data).success).toBe(true);
    const view = await json(await api(`/messages/${event!.data.messageId}`, t.key));
    expect(InboundMessage.parse(view).content).toEqual({ contacts: cards });
  });
});
