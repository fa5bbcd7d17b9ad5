import { describe, expect, it } from "vitest";
import { OperatorInbound } from "../../../src/operator/webhook-payload";
import { contentOf, detailsOf, movesOf, senderOf } from "../../../src/operator/inbound-message";

const inbound = (over: Record<string, unknown>) => OperatorInbound.parse({ id: "wamid.1", type: "text", ...over });

describe("the sender of an inbound message", () => {
  it("is the phone number when there is one, with the user id and profile beside it", () => {
    const contact = { wa_id: "5511", user_id: "US.1", profile: { name: "Ana", username: "@ana" } };
    expect(senderOf(inbound({ from: "5511" }), contact)).toEqual({
      key: "5511",
      phone: "5511",
      userId: "US.1",
      profileName: "Ana",
      username: "@ana",
    });
    // A phone number that came as a JSON number reads as its digits.
    expect(senderOf(inbound({ from: 5511 }), {})?.phone).toBe("5511");
  });

  it("is the user id when the number is withheld (empty or absent), from the message or its contact", () => {
    expect(senderOf(inbound({ from: "", from_user_id: "US.9" }), {})).toMatchObject({ key: "US.9", phone: null });
    expect(senderOf(inbound({}), { wa_id: "", user_id: "US.8" })).toMatchObject({ key: "US.8", phone: null });
  });

  it("keeps a from of no known shape as the key rather than drop the message, and is null with nothing at all", () => {
    expect(senderOf(inbound({ from: "abc" }), {})).toMatchObject({ key: "abc", phone: null, userId: null });
    expect(senderOf(inbound({}), "not a contact")).toBeNull();
  });

  it("of a system message about a changed user id is the id the customer knew", () => {
    const m = inbound({ type: "system", system: { type: "user_changed_user_id", previous_user_id: "US.old" } });
    expect(senderOf(m, {})?.key).toBe("US.old");
  });
});

describe("what an inbound record keeps beyond its content", () => {
  const sender = { key: "5511", phone: "5511", userId: null, profileName: null, username: null };

  it("the message it replies to, whether it was forwarded (frequently first), and the ad it came from", () => {
    const d = detailsOf(
      inbound({
        context: { id: "wamid.0", forwarded: true, frequently_forwarded: true },
        referral: { source_type: "ad", source_id: "77", headline: "", ctwa_clid: "c1", unknown: "x" },
      }),
      sender,
    );
    expect(d).toEqual({
      replyTo: { upstreamMessageId: "wamid.0" },
      forwarded: "frequently_forwarded",
      referral: { sourceType: "ad", sourceId: "77", ctwaClid: "c1" },
    });
    expect(detailsOf(inbound({ context: { forwarded: true } }), sender).forwarded).toBe("forwarded");
  });

  it("a reaction, removed (no emoji, or an empty one) as null", () => {
    const react = (reaction: Record<string, unknown>) => detailsOf(inbound({ type: "reaction", reaction }), sender);
    expect(react({ message_id: "wamid.0", emoji: "👍" }).reaction).toEqual({
      upstreamMessageId: "wamid.0",
      emoji: "👍",
    });
    expect(react({ message_id: "wamid.0", emoji: "" }).reaction).toEqual({ upstreamMessageId: "wamid.0", emoji: null });
    expect(react({ message_id: "wamid.0" }).reaction?.emoji).toBeNull();
    expect(react({ emoji: "👍" }).reaction).toBeUndefined();
  });

  it("a system message's change of number or user id, and the moves it makes", () => {
    const d = detailsOf(
      inbound({ type: "system", system: { type: "user_changed_number", body: "changed", wa_id: "5522" } }),
      { ...sender, userId: "US.1" },
    );
    expect(d.system).toEqual({
      type: "user_changed_number",
      body: "changed",
      previousPhone: "5511",
      previousUserId: "US.1",
      newPhone: "5522",
      newUserId: null,
    });
    expect(movesOf(d, 7)).toEqual([{ from: "5511", to: "5522", at: 7 }]);
    const ids = detailsOf(inbound({ type: "system", system: { previous_user_id: "US.a", user_id: "US.b" } }), sender);
    expect(movesOf(ids, 7)).toEqual([{ from: "US.a", to: "US.b", at: 7 }]);
    // A number or id that did not change moves nothing.
    const same = detailsOf(inbound({ type: "system", system: { wa_id: "5511" } }), sender);
    expect(movesOf(same, 7)).toEqual([]);
    expect(movesOf({}, 7)).toEqual([]);
  });
});

describe("the content of a non-text message", () => {
  it("is its part named by its type, unchanged; wrapped when that part is not an object; nothing for text", () => {
    expect(contentOf("image", { image: { id: "m1", mime_type: "image/jpeg" } })).toEqual({
      id: "m1",
      mime_type: "image/jpeg",
    });
    expect(contentOf("contacts", { contacts: [{ name: "x" }] })).toEqual({ contacts: [{ name: "x" }] });
    expect(contentOf("unsupported", { errors: [1] })).toEqual({ errors: [1] });
    expect(contentOf("text", { text: { body: "hi" } })).toBeNull();
  });
});
