import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const toml = readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8");

/** The body of one `[table]` of wrangler.toml (up to the next table header). @param {string} name */
function table(name) {
  const start = toml.indexOf(`\n[${name}]\n`);
  if (start < 0) return null;
  const rest = toml.slice(start + name.length + 4);
  const next = rest.search(/\n\[/);
  return next < 0 ? rest : rest.slice(0, next);
}

describe("wrangler.toml", () => {
  it("keeps the platform's invocation logs off: they record full request URLs, and the operator's handshake carries hub.verify_token in its query", () => {
    // Our own access-log line (src/middleware/access-log.ts) replaces them, with secrets redacted.
    expect(table("observability.logs")).toMatch(/^invocation_logs = false$/m);
    expect(toml).toMatch(/\[observability\]\nenabled = true/);
  });
});
