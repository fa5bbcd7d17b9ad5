import { describe, expect, it } from "vitest";
import {
  archivePrefix,
  dayNumber,
  dayString,
  manifestKey,
  partKey,
} from "../../../../src/durable-objects/history/archive-keys";

describe("archive keys", () => {
  it("name UTC days both ways", () => {
    const day = dayNumber("2026-11-27");
    expect(day).toBe(Date.UTC(2026, 10, 27) / 86_400_000);
    expect(dayString(day!)).toBe("2026-11-27");
    expect(dayNumber("1970-01-01")).toBe(0);
  });

  it("read no day from what is not a real date", () => {
    for (const text of ["2026-02-30", "2026-13-01", "2026-1-01", "2026-11-27T00:00:00Z", "", "../x"]) {
      expect(dayNumber(text), text).toBeNull();
    }
  });

  it("keep each workspace under its own prefix, a day's parts in order before its manifest", () => {
    const day = dayNumber("2026-11-27")!;
    expect(partKey("w1", day, 7)).toBe("messages/w1/2026-11-27/part-00007.ndjson.gz");
    expect(manifestKey("w1", day)).toBe("messages/w1/2026-11-27/manifest.json");
    expect(partKey("w1", day, 10) > partKey("w1", day, 9)).toBe(true);
    expect(partKey("w10", day, 0).startsWith(archivePrefix("w1"))).toBe(false);
  });
});
