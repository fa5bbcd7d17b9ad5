import { describe, expect, it } from "vitest";
import { categorizeNetworkError, describeNetworkError } from "../../../src/webhooks/network-error";

const named = (name: string, message = "") => Object.assign(new Error(message), { name });

describe("a failed webhook call as the delivery log shows it", () => {
  it("an aborted or timed-out call is a timeout, whatever its message", () => {
    expect(categorizeNetworkError(named("TimeoutError", "certificate"))).toBe("timeout");
    expect(categorizeNetworkError(named("AbortError"))).toBe("timeout");
    expect(categorizeNetworkError(new Error("The operation timed out"))).toBe("timeout");
  });

  it("is put in one category by the first pattern its message matches", () => {
    expect(categorizeNetworkError(new Error("getaddrinfo ENOTFOUND hooks.example"))).toBe("dns");
    expect(categorizeNetworkError(new Error("TLS connection reset by peer"))).toBe("tls");
    expect(categorizeNetworkError(new Error("connect ECONNREFUSED 10.0.0.1:443"))).toBe("connect");
    expect(categorizeNetworkError(new Error("socket hang up"))).toBe("reset");
    expect(categorizeNetworkError(new Error("internal error; reference = 4kq2"))).toBe("network");
    expect(categorizeNetworkError("not an Error")).toBe("network");
  });

  it("is said in a fixed sentence that never repeats the runtime's message", () => {
    expect(describeNetworkError("dns")).toBe("Network error (dns): the host name could not be resolved.");
    for (const c of ["dns", "connect", "tls", "timeout", "reset", "network"] as const) {
      expect(describeNetworkError(c)).toMatch(new RegExp(`^Network error \\(${c}\\): [a-z].+\\.$`));
    }
  });
});
