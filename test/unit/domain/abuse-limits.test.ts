import { describe, expect, it } from "vitest";
import { ABUSE_LIMITS, bucket, perKeyBucket, scopes } from "../../../src/domain/abuse-limits";

describe("the per-key bucket of a public API request", () => {
  it("is the read budget for reads, deletes and the webhook triggers (spent before the webhook is looked up)", () => {
    for (const [method, path] of [
      ["GET", "/messages"],
      ["GET", "/webhooks/w_1/deliveries"],
      ["POST", "/webhooks/w_1/test"],
      ["POST", "/webhooks/w_1/deliveries/d_1/replay"],
      ["DELETE", "/webhooks/w_1"],
    ] as const) {
      expect(perKeyBucket(method, path), `${method} ${path}`).toEqual({ name: "read", ...ABUSE_LIMITS.read });
    }
  });

  it("is none where the operation applies its own limits, and the sandbox's for its injected inbound messages", () => {
    expect(perKeyBucket("POST", "/messages")).toBeNull();
    expect(perKeyBucket("POST", "/webhooks")).toBeNull();
    expect(perKeyBucket("POST", "/channel-numbers")).toBeNull();
    expect(perKeyBucket("POST", "/sandbox/test-contacts")).toBeNull();
    expect(perKeyBucket("DELETE", "/sandbox/test-contacts/5511999998888")).toBeNull();
    expect(perKeyBucket("POST", "/sandbox/inbound")).toEqual({ name: "sandboxInbound", limit: 60, periodSeconds: 60 });
    // A read mark spends the workspace's read-mark budget (routes/v2/read-marks.ts).
    expect(perKeyBucket("POST", "/messages/6f1c2c4e-0000-4000-8000-000000000001/read")).toBeNull();
    // Only those exact operations: a read of the same path keeps the read budget.
    expect(perKeyBucket("GET", "/sandbox/test-contacts")?.name).toBe("read");
  });
});

describe("buckets and scopes", () => {
  it("name a bucket per limit, and per suffix (a webhook's own budget)", () => {
    expect(bucket("webhookTest", "w_1")).toEqual({ name: "webhookTest:w_1", limit: 5, periodSeconds: 60 });
    expect(bucket("webhookTest").name).toBe("webhookTest");
  });

  it("give an API key one scope for its API budgets and its per-caller ones; a member another", () => {
    expect(scopes.actor({ type: "api_key", id: "k1" })).toBe(scopes.apiKey("k1"));
    expect(scopes.actor({ type: "member", id: "k1" })).toBe("member:k1");
    expect(new Set([scopes.apiKey("x"), scopes.workspace("x"), scopes.clientAddress("x")]).size).toBe(3);
  });
});
