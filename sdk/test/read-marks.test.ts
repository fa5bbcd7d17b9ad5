import { describe, expect, it } from "vitest";
import { ApiError } from "../src/index.js";
import { createTenant } from "./helpers/tenant.js";

// client.v2.messages.markRead against the Worker, on a sandbox number: a user's message marked read
// with the typing indicator, once (a repeat answers the first mark); what it refuses.

const CONTACT = "5511999998888";

describe("client.v2.messages.markRead", () => {
  it("marks a user's message read, with the typing indicator; marking it again answers the first mark", async () => {
    const t = await createTenant();
    const client = t.client();
    const { messageId } = await client.sandbox.injectInbound({
      channelNumberId: t.numberId,
      from: CONTACT,
      text: { body: "Is my table booked?" },
    });
    const mark = await client.v2.messages.markRead(messageId, { typing: true });
    expect(mark).toMatchObject({ messageId, typingIndicator: true });
    expect(Date.parse(mark.readAt)).not.toBeNaN();
    expect(await client.v2.messages.markRead(messageId)).toEqual(mark);
  });

  it("refuses an outbound message's id (400 inbound_only) and an unknown one (404), without retrying", async () => {
    const t = await createTenant();
    const client = t.client();
    const sent = await client.v2.messages.send({ channelNumberId: t.numberId, to: CONTACT, text: { body: "Hi" } });
    const outbound = await client.v2.messages.markRead(sent.jobId).catch((e: unknown) => e);
    expect(outbound).toBeInstanceOf(ApiError);
    expect(outbound).toMatchObject({ status: 400, code: "invalid_request" });
    expect((outbound as ApiError).details).toEqual([expect.objectContaining({ path: "id", rule: "inbound_only" })]);
    const unknown = await client.v2.messages.markRead(crypto.randomUUID()).catch((e: unknown) => e);
    expect(unknown).toMatchObject({ status: 404, code: "not_found" });
  });
});
