import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { app } from "../../src/app";
import { KEY_CACHE_TTL_MS } from "../../src/domain/key-cache";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { admin, api, call, expectError, json } from "../helpers/http";
import { createTenant } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { answers, mockNetwork } from "../helpers/webhook-net";
import { fakeClock } from "../helpers/clock";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("revocation reaches every isolate within the key cache's TTL", () => {
  it("a key revoked through another isolate is refused here once KEY_CACHE_TTL_MS has passed (controlled clock)", async () => {
    const clock = fakeClock(Date.UTC(2045, 0, 1));
    const t = await createTenant();
    // This isolate authenticates the key once: it is now in this isolate's cache.
    expect((await api("/me", t.key)).status).toBe(200);

    // "Another isolate" revokes it: the admin call there writes D1 and clears *its own* cache. Our
    // cache is not touched by that, so the revocation is applied here the same way, by a D1 write
    // that bypasses this isolate's cache (the admin route would also clear ours, hiding the TTL).
    await env.DB.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ?")
      .bind(new Date(clock.now()).toISOString(), t.keyId)
      .run();

    // Within the documented window the cached entry still answers …
    expect((await api("/me", t.key)).status).toBe(200);
    clock.advance(KEY_CACHE_TTL_MS - 1);
    expect((await api("/me", t.key)).status).toBe(200);
    // … and not a millisecond after it.
    clock.advance(1);
    await expectError(await api("/me", t.key), 401, "unauthorized");
    expect(KEY_CACHE_TTL_MS).toBeLessThanOrEqual(5_000);
  });
});

describe("webhook replay while the webhook is disabled", () => {
  it("is refused with 400 webhook_disabled and queues nothing", async () => {
    const net = mockNetwork();
    try {
      const t = await createTenant();
      const host = `replay-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
      net.dns.set(host, ["93.184.216.34"]);
      net.receivers.set(`https://${host}/hook`, answers(204));
      const { id } = await json<{ id: string }>(
        await api("/webhooks", t.key, {
          method: "POST",
          json: { channelNumberId: t.numberId, url: `https://${host}/hook` },
        }),
      );
      const { eventId } = await json<{ eventId: string }>(await api(`/webhooks/${id}/test`, t.key, { method: "POST" }));
      await vi.waitFor(
        async () =>
          expect((await json<{ data: unknown[] }>(await api(`/webhooks/${id}/deliveries`, t.key))).data).toHaveLength(
            1,
          ),
        { timeout: 15_000, interval: 100 },
      );

      await env.DB.prepare("UPDATE webhooks SET status = 'disabled', disabled_at = ? WHERE id = ?")
        .bind(new Date().toISOString(), id)
        .run();
      const err = await expectError(
        await api(`/webhooks/${id}/deliveries/${eventId}/replay`, t.key, { method: "POST" }),
        400,
        "invalid_request",
      );
      expect(err.error.details?.[0]?.rule).toBe("webhook_disabled");

      // Positive signal that the queue is idle: a replay after re-enabling arrives, and it is the only second delivery.
      await env.DB.prepare("UPDATE webhooks SET status = 'enabled', disabled_at = NULL WHERE id = ?").bind(id).run();
      expect((await api(`/webhooks/${id}/deliveries/${eventId}/replay`, t.key, { method: "POST" })).status).toBe(202);
      await vi.waitFor(() => expect(net.seen).toHaveLength(2), { timeout: 15_000, interval: 100 });
      await vi.waitFor(
        async () =>
          expect((await json<{ data: unknown[] }>(await api(`/webhooks/${id}/deliveries`, t.key))).data).toHaveLength(
            2,
          ),
        { timeout: 5_000, interval: 100 },
      );
      expect(net.seen).toHaveLength(2);
    } finally {
      net.restore();
    }
  });
});

describe("another workspace's message", () => {
  // The issue this guards: a lookup that falls back to a store outside the workspace's own object
  // (once, the D1 copy of messages) without the workspace in its key. Messages no longer have a D1
  // copy; the test waits until everything a send leaves behind exists (the message is settled and
  // its daily count has reached D1) before asking for it from another workspace.
  it("answers 404 like an unknown id, also once the message's traces outside its object exist (controlled clock)", async () => {
    const clock = fakeClock(Date.UTC(2046, 0, 1));
    const a = await createTenant();
    const b = await createTenant();
    const res = await send(a.key, crypto.randomUUID(), textMessage(a.numberId, "private"));
    expect(res.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(res);
    // The number sends it; a minute later the workspace ships its daily count to D1.
    await runDurableObjectAlarm(channelNumberStub(env, a.numberId));
    clock.advance(61_000);
    await runDurableObjectAlarm(workspaceStub(env, a.workspaceId));
    await vi.waitFor(
      async () =>
        expect(
          await env.DB.prepare("SELECT SUM(accepted) AS n FROM usage_daily WHERE workspace_id = ?")
            .bind(a.workspaceId)
            .first(),
        ).toEqual({ n: 1 }),
      { timeout: 15_000, interval: 100 },
    );
    expect((await api(`/messages/${jobId}`, a.key)).status).toBe(200);
    const foreign = await expectError(await api(`/messages/${jobId}`, b.key), 404, "not_found");
    const unknown = await expectError(await api(`/messages/${crypto.randomUUID()}`, b.key), 404, "not_found");
    expect(foreign.error.message).toBe(unknown.error.message);
  });
});

describe("X-Request-Id on every route", () => {
  // Every route the app serves, from the router itself: a route added later is covered without
  // being listed here. Middleware entries (method ALL) are not routes.
  const routes = app.routes.filter((r) => r.method !== "ALL").map((r) => ({ method: r.method, path: r.path }));
  const sample: Record<string, string> = {
    id: "00000000-0000-4000-8000-000000000000",
    eventId: "evt_00000000000000000000000000000000",
    phone: "5511999998888",
    workspaceId: "00000000-0000-4000-8000-000000000001",
    keyId: "00000000-0000-4000-8000-000000000002",
    numberId: "00000000-0000-4000-8000-000000000003",
  };
  const concrete = (path: string) => path.replace(/:([A-Za-z]+)/g, (_, name: string) => sample[name] ?? "x");

  it("the route list covers every operation of the OpenAPI document", async () => {
    const doc = await json<{ paths: Record<string, Record<string, unknown>> }>(await call("/api/v1/openapi.json"));
    const served = new Set(routes.map((r) => `${r.method} ${r.path}`));
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const method of Object.keys(ops)) {
        expect(
          served.has(`${method.toUpperCase()} /api/v1${path.replace(/\{([A-Za-z]+)\}/g, ":$1")}`),
          `${method} ${path}`,
        ).toBe(true);
      }
    }
    expect(routes.some((r) => r.path.startsWith("/admin/v1/"))).toBe(true);
    expect(routes.length).toBeGreaterThanOrEqual(20);
  });

  it("every route answers with X-Request-Id, with and without credentials, and echoes a client id", async () => {
    const t = await createTenant();
    const missing: string[] = [];
    for (const { method, path } of routes) {
      const url = concrete(path);
      for (const auth of [null, path.startsWith("/admin/") ? `Bearer ${env.ADMIN_TOKEN}` : `Bearer ${t.key}`]) {
        const clientId = `trace-${crypto.randomUUID()}`;
        const headers: Record<string, string> = { "Content-Type": "application/json", "X-Request-Id": clientId };
        if (auth) headers.Authorization = auth;
        const res = await call(url, {
          method,
          headers,
          body: method === "GET" || method === "HEAD" ? undefined : "{}",
        });
        if (res.headers.get("X-Request-Id") !== clientId)
          missing.push(`${method} ${url} (${res.status}, auth: ${auth !== null})`);
        if (res.status >= 400 && (res.headers.get("content-type") ?? "").includes("json")) {
          const body = await json<{ error?: { requestId?: string } }>(res);
          if (body.error?.requestId !== clientId) missing.push(`${method} ${url}: body requestId`);
        } else {
          await res.body?.cancel();
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it("generated ids have one shape, on success and on error", async () => {
    const t = await createTenant();
    for (const res of [
      await api("/me", t.key),
      await api("/me", null),
      await call("/nowhere"),
      await admin("/workspaces/nope"),
    ]) {
      expect(res.headers.get("X-Request-Id")).toMatch(/^req_[0-9a-f]{32}$/);
    }
  });
});
