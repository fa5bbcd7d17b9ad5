import { describe, expect, it } from "vitest";
import { ownContentOf, SendMessageRequestV2 } from "../../../src/domain/send-request-v2";

const NUMBER = "6f1c2c4e-8a57-4b5e-9d0e-2f8c9a1b7d33";
const valid = (body: unknown) => SendMessageRequestV2.parse(body);

describe("ownContentOf", () => {
  it("records a text send's body, with neither an operator payload nor details (as v1 records it)", () => {
    const request = valid({ channelNumberId: NUMBER, to: "5511999998888", text: { body: "Still here" } });
    expect(ownContentOf(request)).toEqual({ type: "text", body: "Still here", content: null, details: null });
  });

  it("leaves a template send to the check against the number's templates (null)", () => {
    const request = valid({
      channelNumberId: NUMBER,
      toUserId: "US.13491208655302741918",
      type: "template",
      template: { name: "order_update", language: "en_US" },
    });
    expect(ownContentOf(request)).toBeNull();
  });
});
