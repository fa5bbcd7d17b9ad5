#!/usr/bin/env node
// The API reference at /docs renders with Swagger UI, served from our own static
// assets (public/static/docs/vendor/), never from a CDN. The files are copies of the
// pinned devDependency swagger-ui-dist:
//   npm run docs:ui            copy them (after upgrading swagger-ui-dist)
//   npm run docs:ui -- --check fail if the committed copies differ from node_modules (CI)
// Node built-ins only.
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SOURCE = join(ROOT, "node_modules", "swagger-ui-dist");
const TARGET = join(ROOT, "public", "static", "docs", "vendor");
const FILES = ["swagger-ui-bundle.js", "swagger-ui.css", "LICENSE", "NOTICE"];

const check = process.argv.includes("--check");
if (!existsSync(SOURCE)) {
  console.error("[docs-ui] node_modules/swagger-ui-dist is missing: run `npm install` first.");
  process.exit(1);
}
mkdirSync(TARGET, { recursive: true });
const stale = [];
for (const file of FILES) {
  const from = join(SOURCE, file);
  const to = join(TARGET, file);
  if (check) {
    if (!existsSync(to) || !readFileSync(from).equals(readFileSync(to))) stale.push(file);
  } else {
    copyFileSync(from, to);
  }
}
if (check && stale.length > 0) {
  console.error(
    `[docs-ui] public/static/docs/vendor/ differs from swagger-ui-dist for: ${stale.join(", ")}. Run \`npm run docs:ui\` and commit.`,
  );
  process.exit(1);
}
console.log(
  check
    ? "[docs-ui] vendored Swagger UI matches swagger-ui-dist."
    : `[docs-ui] copied ${FILES.join(", ")} to public/static/docs/vendor/.`,
);
