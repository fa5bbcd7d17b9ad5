import { describe, expect, it } from "vitest";
import { newJobId, nextJobId, uuidV7Time } from "../../../src/lib/job-id";

describe("nextJobId", () => {
  it("within one millisecond, each id sorts after the one before (acceptance order), and names that millisecond", () => {
    const at = Date.UTC(2050, 0, 1, 12);
    let previous: string | null = null;
    const ids: string[] = [];
    for (let i = 0; i < 1_000; i++) ids.push((previous = nextJobId(at, previous)));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(uuidV7Time(id)).toBe(at);
    }
  });

  it("carries the increment across the random bits and keeps the version and variant digits", () => {
    const at = 1_700_000_000_000;
    const hex = at.toString(16).padStart(12, "0");
    const base = `${hex.slice(0, 8)}-${hex.slice(8, 12)}`;
    // The 62 bits after the variant all set: the carry goes into the 12 bits after the version digit.
    expect(nextJobId(at, `${base}-7abc-bfff-ffffffffffff`)).toBe(`${base}-7abd-8000-000000000000`);
    expect(nextJobId(at, `${base}-7000-8000-000000000000`)).toBe(`${base}-7000-8000-000000000001`);
    // Every random bit set: the next millisecond's id.
    expect(uuidV7Time(nextJobId(at, `${base}-7fff-bfff-ffffffffffff`))).toBe(at + 1);
  });

  it("another millisecond (or no earlier id) gets a random id of its own", () => {
    const at = Date.UTC(2050, 0, 1, 12);
    const earlier = newJobId(at - 1);
    const id = nextJobId(at, earlier);
    expect(uuidV7Time(id)).toBe(at);
    expect(id > earlier).toBe(true);
    expect(uuidV7Time(nextJobId(at, null))).toBe(at);
  });
});
