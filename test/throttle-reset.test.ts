import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { resetBuckets, takeToken } from "../src/lib/throttle";

const scope = () => `test:${crypto.randomUUID()}`;
const bucket = { name: "sign-in", limit: 1, periodSeconds: 60 };

describe("the shared throttle", () => {
  it("keeps scopes independent, and a reset refills a scope's bucket at once", async () => {
    const [a, b] = [scope(), scope()];
    expect((await takeToken(env, a, [bucket])).allowed).toBe(true);
    expect((await takeToken(env, a, [bucket])).allowed).toBe(false);
    expect((await takeToken(env, b, [bucket])).allowed).toBe(true);
    await resetBuckets(env, a, ["sign-in"]);
    expect((await takeToken(env, a, [bucket])).allowed).toBe(true);
  });
});
