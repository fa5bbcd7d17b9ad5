import { describe, expect, it } from "vitest";
import { hashPassword, needsRehash, PASSWORD_PARAMS, verifyPassword } from "../../../src/lib/password";

// Made with the reference implementation (Debian's `argon2` CLI):
//   echo -n "correct horse battery staple" | argon2 somesalt16bytes! -id -t 2 -k 19456 -p 1 -l 32 -e
const REFERENCE = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQxNmJ5dGVzIQ$W2/hNMtQKxyFQI3cOFyMdL9hfH0kK/3DKouGLtcZUyw";

describe("password hashing (argon2id)", () => {
  it("verifies a hash made by the reference implementation, and refuses a wrong password", async () => {
    expect(await verifyPassword("correct horse battery staple", REFERENCE)).toBe(true);
    expect(await verifyPassword("correct horse battery stapler", REFERENCE)).toBe(false);
  });

  it("stores the OWASP minimum parameters with a random salt in a PHC string", async () => {
    expect(PASSWORD_PARAMS).toEqual({ m: 19_456, t: 2, p: 1 });
    const [a, b] = [await hashPassword("same password here"), await hashPassword("same password here")];
    expect(a).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword("same password here", a)).toBe(true);
    expect(needsRehash(a)).toBe(false);
  });

  it("keeps verifying hashes with other parameters, and asks to rehash weaker ones", async () => {
    const weak = await hashPassword("an older password", { m: 1024, t: 1, p: 1 });
    expect(weak).toContain("$m=1024,t=1,p=1$");
    expect(await verifyPassword("an older password", weak)).toBe(true);
    expect(needsRehash(weak)).toBe(true);
  });

  it("refuses malformed or absurd stored hashes, and a missing one", async () => {
    expect(await verifyPassword("x", "plaintext")).toBe(false);
    expect(await verifyPassword("x", REFERENCE.replace("m=19456", "m=99999999"))).toBe(false);
    expect(await verifyPassword("correct horse battery staple", null)).toBe(false);
    expect(
      needsRehash("$argon2i$v=19$m=19456,t=2,p=1$c29tZXNhbHQxNmJ5dGVzIQ$W2/hNMtQKxyFQI3cOFyMdL9hfH0kK/3DKouGLtcZUyw"),
    ).toBe(true);
  });
});
