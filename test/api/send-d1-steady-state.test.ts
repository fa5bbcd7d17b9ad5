import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { KEY_CACHE_TTL_MS } from "../../src/domain/key-cache";
import { BASE } from "../helpers/http";
import { createTenant } from "../helpers/fixtures";
import { textMessage } from "../helpers/send";
import { fakeClock } from "../helpers/clock";

/** A send through the real fetch handler with Server-Timing on: its status and the D1 statements the Worker ran. */
async function sendCounted(key: string, body: unknown) {
  const ctx = createExecutionContext();
  const headers = {
    Authorization: `Bearer ${key}`,
    "Content-Type": "application/json",
    "Idempotency-Key": crypto.randomUUID(),
  };
  const request = new Request(`${BASE}/api/v1/messages`, { method: "POST", headers, body: JSON.stringify(body) });
  const res = await worker.fetch(request, { ...env, SERVER_TIMING: "true" }, ctx);
  await waitOnExecutionContext(ctx);
  const d1 = /d1;desc="D1 statements";dur=(\d+)/.exec(res.headers.get("Server-Timing") ?? "")?.[1];
  return { status: res.status, d1Statements: Number(d1) };
}

// The send path keeps D1 off the request: the workspace's quota and numbers live in its object, and
// the API key in the isolate's cache, read again from D1 once per key per KEY_CACHE_TTL_MS.
describe("a send in the steady state", () => {
  it("runs no D1 statement in the Worker while its key is cached, and one lookup when the cache entry expires", async () => {
    const clock = fakeClock(Date.UTC(2046, 4, 1));
    const t = await createTenant();
    const body = textMessage(t.numberId);
    // The first send may look the key up; from then on the key is this isolate's.
    expect((await sendCounted(t.key, body)).status).toBe(201);
    const warm = [];
    // Spaced so that the number's 2-per-second window never refuses, all within the cache's TTL.
    for (let i = 0; i < 4; i++) {
      clock.advance(1_000);
      warm.push(await sendCounted(t.key, body));
    }
    expect(warm).toEqual(warm.map(() => ({ status: 201, d1Statements: 0 })));

    clock.advance(KEY_CACHE_TTL_MS);
    expect(await sendCounted(t.key, body)).toEqual({ status: 201, d1Statements: 1 });
    clock.advance(1_000);
    expect(await sendCounted(t.key, body)).toEqual({ status: 201, d1Statements: 0 });
  });
});
