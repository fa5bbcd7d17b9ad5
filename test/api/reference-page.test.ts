import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, call } from "../helpers/http";

// Every URL the page loads: script and stylesheet sources, images, fonts and anything else with src/href.
const referencesOf = (html: string) => [...html.matchAll(/\b(?:src|href)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
const isSameOrigin = (url: string) => new URL(url, BASE).origin === BASE;

/** A static file as the deployment serves it (the assets binding, i.e. public/). */
const asset = (path: string) => env.ASSETS.fetch(new Request(`${BASE}${path}`));

describe("the API reference at /docs", () => {
  it("is an HTML page whose every resource is on this origin, under a strict CSP", async () => {
    const res = await call("/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(res.headers.get("X-Request-Id")).toBeTruthy();
    const csp = res.headers.get("Content-Security-Policy") ?? "";
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "connect-src 'self'",
      "img-src 'self' data:",
      "font-src 'self'",
      "frame-ancestors 'none'",
    ]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toMatch(/https?:|\*|unsafe-eval/);

    const html = await res.text();
    const refs = referencesOf(html);
    expect(refs).toEqual(
      expect.arrayContaining([
        "/static/docs/vendor/swagger-ui-bundle.js",
        "/static/docs/vendor/swagger-ui.css",
        "/static/docs/reference.js",
      ]),
    );
    for (const ref of refs) expect(isSameOrigin(ref), ref).toBe(true);
    // No inline script: the CSP would block it.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
  });

  it("serves the files it references from the static assets", async () => {
    const refs = referencesOf(await (await call("/docs")).text()).filter((r) => r.startsWith("/static/"));
    expect(refs.length).toBe(5);
    for (const ref of refs) {
      const res = await asset(ref);
      expect(res.status, ref).toBe(200);
      expect(res.headers.get("content-type"), ref).toMatch(
        ref.endsWith(".css") ? /text\/css/ : ref.endsWith(".svg") ? /image\/svg\+xml/ : /javascript/,
      );
      const body = await res.text();
      expect(body.length, ref).toBeGreaterThan(0);
      if (ref.endsWith(".css")) {
        // Stylesheets may not pull fonts or images from elsewhere.
        expect(body).not.toMatch(/@import|url\(\s*["']?(https?:)?\/\//i);
      }
    }
  });

  it("renders this deployment's document, with the external validator off", async () => {
    const init = await (await asset("/static/docs/reference.js")).text();
    expect(init).toContain("url: documentUrl");
    expect(init).toContain('|| "/api/v1/openapi.json"');
    expect(init).toContain("validatorUrl: null");
    expect(init).not.toMatch(/https?:\/\//);
  });

  it("shows both versions, one at a time: v1 by default, v2 with ?version=v2, each linking the other", async () => {
    for (const [path, version, other] of [
      ["/docs", "v1", "v2"],
      ["/docs?version=v1", "v1", "v2"],
      ["/docs?version=v2", "v2", "v1"],
      ["/docs?version=v9", "v1", "v2"],
    ] as const) {
      const res = await call(path);
      expect(res.status, path).toBe(200);
      const html = await res.text();
      expect(html, path).toContain(`data-document="/api/${version}/openapi.json"`);
      expect(html, path).toContain(`<h1>Messaging API ${version}</h1>`);
      expect(html, path).toContain(`Base URL <code>/api/${version}</code>`);
      expect(html, path).toContain(`<a href="/docs?version=${version}" aria-current="page">${version}</a>`);
      expect(html, path).toContain(`<a href="/docs?version=${other}">${other}</a>`);
      expect((await call(`/api/${version}/openapi.json`)).status).toBe(200);
    }
    expect(await (await call("/docs?version=v2")).text()).toContain("template messages");
    // "Try it out" prepares both versions' sends.
    const init = await (await asset("/static/docs/reference.js")).text();
    expect(init).toContain('var SEND_PATHS = ["/api/v1/messages", "/api/v2/messages"]');
  });

  it("has a favicon, one main heading (Swagger UI's own title hidden) and no empty tag section", async () => {
    const html = await (await call("/docs")).text();
    expect(html).toMatch(/<link rel="icon" type="image\/svg\+xml" href="\/static\/dashboard\/favicon.svg">/);
    expect(html.match(/<h1[\s>]/g)).toHaveLength(1);
    expect(await (await asset("/static/docs/reference.css")).text()).toMatch(
      /\.swagger-ui \.information-container hgroup\.main\s*\{\s*display: none;\s*\}/,
    );
    // Every tag listed at the top of each document has operations under paths (else Swagger UI shows it empty).
    for (const version of ["v1", "v2"]) {
      const doc = await (
        await call(`/api/${version}/openapi.json`)
      ).json<{ tags: { name: string }[]; paths: Record<string, Record<string, { tags?: string[] }>> }>();
      const used = new Set(
        Object.values(doc.paths).flatMap((ops) => Object.values(ops).flatMap((op) => op.tags ?? [])),
      );
      for (const tag of doc.tags) expect(used.has(tag.name), `${version} ${tag.name}`).toBe(true);
    }
  });

  it("'Try it out' on POST /messages fills a fresh Idempotency-Key per run and the caller's first number, and says why", async () => {
    const init = await (await asset("/static/docs/reference.js")).text();
    expect(init).toContain("requestInterceptor: prepareSend");
    expect(init).toContain("crypto.randomUUID()");
    expect(init).toContain('fetch("/api/v1/channel-numbers?limit=1"');
    // The placeholders it replaces are each document's own examples.
    for (const version of ["v1", "v2"]) {
      const doc = await (await call(`/api/${version}/openapi.json`)).text();
      for (const placeholder of [...init.matchAll(/var EXAMPLE_(?:KEY|NUMBER) = "([^"]+)"/g)].map((m) => m[1]!))
        expect(doc, version).toContain(placeholder);
    }
    expect(await (await call("/docs")).text()).toMatch(/new <code>Idempotency-Key<\/code> for every run/);
  });
});
