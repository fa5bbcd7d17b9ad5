import { describe, expect, it } from "vitest";
import { illFormedStringPath, isWellFormed } from "../../../src/lib/well-formed";

const HIGH = "\uD83D";
const LOW = "\uDE00";

describe("well-formed UTF-16", () => {
  it("accepts surrogate pairs and refuses a lone surrogate of either half", () => {
    expect(isWellFormed(`smile ${HIGH}${LOW}`)).toBe(true);
    expect(isWellFormed(`a${HIGH}b`)).toBe(false);
    expect(isWellFormed(`a${LOW}b`)).toBe(false);
    expect(isWellFormed(`${LOW}${HIGH}`)).toBe(false);
    expect(isWellFormed(HIGH)).toBe(false);
  });

  it("names the path of the first ill-formed string in a parsed body", () => {
    expect(illFormedStringPath({ to: "1", text: { body: `x${HIGH}` } })).toBe("text.body");
    expect(illFormedStringPath({ items: [{ name: "ok" }, { name: "ok" }, { name: LOW }] })).toBe("items.2.name");
    expect(illFormedStringPath(`${HIGH}`)).toBe("(body)");
  });

  it("names an ill-formed field name by its object, with the bad part replaced", () => {
    expect(illFormedStringPath({ text: { [`bo${HIGH}dy`]: "x" } })).toBe("text.bo\uFFFDdy (field name)");
  });

  it("finds nothing in a well-formed body, whatever its non-string values", () => {
    expect(illFormedStringPath({ a: 1, b: null, c: true, d: [1, "x", { e: `${HIGH}${LOW}` }] })).toBeNull();
  });
});
