// .dev.vars for the local runtime, shared by `npm run dev` and `npm run bench`:
// created from .dev.vars.example on the first run with every "generate" value
// replaced by a fresh secret; an existing file is kept and only gains variables
// the example added since. Node built-ins only.
import { existsSync, readFileSync, writeFileSync, chmodSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";

const secret = (/** @type {BufferEncoding} */ encoding) => randomBytes(32).toString(encoding);
// CREDENTIALS_ENCRYPTION_KEY is an AES-256 key read as standard base64; the rest are opaque tokens.
const generateFor = (/** @type {string} */ name) =>
  name === "CREDENTIALS_ENCRYPTION_KEY" ? secret("base64") : secret("base64url");

const VAR_LINE = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/;

/** @param {string} text @returns {Map<string, string>} */
export function parseVars(text) {
  const vars = new Map();
  for (const line of text.split(/\r?\n/)) {
    if (/^\s*#/.test(line)) continue;
    const m = VAR_LINE.exec(line);
    if (m?.[1] && m[2] !== undefined) vars.set(m[1], m[2].replace(/^(["'])(.*)\1$/, "$2"));
  }
  return vars;
}

/** Replaces `NAME=generate` with a fresh secret; everything else (comments included) is kept. @param {string} text */
function fillGenerated(text) {
  /** @type {string[]} */
  const generated = [];
  const out = text
    .split(/\r?\n/)
    .map((line) => {
      if (/^\s*#/.test(line)) return line;
      const m = VAR_LINE.exec(line);
      if (!m?.[1] || m[2] !== "generate") return line;
      generated.push(m[1]);
      return `${m[1]}=${generateFor(m[1])}`;
    })
    .join("\n");
  return { text: out, generated };
}

/**
 * Makes sure `<root>/.dev.vars` exists and is complete; returns its ADMIN_TOKEN.
 * `say` reports progress, `fail` reports a fatal problem and does not return.
 * @param {string} root @param {{ say: (msg: string) => void, fail: (msg: string) => never }} report
 */
export function ensureDevVars(root, { say, fail }) {
  const DEV_VARS = join(root, ".dev.vars");
  const DEV_VARS_EXAMPLE = join(root, ".dev.vars.example");
  if (!existsSync(DEV_VARS_EXAMPLE)) fail(".dev.vars.example is missing.");
  const example = readFileSync(DEV_VARS_EXAMPLE, "utf8");
  if (!existsSync(DEV_VARS)) {
    const { text, generated } = fillGenerated(example);
    writeFileSync(DEV_VARS, text, { mode: 0o600 });
    say(`created .dev.vars from .dev.vars.example (fresh secrets: ${generated.join(", ") || "none"})`);
  } else {
    // Keep the developer's file; only add variables the example gained since it was made.
    const have = parseVars(readFileSync(DEV_VARS, "utf8"));
    const missing = [...parseVars(example)].filter(([name]) => !have.has(name));
    if (missing.length > 0) {
      const lines = missing.map(([name, value]) => `${name}=${value === "generate" ? generateFor(name) : value}`);
      const existing = readFileSync(DEV_VARS, "utf8");
      writeFileSync(
        DEV_VARS,
        `${existing}${existing.endsWith("\n") || existing === "" ? "" : "\n"}${lines.join("\n")}\n`,
      );
      say(`added to .dev.vars from .dev.vars.example: ${missing.map(([n]) => n).join(", ")}`);
    } else {
      say("using existing .dev.vars");
    }
  }
  try {
    chmodSync(DEV_VARS, 0o600);
  } catch {
    // Not supported everywhere (Windows); the file is gitignored either way.
  }
  const vars = parseVars(readFileSync(DEV_VARS, "utf8"));
  const adminToken = vars.get("ADMIN_TOKEN");
  if (!adminToken || adminToken === "generate")
    return fail("ADMIN_TOKEN is empty in .dev.vars; delete the file to regenerate it.");
  return { adminToken };
}
