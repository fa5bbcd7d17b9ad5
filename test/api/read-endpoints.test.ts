import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, api, call, expectError, json } from "../helpers/http";
import { connectSandboxNumber, createTenant, type Tenant } from "../helpers/fixtures";
import { mockNetwork } from "../helpers/webhook-net";

/** The workspace under test (pro) and another one (free), fresh for each test. */
async function tenants(): Promise<{ a: Tenant; b: Tenant }> {
  const [a, b] = await Promise.all([createTenant({ plan: "pro" }), createTenant({ plan: "free" })]);
  return { a, b };
}

describe("GET /me", () => {
  it("identifies the workspace and never contains the key", async () => {
    const a = await createTenant({ plan: "pro" });
    const res = await api("/me", a.key);
    expect(res.status).toBe(200);
    expect(res.headers.get("X-Request-Id")).toMatch(/^req_/);
    const text = await res.text();
    expect(text).not.toContain(a.key);
    expect(text).not.toContain(a.key.slice(`${env.API_KEY_PREFIX}live_`.length, -4));
    const body = JSON.parse(text);
    expect(body).toEqual({
      workspace: { id: a.workspaceId, name: "Acme", plan: "pro" },
      // The operator's keys are owner keys unless it asks for less.
      apiKey: { id: a.keyId, name: "test", lastFour: a.key.slice(-4), createdAt: expect.any(String), role: "owner" },
    });
  });
});

describe("GET /channel-numbers", () => {
  it("lists only the workspace's own connected numbers", async () => {
    const { a, b } = await tenants();
    const res = await api("/channel-numbers", a.key);
    expect(res.status).toBe(200);
    const body = await json<{ data: { id: string }[]; nextCursor: string | null }>(res);
    expect(body.data.map((n) => n.id)).toEqual([a.numberId]);
    expect(body.nextCursor).toBeNull();
    expect(JSON.stringify(body)).not.toContain(b.numberId);
  });

  it("paginates with limit and cursor", async () => {
    const t = await createTenant({ plan: "pro" });
    const second = await connectSandboxNumber(t.workspaceId, "15550002222");
    const third = await connectSandboxNumber(t.workspaceId, "15550003333");
    const page1 = await json<{ data: { id: string }[]; nextCursor: string }>(
      await api("/channel-numbers?limit=2", t.key),
    );
    expect(page1.data.map((n) => n.id)).toEqual([t.numberId, second]);
    const page2 = await json<{ data: { id: string }[]; nextCursor: string | null }>(
      await api(`/channel-numbers?limit=2&cursor=${page1.nextCursor}`, t.key),
    );
    expect(page2.data.map((n) => n.id)).toEqual([third]);
    expect(page2.nextCursor).toBeNull();
  });

  it("refuses a bad limit or a forged cursor with 400", async () => {
    const a = await createTenant({ plan: "pro" });
    await expectError(await api("/channel-numbers?limit=0", a.key), 400, "invalid_request");
    await expectError(await api("/channel-numbers?limit=abc", a.key), 400, "invalid_request");
    await expectError(await api("/channel-numbers?cursor=%27%20OR%201%3D1", a.key), 400, "invalid_request");
  });

  it("returns one number, and the same 404 for a foreign, unknown, malformed or SQL-looking id", async () => {
    const { a, b } = await tenants();
    const own = await api(`/channel-numbers/${a.numberId}`, a.key);
    expect(own.status).toBe(200);
    expect(await own.json()).toEqual({
      id: a.numberId,
      displayPhoneNumber: "15550001111",
      status: "connected",
      upstream: "sandbox",
      createdAt: expect.any(String),
      sending: { state: "active", pausedSince: null, nextAttemptAt: null, reason: null },
      // Extension: a sandbox number has no operator health to report, and its connection is never unverified.
      health: {
        state: "active",
        pausedSince: null,
        pausedReason: null,
        lastOperatorError: null,
        lastOperatorNotice: null,
        verifiedName: null,
        qualityRating: null,
        messagingLimitTier: null,
        checkedAt: null,
        sendsToday: 0,
        unverifiedSince: null,
      },
    });

    const bodies = [];
    for (const id of [b.numberId, crypto.randomUUID(), "not-a-uuid", "1%27%20OR%20%271%27%3D%271", "..%2F..%2Fme"]) {
      const err = await expectError(await api(`/channel-numbers/${id}`, a.key), 404, "not_found");
      bodies.push(err.error.message);
    }
    expect(new Set(bodies).size).toBe(1);
  });

  it("hides a disconnected number", async () => {
    const t = await createTenant();
    expect((await admin(`/channel-numbers/${t.numberId}`, { method: "DELETE" })).status).toBe(204);
    await expectError(await api(`/channel-numbers/${t.numberId}`, t.key), 404, "not_found");
    expect((await json<{ data: unknown[] }>(await api("/channel-numbers", t.key))).data).toEqual([]);
  });
});

describe("GET /usage", () => {
  it("reports the current calendar month, messages and numbers, and no price", async () => {
    const free = await createTenant({ plan: "free" });
    const res = await api("/usage", free.key);
    expect(res.status).toBe(200);
    const body = await json(res);
    const now = new Date();
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
    expect(body).toEqual({
      period: { start, end: expect.any(String) },
      messages: { used: 0, limit: 1000, remaining: 1000 },
      numbers: { used: 1, limit: 1 },
      daily: expect.any(Array),
    });
    // One zero entry per day of the previous month and of this month up to today.
    const days = (body as { daily: { day: string; accepted: number }[] }).daily;
    const previousStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 10);
    expect(days[0]!.day).toBe(previousStart);
    expect(days.at(-1)!.day).toBe(now.toISOString().slice(0, 10));
    expect(days.every((d) => d.accepted === 0)).toBe(true);
    expect(JSON.stringify(body)).not.toMatch(/price|cost|amount|currency/i);
  });

  it("honours a workspace quota override", async () => {
    const t = await createTenant({ plan: "free", monthlyMessageQuota: 5 });
    const body = await json<{ messages: { limit: number } }>(await api("/usage", t.key));
    expect(body.messages.limit).toBe(5);
  });
});

describe("GET /webhooks", () => {
  it("lists exactly the workspace's webhooks, as configured, without secrets", async () => {
    const t = await createTenant();
    const other = await createTenant();
    const net = mockNetwork();
    try {
      net.dns.set("hooks.list.acme-shop.com", ["93.184.216.34"]);
      const configure = async (tenant: Tenant, path: string) =>
        json<Record<string, unknown> & { secret: string }>(
          await api("/webhooks", tenant.key, {
            method: "POST",
            json: { channelNumberId: tenant.numberId, url: `https://hooks.list.acme-shop.com/${path}` },
          }),
        );
      const { secret, ...mine } = await configure(t, "mine");
      const theirs = await configure(other, "theirs");
      expect((await json<{ data: unknown[] }>(await api("/webhooks", t.key))).data).toHaveLength(1);

      const res = await api("/webhooks", t.key);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(JSON.parse(text)).toEqual({
        data: [
          {
            id: mine.id,
            channelNumberId: t.numberId,
            url: "https://hooks.list.acme-shop.com/mine",
            status: "enabled",
            failingSince: null,
            disabledAt: null,
            createdAt: mine.createdAt,
            updatedAt: mine.updatedAt,
          },
        ],
        nextCursor: null,
      });
      expect(text).not.toContain(secret);
      expect(text).not.toContain(String(theirs.id));
    } finally {
      net.restore();
    }
    expect(net.unhandled).toEqual([]);
  });
});

describe("request ids and errors", () => {
  it("echoes a sane client request id and replaces an unsafe one", async () => {
    const a = await createTenant({ plan: "pro" });
    const echoed = await api("/me", a.key, { headers: { "X-Request-Id": "client-trace-12345" } });
    expect(echoed.headers.get("X-Request-Id")).toBe("client-trace-12345");
    const replaced = await api("/me", a.key, { headers: { "X-Request-Id": "bad id\twith<script>" } });
    expect(replaced.headers.get("X-Request-Id")).toMatch(/^req_[0-9a-f]{32}$/);
  });

  it("answers unknown routes with the uniform 404", async () => {
    const a = await createTenant({ plan: "pro" });
    for (const path of ["/api/v1/nope", "/api/v3/me", "/nope", "/admin/v1/nothing-here"]) {
      const res = await call(path, { headers: { Authorization: `Bearer ${a.key}` } });
      if (path.startsWith("/admin")) await expectError(res, 401, "unauthorized");
      else await expectError(res, 404, "not_found");
    }
    // A known path with another method is 405 (test/api/error-guidance.test.ts).
    await expectError(await api("/messages/1", a.key, { method: "DELETE" }), 405, "method_not_allowed");
  });

  it("turns an internal failure into a 500 without stack or SQL text, and recovers", async () => {
    const a = await createTenant({ plan: "pro" });
    await env.DB.exec("ALTER TABLE channel_numbers RENAME TO channel_numbers_broken");
    try {
      const res = await api("/channel-numbers", a.key);
      const text = await res.clone().text();
      const body = await expectError(res, 500, "internal_error");
      expect(body.error.message).not.toMatch(/sql|select|channel_numbers|D1|at .*\.ts/i);
      expect(text).not.toMatch(/SQLITE|no such table|stack|\.ts:\d+/i);
    } finally {
      await env.DB.exec("ALTER TABLE channel_numbers_broken RENAME TO channel_numbers");
    }
    expect((await api("/channel-numbers", a.key)).status).toBe(200);
  });
});
