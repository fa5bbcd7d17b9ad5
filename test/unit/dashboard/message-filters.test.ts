import { describe, expect, it } from "vitest";
import { listHref, parseFilters, toLocalField } from "../../../src/dashboard/message-filters";

const NUMBER = "6f1c2c4e-8a57-4b5e-9d0e-2f8c9a1b7d33";

describe("the messages page's filters", () => {
  it("read phone numbers as people paste them, ids in any case, and form times as UTC", () => {
    const f = parseFilters({
      to: " +55 (11) 99999-8888 ",
      channelNumberId: NUMBER.toUpperCase(),
      createdAfter: "2026-11-01T10:30",
      createdBefore: "2026-11-02",
    });
    expect(f.ok).toBe(true);
    expect(f.values).toEqual({
      to: "5511999998888",
      channelNumberId: NUMBER,
      createdAfter: "2026-11-01T10:30:00Z",
      createdBefore: "2026-11-02T00:00:00Z",
    });
    expect(parseFilters({ createdAfter: "2026-11-01T10:30:15.5" }).values.createdAfter).toBe("2026-11-01T10:30:15.5Z");
  });

  it("treat an empty field as any, and default to 50 a page", () => {
    const f = parseFilters({ direction: "", status: "  ", limit: "" });
    expect(f).toMatchObject({ ok: true, values: {}, limit: "50" });
  });

  it("refuse what the API refuses, each problem beside its own field, once", () => {
    const f = parseFilters({ direction: "outbound", to: "5511", from: "5522", channelNumberId: "nope", limit: "500" });
    expect(f.ok).toBe(false);
    if (f.ok) return;
    expect(Object.keys(f.errors).sort()).toEqual(["channelNumberId", "from", "limit"]);
    // from breaks two rules here (both given, and outbound): the first is shown.
    expect(f.errors.from).toMatch(/not both/);
    // The values are kept as given (tidied), for the form to show them again.
    expect(f.values).toMatchObject({ to: "5511", from: "5522", channelNumberId: "nope" });
    expect(f.limit).toBe("500");
  });

  it("link to the list with the same filters, leaving out the default page size and empty parts", () => {
    expect(listHref({}, "50")).toBe("/dashboard/messages");
    expect(listHref({ status: "failed", to: "5511" }, "20", "abc")).toBe(
      "/dashboard/messages?status=failed&to=5511&limit=20&cursor=abc",
    );
  });

  it("show an instant in a datetime-local field as UTC to the second, and nothing for what is not one", () => {
    expect(toLocalField("2026-11-01T10:30:15.123Z")).toBe("2026-11-01T10:30:15");
    expect(toLocalField("yesterday")).toBe("");
    expect(toLocalField(undefined)).toBe("");
  });
});
