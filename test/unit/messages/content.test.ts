import { describe, expect, it } from "vitest";
import { operatorPayloadOf } from "../../../src/messages/content";
import { mediaContent } from "../../../src/messages/kinds/media";
import { contactsContent } from "../../../src/messages/kinds/contacts";
import { reactionContent } from "../../../src/messages/kinds/reaction";

// What the number sends the operator for a record: its type and the object under that type's name,
// taken from the record's content; never something else when the content cannot be read.

const record = (type: string, content: string | null, body = "Hi") => ({ type, body, content });

describe("the operator payload of a record", () => {
  it("is a text's body, or the record's content under its type", () => {
    expect(operatorPayloadOf(record("text", null))).toEqual({ type: "text", payload: { body: "Hi" } });
    const image = mediaContent("image", { link: "https://cdn.example.com/a.png", caption: "Parcel" });
    expect(operatorPayloadOf(image)).toEqual({
      type: "image",
      payload: { link: "https://cdn.example.com/a.png", caption: "Parcel" },
    });
    const template = { name: "order_update", language: { code: "en_US" }, components: [] };
    expect(operatorPayloadOf(record("template", JSON.stringify(template)))).toEqual({
      type: "template",
      payload: template,
    });
  });

  it("is null for content that cannot be read, so the record fails rather than being sent as another kind", () => {
    expect(operatorPayloadOf(record("image", null))).toBeNull();
    expect(operatorPayloadOf(record("image", "{not json"))).toBeNull();
    expect(operatorPayloadOf(record("location", "42"))).toBeNull();
    expect(operatorPayloadOf(record("template", JSON.stringify({ name: "x" })))).toBeNull();
  });
});

describe("what a rich record keeps", () => {
  it("a summary for views that show text only, and the operator's words in content", () => {
    expect(mediaContent("document", { link: "https://a.example.com/i", filename: "i.pdf" }).body).toBe(
      "[document] i.pdf",
    );
    const cards = contactsContent([
      { name: { formattedName: "Ana Souza", firstName: "Ana" }, phones: [{ phone: "+1", waId: "1" }] },
    ]);
    expect(cards.body).toBe("[contacts] Ana Souza");
    expect(JSON.parse(cards.content!)).toEqual([
      { name: { formatted_name: "Ana Souza", first_name: "Ana" }, phones: [{ phone: "+1", wa_id: "1" }] },
    ]);
    const removed = reactionContent({ messageId: crypto.randomUUID(), emoji: "" }, "wamid.X");
    expect(removed).toMatchObject({ body: "[reaction removed]", content: '{"message_id":"wamid.X","emoji":""}' });
  });
});
