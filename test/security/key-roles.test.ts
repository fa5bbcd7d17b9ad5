import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { admin, api, call, expectError, json } from "../helpers/http";
import { createKey, createTenant, createWorkspace } from "../helpers/fixtures";
import { html, signedInMember, type Member } from "../helpers/dashboard";
import { send, textMessage } from "../helpers/send";
import { liveConnectBody, fakeAccounts } from "../helpers/operator";
import { app } from "../../src/app";

type Role = "owner" | "developer" | "viewer";
const ROLES: readonly Role[] = ["viewer", "developer", "owner"];
const RANK: Record<Role, number> = { viewer: 0, developer: 1, owner: 2 };

/**
 * The least key role of every public API route, v1 and v2, written out here
 * on purpose rather than read from src/: a route added without a decision, or
 * a decision changed, fails below until this table says so too.
 */
const V1: Record<string, Role> = {
  "GET /me": "viewer",
  "GET /usage": "viewer",
  "GET /channel-numbers": "viewer",
  "GET /channel-numbers/:id": "viewer",
  "GET /channel-numbers/:id/contacts/:phone": "viewer",
  "POST /channel-numbers": "owner",
  "PATCH /channel-numbers/:id": "owner",
  "DELETE /channel-numbers/:id": "owner",
  "POST /messages": "developer",
  "GET /messages": "viewer",
  "GET /messages/:id": "viewer",
  "GET /messages/:id/events": "viewer",
  "GET /messages/:id/media": "viewer",
  "GET /message-archives": "viewer",
  "GET /message-archives/:day": "viewer",
  "GET /webhooks": "viewer",
  "POST /webhooks": "developer",
  "GET /webhooks/:id/deliveries": "viewer",
  "POST /webhooks/:id/deliveries/:eventId/replay": "developer",
  "POST /webhooks/:id/test": "developer",
  "POST /sandbox/inbound": "developer",
  "GET /sandbox/test-contacts": "viewer",
  "POST /sandbox/test-contacts": "developer",
  "DELETE /sandbox/test-contacts/:channelNumberId/:phone": "developer",
};
const V2: Record<string, Role> = {
  ...V1,
  "GET /templates": "viewer",
  "GET /templates/:name": "viewer",
  "POST /messages/:id/read": "developer",
  "POST /media": "developer",
  "GET /media": "viewer",
  "GET /media/:id": "viewer",
  "GET /media/:id/content": "viewer",
  "DELETE /media/:id": "developer",
};
const TABLE: Record<string, Record<string, Role>> = { "/api/v1": V1, "/api/v2": V2 };

/** Every route the Worker answers under a version, as Hono matches it (the documents themselves excluded). */
const routesOf = (base: string): string[] =>
  [
    ...new Set(
      app.routes
        .filter((r) => r.method !== "ALL" && r.path.startsWith(`${base}/`) && r.path !== `${base}/openapi.json`)
        .map((r) => `${r.method} ${r.path.slice(base.length)}`),
    ),
  ].sort();

const SAMPLE: Record<string, string> = {
  id: "6f1c2c4e-0000-4000-8000-000000000001",
  eventId: "6f1c2c4e-0000-4000-8000-000000000002",
  channelNumberId: "6f1c2c4e-0000-4000-8000-000000000003",
  phone: "5511999998888",
  day: "2026-01-01",
  name: "order_update",
};

async function keyWithRole(workspaceId: string, role: Role): Promise<string> {
  const res = await admin(`/workspaces/${workspaceId}/api-keys`, { method: "POST", json: { name: role, role } });
  expect(res.status).toBe(201);
  const body = await json<{ key: string; role: string }>(res);
  expect(body.role).toBe(role);
  return body.key;
}

const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

/** The key's own view of itself (GET /me, v1 or v2). */
async function meOf(key: string, base = "/api/v1") {
  const res = await call(`${base}/me`, { headers: bearer(key) });
  expect(res.status).toBe(200);
  return json<{ apiKey: { id: string; role: string } }>(res);
}

/** A member makes a key on the dashboard's API keys page; returns the key shown once and the page's answer. */
async function dashboardKey(member: Member, fields: Record<string, string>) {
  const res = await member.browser.post("/dashboard/api-keys", fields);
  if (res.status !== 303) return { res, key: null };
  const page = await html(await member.browser.get("/dashboard/api-keys"));
  return { res, key: /msg_live_[A-Za-z0-9_-]{43}/.exec(page)?.[0] ?? null };
}

const accounts = fakeAccounts();
afterEach(() => {
  accounts.restoreAll();
  vi.restoreAllMocks();
});

describe("every public API route declares the least key role it needs", () => {
  it("the routes of v1 and v2 are exactly the routes of the table (a new route needs a decision)", () => {
    for (const [base, table] of Object.entries(TABLE)) expect(routesOf(base), base).toEqual(Object.keys(table).sort());
  });

  it("each OpenAPI document shows the role of each operation as x-key-role", async () => {
    for (const [base, table] of Object.entries(TABLE)) {
      const doc = await json<{ paths: Record<string, Record<string, { "x-key-role"?: string }>> }>(
        await call(`${base}/openapi.json`),
      );
      const shown: Record<string, string | undefined> = {};
      for (const [path, item] of Object.entries(doc.paths))
        for (const [method, op] of Object.entries(item))
          shown[`${method.toUpperCase()} ${path.replaceAll(/\{([^}]+)\}/g, ":$1")}`] = op["x-key-role"];
      expect(shown, base).toEqual(table);
    }
  });

  it("each route × role: a key below the route's role gets 403 insufficient_role before anything is read; at or above, never", async () => {
    const workspaceId = await createWorkspace();
    const keys = Object.fromEntries(
      await Promise.all(ROLES.map(async (r) => [r, await keyWithRole(workspaceId, r)] as const)),
    ) as Record<Role, string>;
    for (const [base, table] of Object.entries(TABLE)) {
      for (const [route, needed] of Object.entries(table)) {
        const [method, template] = route.split(" ") as [string, string];
        const path = template.replaceAll(/:([A-Za-z]+)/g, (_, p: string) => SAMPLE[p]!);
        for (const role of ROLES) {
          const res = await call(`${base}${path}`, { method, headers: bearer(keys[role]) });
          const what = `${role} key, ${method} ${base}${template}`;
          if (RANK[role] < RANK[needed]) {
            expect(res.status, what).toBe(403);
            const body = await expectError(res, 403, "insufficient_role");
            expect(body.error.message, what).toContain(`needs a ${needed} key`);
          } else {
            const body = res.headers.get("content-type")?.includes("json") ? await res.text() : "";
            expect(body, what).not.toContain("insufficient_role");
          }
        }
      }
    }
  });
});

describe("a key never does what its maker cannot", () => {
  it("a developer's dashboard key cannot connect, re-key or disconnect a number; the number stays connected", async () => {
    const a = accounts.account();
    const workspaceId = await createWorkspace();
    const { key: ownerKey } = await createKey(workspaceId);
    const connected = await api("/channel-numbers", ownerKey, {
      method: "POST",
      json: { upstream: liveConnectBody(a) },
    });
    expect(connected.status).toBe(201);
    const numberId = (await json<{ id: string }>(connected)).id;
    const dev = await signedInMember(workspaceId, "developer");

    const { key: devKey } = await dashboardKey(dev, { name: "mine" });
    expect(devKey).not.toBeNull();
    expect((await meOf(devKey!)).apiKey.role).toBe("developer");
    await expectError(
      await api(`/channel-numbers/${numberId}`, devKey!, { method: "DELETE" }),
      403,
      "insufficient_role",
    );
    await expectError(
      await api(`/channel-numbers/${numberId}`, devKey!, {
        method: "PATCH",
        json: { accessToken: "EAAGanotherTokenOfTheDeveloper0123" },
      }),
      403,
      "insufficient_role",
    );
    await expectError(
      await api("/channel-numbers", devKey!, {
        method: "POST",
        json: { displayPhoneNumber: "+15550003333", upstream: { type: "sandbox" } },
      }),
      403,
      "insufficient_role",
    );
    const numbers = await json<{ data: { id: string; upstream: string }[] }>(await api("/channel-numbers", devKey!));
    expect(numbers.data.map((n) => n.id)).toEqual([numberId]);
    // What a developer may do, the key does.
    expect((await api(`/channel-numbers/${numberId}`, devKey!)).status).toBe(200);
  });

  it("a developer cannot make an owner key: the form offers developer and viewer, and a forged owner choice is refused with nothing made", async () => {
    const workspaceId = await createWorkspace();
    const dev = await signedInMember(workspaceId, "developer");
    const page = await html(await dev.browser.get("/dashboard/api-keys"));
    const options = [...page.matchAll(/<option value="(\w+)"/g)].map((m) => m[1]);
    expect(options).toEqual(["developer", "viewer"]);

    const { res } = await dashboardKey(dev, { name: "escalate", role: "owner" });
    expect(res.status).toBe(403);
    expect(await html(res)).toContain("This needs the <strong>owner</strong> role");
    const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM api_keys WHERE workspace_id = ?")
      .bind(workspaceId)
      .first<{ n: number }>();
    expect(rows?.n).toBe(0);
    const { res: bad } = await dashboardKey(dev, { name: "typo", role: "admin" });
    expect(bad.status).toBe(400);
    expect(await html(bad)).toContain("Choose the key&#39;s role");
  });

  it("an owner's owner key changes numbers, and the keys page and audit log show each key's role", async () => {
    const workspaceId = await createWorkspace();
    const owner = await signedInMember(workspaceId, "owner");
    const page = await html(await owner.browser.get("/dashboard/api-keys"));
    expect([...page.matchAll(/<option value="(\w+)"/g)].map((m) => m[1])).toEqual(["owner", "developer", "viewer"]);

    const { key } = await dashboardKey(owner, { name: "ops", role: "owner" });
    expect(key).not.toBeNull();
    expect((await meOf(key!)).apiKey.role).toBe("owner");
    expect((await meOf(key!, "/api/v2")).apiKey.role).toBe("owner");
    const connected = await api("/channel-numbers", key!, {
      method: "POST",
      json: { displayPhoneNumber: "+15550004444", upstream: { type: "sandbox" } },
    });
    expect(connected.status).toBe(201);
    const numberId = (await json<{ id: string }>(connected)).id;
    expect((await api(`/channel-numbers/${numberId}`, key!, { method: "DELETE" })).status).toBe(204);

    const { key: defaultKey } = await dashboardKey(owner, { name: "ci" });
    expect((await meOf(defaultKey!)).apiKey.role).toBe("developer");
    const listed = await html(await owner.browser.get("/dashboard/api-keys"));
    expect(listed).toMatch(/<td>ops<\/td>\s*<td><code>[^<]+<\/code><\/td>\s*<td>owner<\/td>/);
    expect(listed).toMatch(/<td>ci<\/td>\s*<td><code>[^<]+<\/code><\/td>\s*<td>developer<\/td>/);
    const { results } = await env.DB.prepare(
      "SELECT detail FROM audit_log WHERE workspace_id = ? AND action = 'api_key.created' ORDER BY seq",
    )
      .bind(workspaceId)
      .all<{ detail: string }>();
    expect(results.map((r) => r.detail)).toEqual([
      `"ops" (…${key!.slice(-4)}), role owner`,
      `"ci" (…${defaultKey!.slice(-4)}), role developer`,
    ]);
  });

  it("a viewer (read-only) key reads but cannot send, in v1 or v2: nothing is queued", async () => {
    const tenant = await createTenant();
    const viewerKey = await keyWithRole(tenant.workspaceId, "viewer");
    const me = await meOf(viewerKey);
    expect(me.apiKey.role).toBe("viewer");
    const made = await env.DB.prepare(
      "SELECT actor_type, detail FROM audit_log WHERE workspace_id = ? AND action = 'api_key.created' AND target_id = ?",
    )
      .bind(tenant.workspaceId, me.apiKey.id)
      .first<{ actor_type: string; detail: string }>();
    expect(made).toEqual({ actor_type: "admin", detail: `"viewer" (…${viewerKey.slice(-4)}), role viewer` });
    await expectError(
      await send(viewerKey, crypto.randomUUID(), textMessage(tenant.numberId)),
      403,
      "insufficient_role",
    );
    const v2 = await call("/api/v2/messages", {
      method: "POST",
      headers: { ...bearer(viewerKey), "Content-Type": "application/json", "Idempotency-Key": crypto.randomUUID() },
      body: JSON.stringify({ channelNumberId: tenant.numberId, to: "5511999998888", text: { body: "hi" } }),
    });
    await expectError(v2, 403, "insufficient_role");
    await expectError(
      await api("/webhooks", viewerKey, {
        method: "POST",
        json: { channelNumberId: tenant.numberId, url: "https://hooks.example.com/x" },
      }),
      403,
      "insufficient_role",
    );
    const list = await json<{ data: unknown[] }>(await api("/messages", viewerKey));
    expect(list.data).toEqual([]);
    const usage = await json<{ messages: { used: number } }>(await api("/usage", viewerKey));
    expect(usage.messages.used).toBe(0);
    // The workspace's own developer-or-better key still sends.
    expect((await send(tenant.key, crypto.randomUUID(), textMessage(tenant.numberId))).status).toBe(201);
  });
});

describe("keys made before roles (migration 0030)", () => {
  it("become owner keys when the operator or a member who is an owner now made them; every other key is a developer key", async () => {
    const workspaceId = await createWorkspace();
    const byAdmin = await keyWithRole(workspaceId, "owner");
    const owner = await signedInMember(workspaceId, "owner");
    const demoted = await signedInMember(workspaceId, "owner");
    const dev = await signedInMember(workspaceId, "developer");
    const byOwner = (await dashboardKey(owner, { name: "owner's", role: "owner" })).key!;
    const byDemoted = (await dashboardKey(demoted, { name: "demoted's", role: "owner" })).key!;
    const byDev = (await dashboardKey(dev, { name: "dev's" })).key!;
    const aged = (await dashboardKey(owner, { name: "aged out", role: "owner" })).key!;
    const idOf = async (key: string) => (await meOf(key)).apiKey.id;
    const ids = {
      byAdmin: await idOf(byAdmin),
      byOwner: await idOf(byOwner),
      byDemoted: await idOf(byDemoted),
      byDev: await idOf(byDev),
      aged: await idOf(aged),
    };
    // The state the migration finds: every key with the column's default, one owner since demoted,
    // and one key whose creation entry has left the audit log.
    await env.DB.batch([
      env.DB.prepare("UPDATE api_keys SET role = 'developer' WHERE workspace_id = ?").bind(workspaceId),
      env.DB.prepare("UPDATE members SET role = 'developer' WHERE id = ?").bind(demoted.memberId),
      env.DB.prepare("DELETE FROM audit_log WHERE workspace_id = ? AND target_id = ?").bind(workspaceId, ids.aged),
    ]);
    const migration = env.TEST_MIGRATIONS.find((m) => m.name.startsWith("0030_"));
    expect(migration).toBeDefined();
    // Everything after the column itself (which exists already here).
    const withoutComments = (q: string) => q.replaceAll(/^\s*--.*$/gm, "").trim();
    const backfill = migration!.queries.map(withoutComments).filter((q) => !/^ALTER TABLE/i.test(q));
    expect(backfill.length).toBeGreaterThan(0);
    for (const q of backfill) await env.DB.prepare(q).run();

    const { results } = await env.DB.prepare("SELECT id, role FROM api_keys WHERE workspace_id = ?")
      .bind(workspaceId)
      .all<{ id: string; role: string }>();
    const roleOf = Object.fromEntries(results.map((r) => [r.id, r.role]));
    expect({
      byAdmin: roleOf[ids.byAdmin],
      byOwner: roleOf[ids.byOwner],
      byDemoted: roleOf[ids.byDemoted],
      byDev: roleOf[ids.byDev],
      aged: roleOf[ids.aged],
    }).toEqual({ byAdmin: "owner", byOwner: "owner", byDemoted: "developer", byDev: "developer", aged: "developer" });
  });
});
