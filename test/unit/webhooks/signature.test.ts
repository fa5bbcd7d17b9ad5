import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { newWebhookSecret, signatureHeaders } from "../../../src/webhooks/signature";

describe("Standard Webhooks signatures", () => {
  it("a new secret is whsec_ and the base64 of 32 random bytes, a different one each time", () => {
    const a = newWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(atob(a.slice("whsec_".length))).toHaveLength(32);
    expect(newWebhookSecret()).not.toBe(a);
  });

  it("are what the Standard Webhooks library verifies, over id, timestamp and the exact body", async () => {
    const secret = newWebhookSecret();
    const body = '{"type":"message.status","data":{"id":"m_1"}}';
    const now = Math.floor(Date.now() / 1000);
    const headers = await signatureHeaders(secret, "evt_1", now, body);
    expect(headers).toMatchObject({ "webhook-id": "evt_1", "webhook-timestamp": String(now) });
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    // Another body, id or secret does not verify.
    expect(() => new Webhook(secret).verify(body.replace("m_1", "m_2"), headers)).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...headers, "webhook-id": "evt_2" })).toThrow();
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
  });

  it("refuse a secret without the whsec_ prefix rather than sign with the wrong key", async () => {
    await expect(signatureHeaders("c2VjcmV0", "evt_1", 0, "{}")).rejects.toThrow(/whsec_/);
  });
});
