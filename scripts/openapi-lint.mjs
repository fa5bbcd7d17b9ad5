#!/usr/bin/env node
// `npm run openapi:lint`: writes the documents the Worker serves (v1 and v2) to temporary files and
// lints it with the pinned Redocly CLI (`recommended` rules, redocly.yaml). Fails on any
// error. Runs offline: telemetry and update checks are off.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { openApiDocument } from "./lib/openapi-document.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
// Both versions' documents: v1's (unchanged by v2) and v2's.
const dir = mkdtempSync(join(tmpdir(), "openapi-lint-"));
try {
  let status = 0;
  for (const version of /** @type {const} */ (["v1", "v2"])) {
    const file = join(dir, `openapi-${version}.json`);
    writeFileSync(file, JSON.stringify(await openApiDocument(version), null, 2));
    const cli = join(ROOT, "node_modules", "@redocly", "cli", "bin", "cli.js");
    const result = spawnSync(
      process.execPath,
      [cli, "lint", file, "--config", join(ROOT, "redocly.yaml"), "--format", "codeframe"],
      {
        cwd: ROOT,
        stdio: "inherit",
        env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
      },
    );
    status = status || (result.status ?? 1);
  }
  process.exitCode = status;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
