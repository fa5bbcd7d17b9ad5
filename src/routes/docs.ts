import { Hono } from "hono";
import type { AppEnv } from "../context";

// A self-contained reference page: it loads the OpenAPI document and renders
// it with a few lines of script, so it works without any third-party CDN. The
// inline style and script carry the response's CSP nonce (middleware/security-headers.ts).
const page = (nonce: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Messaging API v1 reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style nonce="${nonce}">
body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
h1{font-size:1.6rem}h2{margin-top:2rem;border-top:1px solid #ddd;padding-top:1rem;font-size:1.15rem}
code,pre{font:13px ui-monospace,monospace;background:#f4f4f6;border-radius:4px}pre{padding:.75rem;overflow:auto}
.m{display:inline-block;min-width:4.5rem;font-weight:700}.get{color:#0a7}.post{color:#06c}.delete{color:#c30}
</style></head><body>
<h1>Messaging API v1</h1>
<p>Base URL: <code>/api/v1</code>. Authenticate with <code>Authorization: Bearer &lt;API key&gt;</code>.
The machine-readable document is at <a href="/api/v1/openapi.json"><code>/api/v1/openapi.json</code></a> (OpenAPI 3.1).</p>
<div id="ops">Loading…</div>
<script nonce="${nonce}">
fetch("/api/v1/openapi.json").then(r => r.json()).then(doc => {
  const esc = s => String(s ?? "").replace(/[&<>]/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;"}[c]));
  const out = [];
  const sections = [["", doc.paths], ["Webhook event: ", doc.webhooks ?? {}]];
  for (const [label, entries] of sections) for (const [path, item] of Object.entries(entries)) for (const [method, op] of Object.entries(item)) {
    out.push('<h2>' + label + '<span class="m ' + method + '">' + method.toUpperCase() + '</span><code>' + esc(path) + '</code></h2>');
    out.push('<p><b>' + esc(op.summary) + '</b></p>' + (op.description ? '<p>' + esc(op.description) + '</p>' : ''));
    const body = op.requestBody?.content?.["application/json"]?.schema;
    if (body) out.push('<p>Request body:</p><pre>' + esc(JSON.stringify(body, null, 2)) + '</pre>');
    out.push('<p>Responses:</p><ul>' + Object.entries(op.responses).map(([s, r]) => '<li><code>' + s + '</code> ' + esc(r.description) + '</li>').join("") + '</ul>');
  }
  out.push('<h2>Schemas</h2><pre>' + esc(JSON.stringify(doc.components?.schemas ?? {}, null, 2)) + '</pre>');
  document.getElementById("ops").innerHTML = out.join("");
});
</script></body></html>`;

export const docsRoutes = new Hono<AppEnv>().get("/", (c) => c.html(page(c.get("cspNonce"))));
