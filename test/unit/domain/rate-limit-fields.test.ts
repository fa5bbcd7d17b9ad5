import { describe, expect, it } from "vitest";
import { SEND_RATE_LIMIT_POLICY, sendRateLimitHeaders } from "../../../src/domain/rate-limit-fields";

const POLICY = '"number";q=2;w=1, "workspace";q=1200;w=60';

describe("rate-limit fields of POST /messages", () => {
  it("names the policy of the limit closest to refusing", () => {
    expect(SEND_RATE_LIMIT_POLICY).toBe(POLICY);
    expect(sendRateLimitHeaders({ scope: "workspace", limit: 1200, remaining: 0, resetSeconds: 42 })).toMatchObject({
      RateLimit: '"workspace";r=0;t=42',
      "RateLimit-Limit": "1200",
      "RateLimit-Reset": "42",
    });
    expect(sendRateLimitHeaders({ scope: "number", limit: 2, remaining: 1, resetSeconds: 1 }).RateLimit).toBe(
      '"number";r=1;t=1',
    );
  });
});
