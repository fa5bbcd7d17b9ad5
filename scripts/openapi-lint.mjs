#!/usr/bin/env node
// `npm run openapi:lint`: writes the document the Worker serves to a temporary file and
// lints it with the pinned Redocly CLI (`recommended` rules, redocly.yaml). Fails on any
// error. Runs offline: telemetry and update checks are off.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { openApiDocument } from "./lib/openapi-document.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = mkdtempSync(join(tmpdir(), "openapi-lint-"));
try {
  const file = join(dir, "openapi.json");
  writeFileSync(file, JSON.stringify(await openApiDocument(), null, 2));
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
  process.exitCode = result.status ?? 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
