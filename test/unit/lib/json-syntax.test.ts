import { describe, expect, it } from "vitest";
import { jsonSyntaxError } from "../../../src/lib/json-syntax";

describe("where a JSON text stops being JSON", () => {
  it("is nothing for a text that parses", () => {
    expect(jsonSyntaxError('{"a": [1, 2]}')).toBeNull();
  });

  it("gives the offset and the line and column a person looks at, without restating the offset in the reason", () => {
    // A trailing comma: the runtime names the offset of the closing brace.
    const text = '{\n  "to": "123",\n  "text": "hi",\n}';
    const err = jsonSyntaxError(text);
    expect(err).toMatchObject({ position: text.length - 1, line: 4, column: 1 });
    expect(err?.reason).not.toMatch(/position|line \d+ column/);
    expect(err?.reason.length).toBeGreaterThan(0);
  });

  it("counts the column from the last line break before the offset", () => {
    const text = '{"a": 1,\n   "b": 2,   }';
    expect(jsonSyntaxError(text)).toMatchObject({ position: text.length - 1, line: 2, column: 14 });
  });

  it("points a body cut short at its end", () => {
    const text = '{"to": "123", "text": "hi"';
    expect(jsonSyntaxError(text)).toMatchObject({ position: text.length, line: 1, column: text.length + 1 });
  });

  it("points an empty body at its start", () => {
    expect(jsonSyntaxError("")).toMatchObject({ position: 0, line: 1, column: 1 });
  });
});
