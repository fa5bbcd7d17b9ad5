import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { resetBuckets, takeToken } from "../src/lib/throttle";

const scope = () => `test:${crypto.randomUUID()}`;
const bucket = { name: "sign-in", limit: 1, periodSeconds: 60 };

afterEach(() => {
  vi.useRealTimers();
});

describe("the shared throttle", () => {
  it("keeps scopes independent, and a reset refills a scope's bucket at once", async () => {
    const [a, b] = [scope(), scope()];
    expect((await takeToken(env, a, [bucket])).allowed).toBe(true);
    expect((await takeToken(env, a, [bucket])).allowed).toBe(false);
    expect((await takeToken(env, b, [bucket])).allowed).toBe(true);
    await resetBuckets(env, a, ["sign-in"]);
    expect((await takeToken(env, a, [bucket])).allowed).toBe(true);
  });

  it("keeps limiting after its cleanup alarm deleted an idle scope's storage (the object stays in memory)", async () => {
    const s = scope();
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now());
    expect((await takeToken(env, s, [bucket])).allowed).toBe(true);
    // Every bucket is full again: the alarm deletes the rows, then the whole storage.
    vi.setSystemTime(Date.now() + 5 * 60_000);
    expect(await runDurableObjectAlarm(env.THROTTLE.get(env.THROTTLE.idFromName(s)))).toBe(true);
    expect((await takeToken(env, s, [bucket])).allowed).toBe(true);
    expect((await takeToken(env, s, [bucket])).allowed).toBe(false);
  });
});
