import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// What a customer reads: the README's index, the pages under docs/customers/ and the SDK's README. Customers
// learn the API in its own words, so their pages name nothing of how it is built, and every link they follow
// lands on a page and a heading that exist.
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const CUSTOMER_PAGES = readdirSync(join(ROOT, "docs", "customers"))
  .filter((f) => f.endsWith(".md"))
  .map((f) => `docs/customers/${f}`);
const READ_BY_CUSTOMERS = ["README.md", ...CUSTOMER_PAGES, "sdk/README.md"];
// What whoever runs the service reads: the pages at the root of docs/.
const MAINTAINER_PAGES = readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md"));

/** @param {string} file */
const read = (file) => readFileSync(join(ROOT, file), "utf8");

/** The lines of a Markdown text outside its fenced code blocks, with their line numbers. @param {string} text */
function prose(text) {
  let fenced = false;
  return text.split("\n").flatMap((line, i) => {
    if (/^```/.test(line)) {
      fenced = !fenced;
      return [];
    }
    return fenced ? [] : [{ line, n: i + 1 }];
  });
}

/** The anchors GitHub gives a page's headings (lower case, punctuation dropped, spaces as hyphens, repeats numbered). @param {string} file */
function anchors(file) {
  /** @type {Map<string, number>} */
  const seen = new Map();
  const out = new Set();
  for (const { line } of prose(read(file))) {
    const heading = /^#{1,6}\s+(.*)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** Every relative link of a page that does not resolve, as "line: target". @param {string} file */
function brokenLinks(file) {
  const broken = [];
  for (const { line, n } of prose(read(file))) {
    for (const [, href = ""] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(href)) continue;
      const [path = "", anchor] = href.split("#");
      const target = path === "" ? file : normalize(join(dirname(file), path));
      if (!existsSync(join(ROOT, target))) broken.push(`${n}: ${href} (no such file)`);
      else if (anchor && target.endsWith(".md") && !anchors(target).has(anchor))
        broken.push(`${n}: ${href} (no such heading)`);
    }
  }
  return broken;
}

// Words of the house, not of the API: the internal contract, source paths, storage and platform internals,
// the maintainers' own API and secrets, and history.
const INTERNAL_WORDS = [
  /\bSPEC\b/,
  /\bsrc\//,
  /Durable Object/i,
  /\b(workspace|number|throttle) object\b/i,
  /\bD1\b/,
  /\bmigrations? \d/i,
  /\/admin\/v1/,
  /\bADMIN_TOKEN\b/,
  /\.dev\.vars/,
  /earlier release/i,
  /\bextensions?\b/i,
  /\bissue #?\d+/i,
];

describe("the customers' pages", () => {
  it.each(READ_BY_CUSTOMERS)("%s: every relative link lands on a page and a heading that exist", (file) => {
    expect(brokenLinks(file)).toEqual([]);
  });

  it.each(CUSTOMER_PAGES)("%s names nothing of how the gateway is built", (file) => {
    const found = prose(read(file)).flatMap(({ line, n }) =>
      INTERNAL_WORDS.filter((word) => word.test(line)).map((word) => `${n}: ${word} in "${line.trim()}"`),
    );
    expect(found).toEqual([]);
  });
});

describe("README.md", () => {
  const readme = read("README.md");
  const index = readme.slice(readme.indexOf("## Documentation"), readme.indexOf("## Quick start"));

  it("opens with an index whose customers' part links sending, a message's status, webhook verification and errors", () => {
    expect(readme.indexOf("## Documentation")).toBeLessThan(readme.indexOf("## Quick start"));
    const customers = index.slice(0, index.indexOf("**For whoever runs the service**"));
    for (const target of [
      "docs/customers/api.md#sending-post-messages",
      "docs/customers/api.md#one-message-get-messagesid",
      "docs/customers/webhooks.md#verifying-signatures",
      "docs/customers/errors.md",
    ])
      expect(customers).toContain(`(${target})`);
    for (const page of MAINTAINER_PAGES) expect(customers).not.toContain(`(docs/${page}`);
    for (const page of CUSTOMER_PAGES) expect(customers).toContain(`(${page}`);
  });

  it("lists every maintainers' page after the customers' pages", () => {
    const maintainers = index.slice(index.indexOf("**For whoever runs the service**"));
    expect(maintainers.length).toBeLessThan(index.length);
    for (const page of MAINTAINER_PAGES) expect(maintainers).toContain(`(docs/${page})`);
  });

  it("keeps the two commands that run it locally and test it", () => {
    expect(readme).toMatch(/^npm install && npm run dev$/m);
    expect(readme).toMatch(/^npm install && npm test$/m);
  });
});
