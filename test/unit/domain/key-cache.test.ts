import { describe, expect, it } from "vitest";
import { KEY_CACHE_MAX_ENTRIES, cachedPrincipal, rememberPrincipal } from "../../../src/domain/key-cache";

describe("key cache", () => {
  it("a flood of unknown keys never evicts a known key", () => {
    rememberPrincipal("known-hash", { workspaceId: "w", keyId: "k", role: "developer" });
    for (let i = 0; i <= KEY_CACHE_MAX_ENTRIES; i++) rememberPrincipal(`unknown-${i}`, null);
    expect(cachedPrincipal("known-hash")).toEqual({ workspaceId: "w", keyId: "k", role: "developer" });
    // The oldest unknown entry made room for the newest.
    expect(cachedPrincipal("unknown-0")).toBeUndefined();
    expect(cachedPrincipal(`unknown-${KEY_CACHE_MAX_ENTRIES}`)).toBeNull();
  });
});
