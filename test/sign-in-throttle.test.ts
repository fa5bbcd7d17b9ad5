import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { hit, resetThrottle } from "../src/durable-objects/sign-in-throttle";

const MINUTE = 60_000;
const key = () => `test:${crypto.randomUUID()}`;

afterEach(() => vi.useRealTimers());

describe("sign-in throttle (Durable Object)", () => {
  it("allows `limit` attempts in the window, then says how long to wait", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const k = key();
    const t0 = Date.now();
    for (let i = 0; i < 3; i++) {
      vi.setSystemTime(t0 + i * MINUTE);
      expect(await hit(env, k, 3, 15 * MINUTE)).toEqual({ allowed: true, retryAfterMs: 0 });
    }
    vi.setSystemTime(t0 + 5 * MINUTE);
    // The first attempt (t0) leaves the window at t0 + 15 min: 10 minutes from now.
    expect(await hit(env, k, 3, 15 * MINUTE)).toEqual({ allowed: false, retryAfterMs: 10 * MINUTE });
  });

  it("slides: an attempt is allowed again once the oldest counted one leaves the window, and refusals are not counted", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const k = key();
    const t0 = Date.now();
    await hit(env, k, 2, 10 * MINUTE);
    vi.setSystemTime(t0 + 4 * MINUTE);
    await hit(env, k, 2, 10 * MINUTE);
    for (let i = 0; i < 5; i++) expect((await hit(env, k, 2, 10 * MINUTE)).allowed).toBe(false);
    vi.setSystemTime(t0 + 10 * MINUTE + 1);
    expect((await hit(env, k, 2, 10 * MINUTE)).allowed).toBe(true);
    // Two counted again (t0+4 min and now): the next waits for t0+4 min to leave.
    expect(await hit(env, k, 2, 10 * MINUTE)).toEqual({ allowed: false, retryAfterMs: 4 * MINUTE - 1 });
  });

  it("keys are independent, and reset forgets a key", async () => {
    const [a, b] = [key(), key()];
    expect((await hit(env, a, 1, MINUTE)).allowed).toBe(true);
    expect((await hit(env, a, 1, MINUTE)).allowed).toBe(false);
    expect((await hit(env, b, 1, MINUTE)).allowed).toBe(true);
    await resetThrottle(env, a);
    expect((await hit(env, a, 1, MINUTE)).allowed).toBe(true);
  });
});
