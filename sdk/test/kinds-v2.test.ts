import { describe, expect, it } from "vitest";
import { ApiError, messageV2, type RecipientV2, type SendMessageOfKind } from "../src/index.js";
import { createTenant } from "./helpers/tenant.js";

// messageV2's builders against the Worker: each kind built, sent from a sandbox number to one of its
// test contacts, and read back with its type and fields; the type checker refuses a kind without
// its own object (the @ts-expect-error lines are checked by `npm run typecheck`).

const CONTACT = "5511999998888";

describe("messageV2 builders", () => {
  it("each kind is sent as built and reads back as that kind", async () => {
    const t = await createTenant();
    const client = t.client();
    const to: RecipientV2 = { channelNumberId: t.numberId, to: CONTACT };
    const { messageId: received } = await client.sandbox.injectInbound({
      channelNumberId: t.numberId,
      from: CONTACT,
      text: { body: "Is my table booked?" },
    });
    const built = [
      messageV2.text(to, "Hello"),
      messageV2.image(to, { link: "https://cdn.example.com/parcel.png", caption: "Your parcel" }),
      messageV2.document(to, { link: "https://cdn.example.com/invoice.pdf", filename: "invoice-1042.pdf" }),
      messageV2.interactive(to, {
        type: "button",
        body: "Your table for 4 is booked for Friday at 8 pm.",
        buttons: [
          { id: "confirm", title: "Confirm" },
          { id: "reschedule", title: "Reschedule" },
        ],
      }),
      messageV2.location(to, { latitude: -23.5614, longitude: -46.6559, name: "Acme Store Paulista" }),
      messageV2.contacts(to, [{ name: { formattedName: "Ana Souza" }, phones: [{ phone: "+55 11 99999-8888" }] }]),
      messageV2.reaction(to, { messageId: received, emoji: "👍" }),
    ];
    expect(built[1]).toEqual({
      channelNumberId: t.numberId,
      to: CONTACT,
      type: "image",
      image: { link: "https://cdn.example.com/parcel.png", caption: "Your parcel" },
    });

    const sent = await client.v2.messages.sendPaced(built);
    expect(sent.outcomes.map((o) => o.outcome)).toEqual(built.map(() => "accepted"));
    for (const [i, outcome] of sent.outcomes.entries()) {
      if (outcome.outcome !== "accepted") continue;
      const message = await client.v2.messages.get(outcome.jobId);
      const { channelNumberId: _n, to: _to, ...kind } = built[i]!;
      expect(message, kind.type).toMatchObject({ direction: "outbound", to: CONTACT, ...kind });
    }
  });

  it("a built message the API refuses is an ApiError naming the rule; nothing is queued", async () => {
    const t = await createTenant();
    const client = t.client();
    const to: RecipientV2 = { channelNumberId: t.numberId, to: CONTACT };
    const refused = await client.v2.messages
      .send(
        messageV2.interactive(to, {
          type: "button",
          body: "Pick one",
          buttons: [1, 2, 3, 4].map((n) => ({ id: `b${n}`, title: `Option ${n}` })),
        }),
      )
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).details).toEqual([
      expect.objectContaining({ path: "interactive.buttons", rule: "max" }),
    ]);
    expect(await client.v2.messages.list({ direction: "outbound" }).toArray()).toEqual([]);
  });

  it("types each kind by its own schema", () => {
    const to: RecipientV2 = { channelNumberId: "6f1c2c4e-8a57-4b5e-9d0e-2f8c9a1b7d33", toUserId: "US.1349" };
    // @ts-expect-error an image's caption is text
    messageV2.image(to, { link: "https://cdn.example.com/parcel.png", caption: 42 });
    // @ts-expect-error a reaction is not an image
    messageV2.image(to, { messageId: "x", emoji: "👍" });
    // @ts-expect-error a kind without the object of its name
    const missing: SendMessageOfKind<"location"> = { ...to, type: "location" };
    // @ts-expect-error to and toUserId, both
    const both: RecipientV2 = { channelNumberId: "x", to: CONTACT, toUserId: "US.1349" };
    expect([missing, both]).toHaveLength(2);
    expect(messageV2.location(to, { latitude: 0, longitude: 0 })).toEqual({
      ...to,
      type: "location",
      location: { latitude: 0, longitude: 0 },
    });
  });
});
