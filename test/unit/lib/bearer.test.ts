import { describe, expect, it } from "vitest";
import { bearerToken, unauthorized } from "../../../src/lib/bearer";

describe("Authorization: Bearer", () => {
  it("takes the token after a case-insensitive scheme and one or more spaces", () => {
    expect(bearerToken("Bearer abc.DEF-123")).toBe("abc.DEF-123");
    expect(bearerToken("bearer   abc")).toBe("abc");
    expect(bearerToken("BEARER abc")).toBe("abc");
  });

  it("refuses another scheme, no token, a token with a space or a control character, and a header over the cap", () => {
    expect(bearerToken(undefined)).toBeNull();
    expect(bearerToken("Basic abc")).toBeNull();
    expect(bearerToken("Bearer")).toBeNull();
    expect(bearerToken("Bearer ")).toBeNull();
    expect(bearerToken("Bearer a b")).toBeNull();
    expect(bearerToken("Bearer a\tb")).toBeNull();
    expect(bearerToken("Bearer\tabc")).toBeNull();
    expect(bearerToken(`Bearer ${"a".repeat(506)}`)).toBeNull();
    expect(bearerToken(`Bearer ${"a".repeat(506)}`, 1024)).toBe("a".repeat(506));
  });

  it("challenges without an error when nothing was sent, and with invalid_token when it was refused", () => {
    expect(unauthorized("m", "api", false).headers).toEqual({ "WWW-Authenticate": 'Bearer realm="api"' });
    expect(unauthorized("m", "api", true).headers).toEqual({
      "WWW-Authenticate": 'Bearer realm="api", error="invalid_token"',
    });
  });
});
