#!/usr/bin/env node
// `npm run check:measure` (part of `npm run check`): the measurement package stays light beside what it
// measures. Fails when the TypeScript under bench/ (every .ts file, configs included) exceeds 10% of the
// lines under src/ — the share docs/architecture.md states for bench/. A new bench pays its way by
// making another lighter or by replacing one.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const MAX_SHARE = 0.1;

/**
 * Lines (as `wc -l` counts them) of the files under `dir` whose name `keep` accepts.
 * @param {string} dir @param {(name: string) => boolean} keep
 */
function lines(dir, keep) {
  let n = 0;
  for (const entry of readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !keep(entry.name)) continue;
    n += readFileSync(join(entry.parentPath, entry.name), "utf8").split("\n").length - 1;
  }
  return n;
}

const src = lines("src", () => true);
const bench = lines("bench", (name) => name.endsWith(".ts"));
const share = bench / src;
const line = `bench/ ${bench} lines of TypeScript, src/ ${src} lines: ${(100 * share).toFixed(1)}% (at most ${100 * MAX_SHARE}%)`;
if (share > MAX_SHARE) {
  console.error(`check:measure: ${line}`);
  process.exit(1);
}
console.log(`check:measure: ${line}`);
