import { describe, expect, it } from "vitest";
import { ApiError } from "../../../src/lib/errors";
import { encodeCursor } from "../../../src/lib/pagination";
import {
  TemplateFilters,
  matchesTemplate,
  templateCursor,
  templatePosition,
} from "../../../src/domain/template-filters";
import type { StoredTemplate } from "../../../src/domain/template";

const template = (over: Partial<StoredTemplate>): StoredTemplate => ({
  account: "sandbox",
  name: "order_update",
  language: "en_US",
  category: "UTILITY",
  status: "APPROVED",
  parameterFormat: "POSITIONAL",
  spec: { header: null, body: { text: "Order {{1}} is on its way.", params: ["1"] }, footer: null, buttons: [] },
  syncedAt: null,
  ...over,
});

describe("a template list's filters", () => {
  it("accept the operator's language codes and refuse others with what to send", () => {
    expect(TemplateFilters.safeParse({ language: "en_US" }).success).toBe(true);
    expect(TemplateFilters.safeParse({ language: "pt" }).success).toBe(true);
    const bad = TemplateFilters.safeParse({ language: "english" });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.message).toMatch(/en_US/);
    expect(TemplateFilters.safeParse({ status: "approved" }).success).toBe(false);
  });

  it("combine with AND, an absent filter matching anything", () => {
    const t = template({});
    expect(matchesTemplate(t, {})).toBe(true);
    expect(
      matchesTemplate(t, { status: "APPROVED", category: "UTILITY", language: "en_US", name: "order_update" }),
    ).toBe(true);
    expect(matchesTemplate(t, { status: "APPROVED", language: "pt_BR" })).toBe(false);
    expect(matchesTemplate(t, { name: "other" })).toBe(false);
    expect(matchesTemplate(t, { category: "MARKETING" })).toBe(false);
  });
});

describe("a template list's cursor", () => {
  it("names the last template's name, language and account, and reads back", () => {
    const position = { name: "a,b", language: "en_US", account: "waba_1" };
    expect(templatePosition(templateCursor(position))).toEqual(position);
    expect(templatePosition(undefined)).toBeNull();
  });

  it("refuses a cursor of another list, or of no list, as the caller's input", () => {
    const otherList = encodeCursor({ sortKey: "2026-11-01T00:00:00Z", id: "m_1" });
    const notAPair = encodeCursor({ sortKey: JSON.stringify(["only-name"]), id: "x" });
    for (const raw of [otherList, notAPair, "%%%"]) {
      expect(() => templatePosition(raw), raw).toThrow(ApiError);
    }
  });
});
