import { describe, expect, it } from "vitest";
import { clientAddress } from "../../../src/lib/client-address";

const from = (ip?: string) =>
  clientAddress(new Request("https://gateway.test/", { headers: ip === undefined ? {} : { "CF-Connecting-IP": ip } }));

describe("the caller's address as a throttling key", () => {
  it("is the IPv4 address as Cloudflare's edge set it", () => {
    expect(from("203.0.113.7")).toBe("203.0.113.7");
    expect(from(" 203.0.113.7 ")).toBe("203.0.113.7");
  });

  it("is the /64 of an IPv6 address, however it is written", () => {
    const key = "2001:db8:1:2::/64";
    expect(from("2001:db8:1:2::1")).toBe(key);
    expect(from("2001:0db8:0001:0002:ffff:ffff:ffff:ffff")).toBe(key);
    expect(from("2001:DB8:1:2:0:0:0:9")).toBe(key);
    expect(from("2001:db8:1:3::1")).not.toBe(key);
    expect(from("::1")).toBe("0:0:0:0::/64");
  });

  it("keeps a text that is not an IPv6 address as it came, and names a missing one", () => {
    expect(from("2001:db8::1::2")).toBe("2001:db8::1::2");
    expect(from("1:2:3")).toBe("1:2:3");
    expect(from("zzzz:db8:1:2::1")).toBe("zzzz:db8:1:2::1");
    expect(from(undefined)).toBe("unknown");
    expect(from("")).toBe("unknown");
  });
});
