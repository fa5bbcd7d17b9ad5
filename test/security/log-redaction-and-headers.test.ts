import { expectRuntimeLog } from "../helpers/runtime-log";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_OPERATOR_PAYLOAD_BYTES } from "../../src/routes/operator-webhook";
import { app } from "../../src/app";
import { REDACTED_PARAMS } from "../../src/middleware/access-log";
import { hmacSha256, toBase64Url, toHex } from "../../src/lib/crypto";
import { admin, api, call, expectError, json } from "../helpers/http";
import { createTenant, createWorkspace } from "../helpers/fixtures";
import { mockNetwork } from "../helpers/webhook-net";
import { signedInMember } from "../helpers/dashboard";

afterEach(() => {
  vi.restoreAllMocks();
});

const sign = async (raw: Uint8Array | string) => `sha256=${toHex(await hmacSha256(env.UPSTREAM_APP_SECRET, raw))}`;

/** A body stream of `total` bytes in 64 KiB chunks that records how much of it was pulled. */
function countingStream(total: number) {
  const chunk = new Uint8Array(64 * 1024).fill(0x20);
  const pulled = { bytes: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled.bytes >= total) return controller.close();
      const piece = chunk.subarray(0, Math.min(chunk.byteLength, total - pulled.bytes));
      pulled.bytes += piece.byteLength;
      controller.enqueue(piece);
    },
  });
  return { stream, pulled };
}

/** What workerd prints when a request body it stopped reading is torn down (with its stack line). */
const ABORTED_PIPE = /read end of pipe was aborted|^stack: \S*workerd/m;

describe("operator webhook body: size before signature, read with a cap", () => {
  it("refuses a declared Content-Length over the cap without reading the body", async () => {
    // Cancelling the body is the point: the runtime reports the test's stream as an aborted pipe.
    const trace = await expectRuntimeLog(ABORTED_PIPE);
    const { stream, pulled } = countingStream(8 * 1024 * 1024);
    const res = await call("/upstream/cloud/webhook", {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "Content-Length": String(8 * 1024 * 1024),
        "X-Hub-Signature-256": "sha256=00",
      },
      body: stream,
      // @ts-expect-error: a streaming request body needs duplex "half" (workerd knows it; the DOM types do not)
      duplex: "half",
    });
    const err = await expectError(res, 400, "invalid_request");
    expect(err.error.message).toMatch(/too large/);
    // The runtime may buffer a chunk or two ahead; reading up to the cap would pull 3 MiB.
    expect(pulled.bytes).toBeLessThanOrEqual(4 * 64 * 1024);
    await trace.seen();
    await trace.end();
  });

  it("stops reading a body without Content-Length as soon as it passes the cap", async () => {
    const trace = await expectRuntimeLog(ABORTED_PIPE);
    const { stream, pulled } = countingStream(16 * 1024 * 1024);
    const res = await call("/upstream/cloud/webhook", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Hub-Signature-256": "sha256=00" },
      body: stream,
      // @ts-expect-error: see above
      duplex: "half",
    });
    await expectError(res, 400, "invalid_request");
    // The stream may be a few chunks ahead of the reader, never megabytes.
    expect(pulled.bytes).toBeLessThanOrEqual(MAX_OPERATOR_PAYLOAD_BYTES + 4 * 64 * 1024);
    await trace.seen();
    await trace.end();
  });

  it("accepts a signed payload of exactly the cap, and refuses one byte more", async () => {
    const payload = JSON.stringify({ object: "whatsapp_business_account", entry: [] });
    const exact = payload + " ".repeat(MAX_OPERATOR_PAYLOAD_BYTES - payload.length);
    const ok = await call("/upstream/cloud/webhook", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Hub-Signature-256": await sign(exact) },
      body: exact,
    });
    expect(ok.status).toBe(200);
    const over = `${exact} `;
    await expectError(
      await call("/upstream/cloud/webhook", {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Hub-Signature-256": await sign(over) },
        body: over,
      }),
      400,
      "invalid_request",
    );
  });
});

describe("the operator's verify token never reaches our logs", () => {
  it("the access-log line of the handshake keeps its query but redacts the token", async () => {
    const lines: string[] = [];
    for (const method of ["log", "warn", "error", "info", "debug"] as const) {
      vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
    }
    const res = await call(
      `/upstream/cloud/webhook?hub.mode=subscribe&hub.verify_token=${env.UPSTREAM_VERIFY_TOKEN}&hub.challenge=8151`,
    );
    expect(res.status).toBe(200);
    await call("/upstream/cloud/webhook?hub.mode=subscribe&hub.verify_token=a-wrong-guess-42&hub.challenge=1");
    const access = lines.filter((l) => l.includes('"msg":"request"') && l.includes("/upstream/cloud/webhook"));
    expect(access).toHaveLength(2);
    expect(JSON.parse(access[0]!).query).toBe(
      "hub.mode=subscribe&hub.verify_token=%5Bredacted%5D&hub.challenge=%5Bredacted%5D",
    );
    expect(lines.join("\n")).not.toContain(env.UPSTREAM_VERIFY_TOKEN);
    expect(lines.join("\n")).not.toContain("a-wrong-guess-42");
  });
});

describe("phone numbers never reach our logs", () => {
  it("the access log redacts ?to=, ?from= and the contact of /contacts/{phone}, API and dashboard alike", async () => {
    const t = await createTenant();
    const lines: string[] = [];
    for (const method of ["log", "warn", "error", "info", "debug"] as const) {
      vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
    }
    expect((await api("/messages?to=5511987650001&limit=5", t.key)).status).toBe(200);
    expect((await api("/messages?from=5511987650002", t.key)).status).toBe(200);
    expect((await api(`/channel-numbers/${t.numberId}/contacts/5511987650003`, t.key)).status).toBe(200);
    await call("/dashboard/messages?to=5511987650004&from=5511987650005", { redirect: "manual" });
    const access = lines
      .filter((l) => l.includes('"msg":"request"'))
      .map((l) => JSON.parse(l) as { path: string; query?: string })
      .filter((l) => !l.path.startsWith("/admin/"));
    expect(access).toHaveLength(4);
    expect(access[0]!.query).toBe("to=%5Bredacted%5D&limit=5");
    expect(access[2]!.path).toBe(`/api/v1/channel-numbers/${t.numberId}/contacts/[redacted]`);
    expect(lines.join("\n")).not.toMatch(/551198765000/);
  });
});

/**
 * Every parameter name the app's routes use in their paths, and whether its value may be logged.
 * A route that adds a name fails the first test below until it is classified here.
 */
const PATH_PARAMS: Record<string, "logged" | "redacted"> = {
  id: "logged",
  channelNumberId: "logged",
  numberId: "logged",
  eventId: "logged",
  day: "logged",
  name: "logged",
  workspaceId: "logged",
  keyId: "logged",
  memberId: "logged",
  phone: "redacted",
  token: "redacted",
};

/** The app's routes ("METHOD /path"), each with the names of its path parameters. */
const routesWithParams = () =>
  [...new Map(app.routes.filter((r) => r.method !== "ALL").map((r) => [`${r.method} ${r.path}`, r])).values()].map(
    (r) => ({ method: r.method, path: r.path, params: [...r.path.matchAll(/:(\w+)/g)].map((m) => m[1]!) }),
  );

describe("the access log redacts by route template", () => {
  it("every path parameter of every route is classified, and the redacted ones are what the middleware redacts", () => {
    const used = new Set(routesWithParams().flatMap((r) => r.params));
    expect([...used].sort()).toEqual(Object.keys(PATH_PARAMS).sort());
    const redacted = Object.entries(PATH_PARAMS).flatMap(([name, how]) => (how === "redacted" ? [name] : []));
    expect([...REDACTED_PARAMS].sort()).toEqual(redacted.sort());
  });

  it("no route with a phone or a token in its path writes it to the log: API v1 and v2, dashboard", async () => {
    const t = await createTenant();
    const developer = await signedInMember(t.workspaceId, "developer");
    const lines: string[] = [];
    for (const method of ["log", "warn", "error", "info", "debug"] as const)
      vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
    const targets = routesWithParams().filter((r) => r.params.some((p) => PATH_PARAMS[p] === "redacted"));
    // The five phone routes and the invitation page's two at least; a new one is walked as well.
    expect(targets.length).toBeGreaterThanOrEqual(7);
    const secrets: string[] = [];
    for (const [i, route] of targets.entries()) {
      const values: Record<string, string> = {};
      for (const p of route.params) {
        if (p === "phone") values[p] = `55119876${String(50_000 + i)}`;
        else if (p === "token") values[p] = toBase64Url(crypto.getRandomValues(new Uint8Array(32)));
        else values[p] = t.numberId;
        if (PATH_PARAMS[p] === "redacted") secrets.push(values[p]);
      }
      const path = route.path.replace(/:(\w+)/g, (_, p: string) => values[p]!);
      const init = { method: route.method };
      const res = path.startsWith("/api/")
        ? await call(path, { ...init, headers: { Authorization: `Bearer ${t.key}` } })
        : route.method === "GET"
          ? await developer.browser.get(path)
          : await developer.browser.post(path, {});
      expect(res.status, `${route.method} ${route.path}`).toBeLessThan(500);
    }
    // No route for the method or the path: no template, so phone- and token-like segments go.
    const loose = ["5511987659998", toBase64Url(crypto.getRandomValues(new Uint8Array(32)))];
    secrets.push(...loose);
    await call(`/api/v1/channel-numbers/${t.numberId}/contacts/${loose[0]}`, {
      method: "PUT",
      headers: { Authorization: `Bearer ${t.key}` },
    });
    await call(`/dashboard/invitation/${loose[1]}`);
    const access = lines.filter((l) => l.includes('"msg":"request"'));
    expect(access.length).toBeGreaterThanOrEqual(targets.length + 2);
    const text = lines.join("\n");
    for (const secret of secrets) expect(access.filter((l) => l.includes(secret))).toEqual([]);
    expect(text).toContain(`/api/v2/channel-numbers/${t.numberId}/contacts/[redacted]`);
    expect(text).toContain(`/dashboard/numbers/${t.numberId}/test-contacts/[redacted]/remove`);
  });
});

describe("HSTS", () => {
  it("every response tells browsers to use https only: API, errors, pages and the dashboard", async () => {
    const t = await createTenant();
    for (const res of [
      await api("/me", t.key),
      await api("/me", null),
      await call("/docs"),
      await call("/dashboard/sign-in"),
      await call("/nowhere"),
    ]) {
      expect(res.headers.get("Strict-Transport-Security")).toBe("max-age=31536000; includeSubDomains");
    }
  });
});

describe("responses that carry a secret are never cached", () => {
  it("the admin invitation (its link is a credential) sends no-store and Pragma", async () => {
    const res = await admin(`/workspaces/${await createWorkspace()}/members`, {
      method: "POST",
      json: { email: "pragma@example.com", role: "viewer" },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    expect(res.headers.get("Pragma")).toBe("no-cache");
  });

  it("POST /webhooks (the signing secret) and admin key creation (the key) send no-store and Pragma", async () => {
    const t = await createTenant();
    const net = mockNetwork();
    try {
      net.dns.set("hooks.no-store.acme-shop.com", ["93.184.216.34"]);
      const res = await api("/webhooks", t.key, {
        method: "POST",
        json: { channelNumberId: t.numberId, url: "https://hooks.no-store.acme-shop.com/" },
      });
      expect(res.status).toBe(201);
      expect((await json<{ secret: string }>(res)).secret).toMatch(/^whsec_/);
      expect(res.headers.get("Cache-Control")).toBe("no-store");
      expect(res.headers.get("Pragma")).toBe("no-cache");
    } finally {
      net.restore();
    }
    const key = await admin(`/workspaces/${await createWorkspace()}/api-keys`, { method: "POST", json: { name: "k" } });
    expect(key.status).toBe(201);
    expect(key.headers.get("Cache-Control")).toBe("no-store");
    expect(key.headers.get("Pragma")).toBe("no-cache");
  });
});

describe("HTTP details", () => {
  it("/docs sends a CSP that forbids framing and any script but our own files, and nosniff", async () => {
    const res = await call("/docs");
    expect(res.status).toBe(200);
    const csp = res.headers.get("Content-Security-Policy") ?? "";
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
    const scriptSrc = /script-src ([^;]*)/.exec(csp)?.[1] ?? "";
    expect(scriptSrc.trim()).toBe("'self'");
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(res.headers.get("X-Frame-Options")).toBe("DENY");
    // No inline script at all: every <script> loads one of our files.
    const html = await res.text();
    expect([...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>/g)]).toEqual([]);
  });

  it("the handshake echo is text/plain with nosniff, so a crafted challenge is never a page", async () => {
    const challenge = encodeURIComponent("<script>alert(1)</script>");
    const res = await call(
      `/upstream/cloud/webhook?hub.mode=subscribe&hub.verify_token=${env.UPSTREAM_VERIFY_TOKEN}&hub.challenge=${challenge}`,
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("text/plain; charset=utf-8");
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(res.headers.get("Content-Security-Policy")).toBeNull();
  });

  it("JSON responses, errors included, carry nosniff too", async () => {
    const t = await createTenant();
    expect((await api("/me", t.key)).headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect((await api("/me", null)).headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect((await call("/nowhere")).headers.get("X-Content-Type-Options")).toBe("nosniff");
  });
});
