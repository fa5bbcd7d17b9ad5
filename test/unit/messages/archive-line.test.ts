import { describe, expect, it } from "vitest";
import {
  mayCarryV2,
  toArchivedLine,
  v1OfLine,
  v2OfLine,
  V2_KEY,
  type ArchivedLine,
} from "../../../src/messages/archive-line";
import { toMessageView, type MessageRow } from "../../../src/messages/record";
import { toMessageViewV2, withStatusV2 } from "../../../src/messages/message-v2";
import { mediaContent } from "../../../src/messages/kinds/media";
import { interactiveContent } from "../../../src/messages/kinds/interactive";
import { locationContent } from "../../../src/messages/kinds/location";
import { contactsContent } from "../../../src/messages/kinds/contacts";
import { reactionContent } from "../../../src/messages/kinds/reaction";
import type { OutboundContent } from "../../../src/messages/content";
import { withTypingIndicator } from "../../../src/messages/read-mark";

// A line of an archived day: v1's view of the record, with what v2 shows beyond what it derives
// from that view under one key. Read back, each version's view is the record's view in that
// version, byte for byte (the API's JSON of the same message); a line written before the key
// existed reads as it always did.

const T = Date.UTC(2031, 2, 3, 4, 5, 6);
const N = "5e2f1a3b-0000-4000-8000-000000000002";
const MEDIA_ID = "0b3c5d7e-1111-4222-8333-444455556666";
const RECEIVED_ID = "7a1b2c3d-0000-4000-8000-000000000009";
let n = 0;

/** An outbound record as a history shard holds it (no work state), sent and then read. */
function outbound(content: OutboundContent | { type: string; body: string; content: null; details: string | null }) {
  return row({
    direction: "outbound",
    recipient: "5511999998888",
    ...content,
    status: "sent",
    upstream_message_id: "wamid.S1",
    processing_at: T + 10,
    sent_at: T + 20,
    delivered_at: null,
    read_at: T + 5_000,
    updated_at: T + 5_000,
    changes: "psr",
  });
}

/** An inbound record as the number wrote it. */
function inbound(over: Partial<MessageRow>): MessageRow {
  return row({
    direction: "inbound",
    recipient: "5511912345678",
    type: "text",
    body: "Hi",
    content: null,
    details: JSON.stringify({ profile: { name: "Ana" } }),
    status: "received",
    upstream_message_id: "wamid.IN1",
    received_at: T,
    ...over,
  });
}

function row(over: Partial<MessageRow>): MessageRow {
  n += 1;
  return {
    id: `0190a000-0000-7000-8000-${String(n).padStart(12, "0")}`,
    direction: "outbound",
    channel_number_id: N,
    recipient: "5511999998888",
    type: "text",
    body: "Your order shipped",
    content: null,
    details: null,
    status: "sent",
    idem_key: null,
    fingerprint: null,
    pending: null,
    attempts: null,
    answered: null,
    next_attempt_at: null,
    upstream_message_id: null,
    error_code: null,
    error_message: null,
    error_retriable: null,
    upstream_error_code: null,
    created_at: T,
    updated_at: T,
    processing_at: null,
    sent_at: null,
    failed_at: null,
    delivered_at: null,
    read_at: null,
    outcome_unknown_since: null,
    received_at: null,
    changes: null,
    ...over,
  };
}

const BUTTONS = {
  type: "button" as const,
  header: { type: "image" as const, link: "https://cdn.example.com/table.png" },
  body: "Your table for 4 is booked for Friday at 8 pm.",
  footer: "Reply to change it.",
  buttons: [
    { id: "confirm", title: "Confirm" },
    { id: "reschedule", title: "Reschedule" },
  ],
};

/** Records whose v2 view shows more than v1's view derives: each kind of rich send, inbound messages marked read. */
const RICHER: [string, MessageRow][] = [
  ["an image by link", outbound(mediaContent("image", { link: "https://cdn.example.com/p.png", caption: "Yours" }))],
  ["an image by mediaId", outbound(mediaContent("image", { mediaId: MEDIA_ID, caption: "Yours" }))],
  ["a document by mediaId", outbound(mediaContent("document", { mediaId: MEDIA_ID }, "invoice-1042.pdf"))],
  ["an interactive message", outbound(interactiveContent(BUTTONS))],
  [
    "a location",
    outbound(locationContent({ latitude: -23.5614, longitude: -46.6559, name: "Acme", address: "Av. Paulista" })),
  ],
  [
    "contacts",
    outbound(contactsContent([{ name: { formattedName: "Ana Souza" }, phones: [{ phone: "+55 11 99999-8888" }] }])),
  ],
  ["a reaction", outbound(reactionContent({ messageId: RECEIVED_ID, emoji: "👍" }, "wamid.IN1"))],
  ["a removed reaction", outbound(reactionContent({ messageId: RECEIVED_ID, emoji: "" }, "wamid.IN1"))],
  // A record whose rich fields cannot be read back shows its type alone, in v2 and in the archive.
  ["an image of unreadable content", outbound({ type: "image", body: "[image]", content: null, details: "{" })],
  [
    "an inbound message read with the typing indicator",
    inbound({ read_at: T + 60_000, details: withTypingIndicator(null) }),
  ],
  ["an inbound message read without it", inbound({ read_at: T + 60_000 })],
  [
    "an inbound button reply, read",
    inbound({
      type: "interactive",
      body: "",
      content: JSON.stringify({ type: "button_reply", button_reply: { id: "confirm", title: "Confirm" } }),
      details: withTypingIndicator(JSON.stringify({ replyTo: { messageId: RECEIVED_ID } })),
      read_at: T + 60_000,
    }),
  ],
];

/** Records v2 shows as it derives from v1's view: their lines are v1's view alone, as before. */
const PLAIN: [string, MessageRow][] = [
  ["a text", outbound({ type: "text", body: "Your order shipped", content: null, details: null })],
  [
    "a failed text",
    row({ status: "failed", failed_at: T + 30, error_code: "recipient_unreachable", error_message: "x" }),
  ],
  ["an inbound text", inbound({})],
  [
    "an inbound button reply, unread (its answer is read from its content)",
    inbound({
      type: "interactive",
      body: "",
      content: JSON.stringify({ type: "button_reply", button_reply: { id: "confirm", title: "Confirm" } }),
    }),
  ],
];

/** The line as the archive stores it and the route reads it back: JSON text, parsed. */
const written = (line: ArchivedLine): string => JSON.stringify(line);
const read = (text: string) => JSON.parse(text) as ArchivedLine;

describe("an archived line", () => {
  it.each([...RICHER, ...PLAIN])("of %s reads back as each version's view, in keys, values and order", (_, r) => {
    const text = written(toArchivedLine(r));
    expect(JSON.stringify(v1OfLine(read(text)))).toBe(JSON.stringify(toMessageView(r)));
    expect(JSON.stringify(v2OfLine(read(text)))).toBe(JSON.stringify(toMessageViewV2(r)));
  });

  it.each(RICHER)("of %s keeps v2's own values under one key, only those that differ", (_, r) => {
    const line = toArchivedLine(r);
    const v1 = toMessageView(r);
    const derived = withStatusV2(v1);
    const v2 = toMessageViewV2(r);
    const extra = line[V2_KEY] as Record<string, unknown>;
    expect(Object.keys(extra).length).toBeGreaterThan(0);
    // v1's view first, key for key, then the one key.
    expect(Object.keys(line)).toEqual([...Object.keys(v1), V2_KEY]);
    for (const [key, value] of Object.entries(extra)) {
      expect(value).toEqual((v2 as Record<string, unknown>)[key]);
      expect(value).not.toEqual((derived as Record<string, unknown>)[key]);
    }
    expect(mayCarryV2(written(line))).toBe(true);
  });

  it("holds the kind and its fields for a rich send, the read mark for an inbound message", () => {
    const extras = Object.fromEntries(RICHER.map(([label, r]) => [label, toArchivedLine(r)[V2_KEY]]));
    expect(extras["an image by mediaId"]).toEqual({ type: "image", image: { mediaId: MEDIA_ID, caption: "Yours" } });
    expect(extras["a reaction"]).toEqual({ type: "reaction", reaction: { messageId: RECEIVED_ID, emoji: "👍" } });
    expect(extras["an image of unreadable content"]).toEqual({ type: "image" });
    expect(extras["an inbound message read with the typing indicator"]).toEqual({
      readAt: new Date(T + 60_000).toISOString(),
      typingIndicator: true,
    });
    expect(extras["an inbound message read without it"]).toEqual({ readAt: new Date(T + 60_000).toISOString() });
    // Statuses, delivery times and answers are derived from v1's view: never kept twice.
    expect(extras["an inbound button reply, read"]).not.toHaveProperty("answer");
    expect(extras["an interactive message"]).not.toHaveProperty("status");
  });

  it.each(PLAIN)("of %s is v1's view alone, as lines were before v2's values were kept", (_, r) => {
    const text = written(toArchivedLine(r));
    expect(text).toBe(JSON.stringify(toMessageView(r)));
    expect(mayCarryV2(text)).toBe(false);
  });

  it.each([...RICHER, ...PLAIN])(
    "written before v2's values were kept, of %s: v1's view as it was, v2's derived from it",
    (_, r) => {
      const old = JSON.stringify(toMessageView(r));
      expect(JSON.stringify(v1OfLine(read(old)))).toBe(old);
      expect(JSON.stringify(v2OfLine(read(old)))).toBe(JSON.stringify(withStatusV2(toMessageView(r))));
    },
  );

  it("adds at most the read mark (66 bytes) to an inbound line, and a rich send's type and fields as sent to an outbound one", () => {
    const bytes = (text: string) => new TextEncoder().encode(text).byteLength;
    const added = (r: MessageRow) => bytes(written(toArchivedLine(r))) - bytes(JSON.stringify(toMessageView(r)));
    for (const [, r] of RICHER.filter(([, r]) => r.direction === "inbound")) expect(added(r)).toBeLessThanOrEqual(66);
    for (const [, r] of RICHER.filter(([, r]) => r.direction === "outbound")) {
      const fields = JSON.stringify(toArchivedLine(r)[V2_KEY]);
      // The key, the type and the kind's object (no larger than what the record keeps of it): nothing else.
      expect(added(r)).toBe(bytes(`,"${V2_KEY}":${fields}`));
      expect(bytes(fields)).toBeLessThanOrEqual(
        bytes(`{"type":"interactive","interactive":}`) + bytes(r.details ?? r.content ?? ""),
      );
    }
    for (const [, r] of PLAIN) expect(added(r)).toBe(0);
  });
});
