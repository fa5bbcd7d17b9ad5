import { describe, expect, it } from "vitest";
import {
  derivedEventId,
  envelopeOf,
  EVENT_ID_PATTERN,
  eventIdOf,
  kindFieldsOf,
  newEventId,
  parseEventId,
  MessageReceivedDataV2,
  type MessageReceivedData,
  type MessageStatusData,
  type WebhookEvent,
} from "../../../src/messages/events";
import { EVENT_KINDS } from "../../../src/messages/status";
import { newUuidV7 } from "../../../src/lib/job-id";

const T = Date.UTC(2030, 4, 6, 7, 8, 9, 10);
/** A v4 message id (ids of the release before UUIDv7 jobIds). */
const V4 = "3f2b8c1e-9a4d-4e6f-b012-3456789abcde";

describe("eventIdOf and parseEventId", () => {
  it.each(EVENT_KINDS)("round-trip the %s event of a UUIDv7 message id", (kind) => {
    const messageId = newUuidV7(T);
    const id = eventIdOf(messageId, kind);
    expect(id).toMatch(EVENT_ID_PATTERN);
    expect(parseEventId(id)).toEqual({ messageId, kind });
    // The id is the message id's hex with only its version digit replaced.
    const hex = messageId.replaceAll("-", "");
    expect(id.slice(4, 16)).toBe(hex.slice(0, 12));
    expect(id.slice(17)).toBe(hex.slice(13));
  });

  it.each(EVENT_KINDS)("round-trip the %s event of a v4 message id (issued before UUIDv7 jobIds)", (kind) => {
    const id = eventIdOf(V4, kind);
    expect(id).toMatch(EVENT_ID_PATTERN);
    expect(parseEventId(id)).toEqual({ messageId: V4, kind });
  });

  it("give every change of a message its own id, the same every time, and never another message's", () => {
    const a = newUuidV7(T);
    const b = newUuidV7(T);
    const ids = [a, b, V4].flatMap((m) => EVENT_KINDS.map((k) => eventIdOf(m, k)));
    expect(new Set(ids).size).toBe(3 * EVENT_KINDS.length);
    expect(eventIdOf(a, "sent")).toBe(eventIdOf(a, "sent"));
    // Upper-case input names the same message.
    expect(eventIdOf(a.toUpperCase(), "delivered")).toBe(eventIdOf(a, "delivered"));
  });

  it("fall back to a hash for a message id of another version, which names nothing when parsed back", () => {
    const v1 = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";
    const id = eventIdOf(v1, "sent");
    expect(id).toBe(derivedEventId("event", v1, "sent"));
    expect(id).toMatch(EVENT_ID_PATTERN);
    const parsed = parseEventId(id);
    expect(parsed === null || ("messageId" in parsed && parsed.messageId !== v1)).toBe(true);
  });
});

describe("test event ids", () => {
  it("carry their time: a test event is dated by its id, and names no message", () => {
    const id = newEventId(T);
    expect(id).toMatch(EVENT_ID_PATTERN);
    expect(id[16]).toBe("0"); // the kind digit of a test event
    expect(parseEventId(id)).toEqual({ test: true, at: T });
    expect(newEventId(T)).not.toBe(id);
  });
});

describe("ids that name nothing", () => {
  it.each([
    ["the kind digit 0 without a UUID's variant bits", `evt_${"0".repeat(32)}`],
    ["kind digit 7 (no kind)", "evt_0189abcdef017abc8def0123456789ab"],
    ["kind digit 8 (no kind)", "evt_0189abcdef018abc8def0123456789ab"],
    ["kind digit f (no kind)", "evt_0189abcdef01fabc8def0123456789ab"],
    ["a message kind without a UUID's variant bits", "evt_0189abcdef012abc0def0123456789ab"],
    ["upper-case hex", "evt_0189ABCDEF012ABC8DEF0123456789AB"],
    ["too short", "evt_0189abcdef012abc8def0123456789a"],
    ["another prefix", "msg_0189abcdef012abc8def0123456789ab"],
    ["not hex", "evt_0189abcdef012abc8def0123456789zz"],
  ])("%s", (_, id) => {
    expect(parseEventId(id)).toBeNull();
  });

  it("a random evt_ id parses to nothing, or to a message or test time that re-encodes to that very id", () => {
    for (let i = 0; i < 2_000; i++) {
      const hex = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join(
        "",
      );
      const id = `evt_${hex}`;
      const parsed = parseEventId(id);
      if (parsed === null) continue;
      // Whatever it names is found by the id alone (a replay looks it up, and answers 404 if it is
      // not there): the mapping is one to one, never a guess.
      if ("test" in parsed) expect(id.slice(4, 16)).toBe(parsed.at.toString(16).padStart(12, "0"));
      else expect(eventIdOf(parsed.messageId, parsed.kind)).toBe(id);
    }
  });
});

describe("kindFieldsOf", () => {
  it("adds nothing to a text message's status events, which stay as they always were", () => {
    expect(kindFieldsOf({ text: { body: "Your order has shipped." } })).toEqual({});
  });

  it("adds a template message's type, facts and rendered text, in that order", () => {
    const template = { name: "order_update", language: "en_US", category: "UTILITY", parameterFormat: "POSITIONAL" };
    const fields = kindFieldsOf({ template, text: { body: "Hi Ana, your order #1042 has shipped." } });
    expect(fields).toEqual({ type: "template", template, text: { body: "Hi Ana, your order #1042 has shipped." } });
    // The event's JSON keeps the order it always had.
    expect(Object.keys(fields)).toEqual(["type", "template", "text"]);
  });
});

describe("envelopeOf: each webhook receives the shapes of its API version", () => {
  const messageId = newUuidV7(T);
  const at = new Date(T + 2_000).toISOString();
  const data = (over: Partial<MessageStatusData>): MessageStatusData => ({
    messageId,
    channelNumberId: "5e2f1a3b-0000-4000-8000-000000000002",
    to: "5511999998888",
    toUserId: null,
    status: "sent",
    previousStatus: "sent",
    upstreamMessageId: "wamid.S1",
    error: null,
    deliveredAt: null,
    readAt: null,
    updatedAt: at,
    ...over,
  });
  type StatusEvent = Extract<WebhookEvent, { type: "message.status" }>;
  const statusEvent = (kind: "sent" | "delivered" | "read", d: MessageStatusData): StatusEvent => ({
    id: eventIdOf(messageId, kind),
    type: "message.status",
    workspaceId: "9d1c0b7e-0000-4000-8000-000000000001",
    channelNumberId: d.channelNumberId,
    createdAt: at,
    data: d,
  });

  it("v1 gets the event's data as it always was; v2 the fields the event carries for it, in the same places", () => {
    const event = {
      ...statusEvent("read", data({ deliveredAt: null, readAt: at })),
      v2: { status: "read", previousStatus: "read", deliveredAt: at, readAt: at },
    } satisfies StatusEvent;
    expect(envelopeOf(event, 1)).toEqual({ type: "message.status", timestamp: at, data: event.data });
    expect(envelopeOf(event)).toEqual(envelopeOf(event, 1));
    const v2 = envelopeOf(event, 2).data;
    expect(v2).toEqual({ ...event.data, status: "read", previousStatus: "read", deliveredAt: at });
    expect(Object.keys(v2)).toEqual(Object.keys(event.data));
  });

  it("an event queued without v2's fields gets them from its change and v1's data", () => {
    const sent = statusEvent("sent", data({ status: "sent", previousStatus: "processing" }));
    expect(envelopeOf(sent, 2).data).toEqual(sent.data);
    const delivered = statusEvent("delivered", data({ deliveredAt: at }));
    expect(envelopeOf(delivered, 2).data).toMatchObject({ status: "delivered", previousStatus: "sent" });
    const readAfterDelivery = statusEvent("read", data({ deliveredAt: at, readAt: at }));
    expect(envelopeOf(readAfterDelivery, 2).data).toMatchObject({ status: "read", previousStatus: "delivered" });
    const readFirst = statusEvent("read", data({ readAt: at }));
    expect(envelopeOf(readFirst, 2).data).toMatchObject({ status: "read", previousStatus: "sent", deliveredAt: at });
    const afterFailure = statusEvent(
      "delivered",
      data({ status: "failed", previousStatus: "failed", deliveredAt: at }),
    );
    expect(envelopeOf(afterFailure, 2).data).toEqual(afterFailure.data);
  });

  it("a message.received event: v2 adds the user's answer read from its type and content (null for others); v1 none", () => {
    const received = (over: Partial<MessageReceivedData>): Extract<WebhookEvent, { type: "message.received" }> => ({
      id: eventIdOf(messageId, "received"),
      type: "message.received",
      workspaceId: "9d1c0b7e-0000-4000-8000-000000000001",
      channelNumberId: "5e2f1a3b-0000-4000-8000-000000000002",
      createdAt: at,
      data: {
        messageId,
        channelNumberId: "5e2f1a3b-0000-4000-8000-000000000002",
        from: "5511999998888",
        fromUserId: null,
        profileName: null,
        username: null,
        replyTo: { messageId: V4, upstreamMessageId: "wamid.ASK" },
        forwarded: null,
        reaction: null,
        referral: null,
        system: null,
        type: "text",
        text: { body: "hi" },
        content: null,
        upstreamMessageId: "wamid.IN",
        receivedAt: at,
        media: null,
        ...over,
      },
    });
    const answer = received({
      type: "interactive",
      text: null,
      content: { type: "list_reply", list_reply: { id: "slot-9", title: "9:00" } },
    });
    expect(envelopeOf(answer, 1).data).toEqual(answer.data);
    const v2 = envelopeOf(answer, 2).data;
    expect(v2).toEqual({
      ...answer.data,
      answer: { type: "list_reply", id: "slot-9", title: "9:00", description: null, flow: null },
    });
    expect(MessageReceivedDataV2.parse(v2)).toEqual(v2);
    expect(envelopeOf(received({}), 2).data).toEqual({ ...received({}).data, answer: null });
  });
});
