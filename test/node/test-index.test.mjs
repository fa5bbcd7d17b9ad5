import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const TEST = fileURLToPath(new URL("../", import.meta.url));
const readme = readFileSync(`${TEST}README.md`, "utf8");

/** Every test file under test/, relative to it, in the four projects' shapes (*.test.ts, *.test.mjs). */
const testFiles = readdirSync(TEST, { recursive: true, encoding: "utf8" })
  .map((f) => f.split("\\").join("/"))
  .filter((f) => /\.test\.(ts|mjs)$/.test(f))
  .sort();

/** The index's entries: a list item that opens with a test file's path, then what it pins. */
const entries = [...readme.matchAll(/^- `([^`]+\.test\.(?:ts|mjs))` — (.*)$/gm)].map((m) => ({
  path: m[1] ?? "",
  pins: (m[2] ?? "").trim(),
}));
const listed = entries.map((e) => e.path);

describe("test/README.md", () => {
  it("lists every test file under test/", () => {
    const missing = testFiles.filter((f) => !listed.includes(f));
    expect(missing, "test files without a line in test/README.md (add one: what the file pins)").toEqual([]);
  });

  it("lists no file that is not there, and none twice", () => {
    const absent = listed.filter((f) => !testFiles.includes(f));
    expect(absent, "lines of test/README.md naming a file that does not exist").toEqual([]);
    expect(listed.filter((f, i) => listed.indexOf(f) !== i)).toEqual([]);
  });

  it("says for each file what it pins", () => {
    expect(entries.filter((e) => e.pins.length < 20).map((e) => e.path)).toEqual([]);
  });

  it("keeps the behaviour suites in their areas: none flat in test/", () => {
    expect(testFiles.filter((f) => !f.includes("/"))).toEqual([]);
  });
});
