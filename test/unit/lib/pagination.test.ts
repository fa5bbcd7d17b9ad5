import { describe, expect, it } from "vitest";
import { ApiError } from "../../../src/lib/errors";
import { decodeCursor, encodeCursor, toPage } from "../../../src/lib/pagination";

describe("keyset cursors", () => {
  it("round-trip the sort key and id, URL-safe", () => {
    const c = { sortKey: "2026-11-22T18:35:47.287Z", id: "m_/+?" };
    const raw = encodeCursor(c);
    expect(raw).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(raw)).toEqual(c);
    expect(decodeCursor(undefined)).toBeUndefined();
  });

  it("refuse anything this API did not return with the uniform invalid_request naming cursor", () => {
    const forged = [
      "not base64 !",
      btoa("{}"),
      btoa(JSON.stringify(["a"])),
      btoa(JSON.stringify(["a", 1])),
      btoa(JSON.stringify(["a", "b", "c"])),
      "",
    ];
    for (const raw of forged) {
      let caught: unknown;
      try {
        decodeCursor(raw);
      } catch (err) {
        caught = err;
      }
      expect(caught, raw).toBeInstanceOf(ApiError);
      expect((caught as ApiError).code).toBe("invalid_request");
      expect((caught as ApiError).details?.[0]?.path).toBe("cursor");
    }
  });
});

describe("a page from limit + 1 rows", () => {
  const rows = [1, 2, 3].map((n) => ({ n }));
  const cursorOf = (r: { n: number }) => ({ sortKey: String(r.n), id: `id${r.n}` });

  it("has a next cursor at its last row when there was one row more", () => {
    const page = toPage(rows, 2, cursorOf, (r) => r.n);
    expect(page.data).toEqual([1, 2]);
    expect(decodeCursor(page.nextCursor!)).toEqual({ sortKey: "2", id: "id2" });
  });

  it("has no next cursor when the rows fit", () => {
    expect(toPage(rows, 3, cursorOf, (r) => r.n)).toEqual({ data: [1, 2, 3], nextCursor: null });
    expect(toPage([], 3, cursorOf, (r) => r)).toEqual({ data: [], nextCursor: null });
  });
});
