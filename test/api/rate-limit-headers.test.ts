import { describe, expect, it } from "vitest";
import { expectError } from "../helpers/http";
import { createTenant } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { fakeClockPerTest } from "../helpers/clock";

const clock = fakeClockPerTest(Date.UTC(2034, 7, 9, 10), (t) => t + 3_600_000);

const POLICY = '"number";q=2;w=1, "workspace";q=1200;w=60';

describe("rate-limit fields of POST /messages (draft-ietf-httpapi-ratelimit-headers, and the legacy fields)", () => {
  it("an accepted send names the policy closest to refusing and what is left of it", async () => {
    const t = await createTenant();
    const first = await send(t.key, crypto.randomUUID(), textMessage(t.numberId));
    expect(first.status).toBe(201);
    expect(first.headers.get("RateLimit-Policy")).toBe(POLICY);
    expect(first.headers.get("RateLimit")).toBe('"number";r=1;t=1');
    expect(first.headers.get("RateLimit-Limit")).toBe("2");
    expect(first.headers.get("RateLimit-Remaining")).toBe("1");
    expect(first.headers.get("RateLimit-Reset")).toBe("1");
    expect(first.headers.get("Retry-After")).toBeNull();
  });

  it("a 429 carries Retry-After with both field sets; a replay carries none", async () => {
    const t = await createTenant();
    const key = crypto.randomUUID();
    expect((await send(t.key, key, textMessage(t.numberId))).status).toBe(201);
    expect((await send(t.key, crypto.randomUUID(), textMessage(t.numberId))).status).toBe(201);
    clock.advance(400);
    const refused = await send(t.key, crypto.randomUUID(), textMessage(t.numberId));
    expect(refused.headers.get("Retry-After")).toBe("1");
    expect(refused.headers.get("RateLimit-Policy")).toBe(POLICY);
    expect(refused.headers.get("RateLimit")).toBe('"number";r=0;t=1');
    expect(refused.headers.get("RateLimit-Remaining")).toBe("0");
    await expectError(refused, 429, "rate_limit_exceeded");

    const replay = await send(t.key, key, textMessage(t.numberId));
    expect(replay.status).toBe(200);
    expect(replay.headers.get("RateLimit")).toBeNull();
  });
});
