import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** @typedef {{ source: string, dependencies: { resolved: string }[] }} Module */

/** Every module of src/ and what it imports (type-only imports too), as the dependency check sees them. */
function cruise() {
  const out = execFileSync(
    process.execPath,
    [
      `${ROOT}node_modules/dependency-cruiser/bin/dependency-cruiser.mjs`,
      "src",
      "--output-type",
      "json",
      "--no-ignore-known",
    ],
    { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );
  return /** @type {{ modules: Module[] }} */ (JSON.parse(out)).modules;
}

/** @param {Module[]} modules @param {(to: string) => boolean} imported */
const importersOf = (modules, imported) =>
  modules
    .filter((m) => m.dependencies.some((d) => imported(d.resolved)))
    .map((m) => m.source)
    .sort();

// The engine is the one way to the Durable Objects: whatever baseline the ratchet holds, these hold exactly.
describe("the engine's front door", () => {
  /** @type {Module[]} */
  let modules;
  beforeAll(() => {
    modules = cruise();
  });

  it("is the only holder of the objects' stubs outside the objects: one module of the engine", () => {
    const holders = importersOf(modules, (to) => to === "src/durable-objects/stubs.ts").filter(
      (from) => !from.startsWith("src/durable-objects/"),
    );
    expect(holders).toEqual(["src/engine/objects.ts"]);
    expect(importersOf(modules, (to) => to === "src/engine/objects.ts").every((f) => f.startsWith("src/engine/"))).toBe(
      true,
    );
  });

  it("is what routes, pages, use cases, consumers and jobs call: none of them imports an object's module", () => {
    const entries = /^src\/(routes|dashboard|features|middleware|queue|scheduled)\/|^src\/app\.ts$/;
    const reaching = importersOf(modules, (to) => to.startsWith("src/durable-objects/")).filter((from) =>
      entries.test(from),
    );
    expect(reaching).toEqual([]);
  });
});
