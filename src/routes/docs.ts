import { Hono } from "hono";
import type { AppEnv } from "../context";

/**
 * Nothing on the page comes from another origin: Swagger UI is a vendored static
 * asset (public/static/docs/vendor/, `npm run docs:ui`), the document and "Try it out"
 * requests go to this origin. The policy below makes the browser enforce it.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  // Swagger UI sets style attributes on its elements.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** The API versions the page shows, one at a time (`/docs?version=v2`); v1 is the default. */
const VERSIONS = {
  v1: {
    title: "Messaging API v1",
    about: "Text messages, numbers, webhooks, message history and the sandbox.",
  },
  v2: {
    title: "Messaging API v2",
    about:
      "Everything of v1, plus template messages (<code>POST /messages</code> with <code>type: template</code>), " +
      "the templates your numbers can send (<code>GET /templates</code>) and a <code>type</code> filter on message lists. " +
      "v1 clients keep working unchanged: the templates guide (docs/customers/templates.md) says what changed and how to migrate.",
  },
} as const;
type Version = keyof typeof VERSIONS;

const page = (version: Version) => {
  const { title, about } = VERSIONS[version];
  const doc = `/api/${version}/openapi.json`;
  const links = (Object.keys(VERSIONS) as Version[])
    .map((v) =>
      v === version
        ? `<a href="/docs?version=${v}" aria-current="page">${v}</a>`
        : `<a href="/docs?version=${v}">${v}</a>`,
    )
    .join(" ");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} reference</title>
<link rel="stylesheet" href="/static/docs/vendor/swagger-ui.css">
<link rel="stylesheet" href="/static/docs/reference.css">
<link rel="icon" type="image/svg+xml" href="/static/dashboard/favicon.svg">
</head>
<body>
<header class="intro">
<nav class="versions" aria-label="API version">Version: ${links}</nav>
<h1>${title}</h1>
<p>${about}</p>
<p>Base URL <code>/api/${version}</code>; authenticate with <code>Authorization: Bearer &lt;API key&gt;</code> (the Authorize button below).
The machine-readable contract is <a href="${doc}"><code>${doc}</code></a> (OpenAPI 3.1).</p>
<p>"Try it out" on <code>POST /messages</code> sends a real message: it fills a new <code>Idempotency-Key</code> for every run
(one key is one message: repeating a key with the same body returns the first answer and sends nothing, with another body it is a 409),
and, once you are authorized, replaces the example <code>channelNumberId</code> with your first number.
The signed events we POST to your webhook are described under "Webhooks" at the end of the page.</p>
</header>
<main id="reference" data-document="${doc}"><noscript>The reference needs JavaScript; the contract itself is at ${doc}.</noscript></main>
<script src="/static/docs/vendor/swagger-ui-bundle.js"></script>
<script src="/static/docs/reference.js"></script>
</body>
</html>
`;
};

export const docsRoutes = new Hono<AppEnv>().get("/", (c) => {
  c.header("Content-Security-Policy", DOCS_CSP);
  c.header("X-Content-Type-Options", "nosniff");
  c.header("Referrer-Policy", "no-referrer");
  const asked = c.req.query("version");
  return c.html(page(asked === "v2" ? "v2" : "v1"));
});
