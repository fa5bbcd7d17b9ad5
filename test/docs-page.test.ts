import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, call } from "./helpers/http";

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
    for (const directive of ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "img-src 'self' data:", "font-src 'self'", "frame-ancestors 'none'"]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toMatch(/https?:|\*|unsafe-eval/);

    const html = await res.text();
    const refs = referencesOf(html);
    expect(refs).toEqual(expect.arrayContaining(["/static/docs/vendor/swagger-ui-bundle.js", "/static/docs/vendor/swagger-ui.css", "/static/docs/reference.js"]));
    for (const ref of refs) expect(isSameOrigin(ref), ref).toBe(true);
    // No inline script: the CSP would block it.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
  });

  it("serves the files it references from the static assets", async () => {
    const refs = referencesOf(await (await call("/docs")).text()).filter((r) => r.startsWith("/static/"));
    expect(refs.length).toBe(4);
    for (const ref of refs) {
      const res = await asset(ref);
      expect(res.status, ref).toBe(200);
      expect(res.headers.get("content-type"), ref).toMatch(ref.endsWith(".css") ? /text\/css/ : /javascript/);
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
    expect(init).toContain('url: "/api/v1/openapi.json"');
    expect(init).toContain("validatorUrl: null");
    expect(init).not.toMatch(/https?:\/\//);
  });
});
