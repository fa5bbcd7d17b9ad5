import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { peekToken, takeToken } from "../../src/lib/throttle-client";
import { fakeClock } from "../helpers/clock";
import { testThrottle } from "../helpers/objects";

const scope = () => `test:${crypto.randomUUID()}`;
const bucket = { name: "sign-in", limit: 1, periodSeconds: 60 };

describe("the shared throttle", () => {
  it("keeps scopes independent", async () => {
    const [a, b] = [scope(), scope()];
    expect((await takeToken(env, a, [bucket])).allowed).toBe(true);
    expect((await takeToken(env, a, [bucket])).allowed).toBe(false);
    expect((await takeToken(env, b, [bucket])).allowed).toBe(true);
  });
});

describe("a throttle object that emptied its storage", () => {
  it("keeps answering after its cleanup alarm deleted everything (found by npm run soak: 500s until the object was evicted)", async () => {
    const start = Date.UTC(2042, 5, 1);
    const clock = fakeClock(start);
    const s = scope();
    expect((await takeToken(env, s, [bucket])).allowed).toBe(true);
    const stub = testThrottle(s);
    // Past the bucket's refill and the cleanup slack: the alarm finds every bucket full and deletes the storage.
    clock.set(start + 10 * 60_000);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.tableNames()).not.toContain("buckets");

    // The same live instance: reads of the empty scope, then takes, work as on a fresh scope.
    expect((await peekToken(env, s, [bucket])).allowed).toBe(true);
    expect((await takeToken(env, s, [bucket])).allowed).toBe(true);
    expect((await takeToken(env, s, [bucket])).allowed).toBe(false);
  });
});

describe("a clock that went back", () => {
  it("treats a bucket emptied 'in the future' as full instead of locking the caller out for the size of the jump", async () => {
    const start = Date.UTC(2042, 7, 1);
    const clock = fakeClock(start);
    const s = scope();
    expect((await takeToken(env, s, [bucket])).allowed).toBe(true);
    expect((await takeToken(env, s, [bucket])).allowed).toBe(false);
    // The object moves to a machine whose clock is an hour behind: its stored state lies more than a period ahead.
    clock.set(start - 3_600_000);
    const after = await takeToken(env, s, [bucket]);
    expect(after.allowed).toBe(true);
    expect(after.retryAfterMs).toBe(0);
    // And the bucket works normally from the new clock on.
    expect((await takeToken(env, s, [bucket])).allowed).toBe(false);
  });
});
