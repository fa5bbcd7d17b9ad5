import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, api, call, expectError } from "../helpers/http";
import { createKey, createTenant, type Tenant } from "../helpers/fixtures";

const PUBLIC_ENDPOINTS: [string, string][] = [
  ["POST", "/messages"],
  ["GET", "/messages/00000000-0000-4000-8000-000000000000"],
  ["GET", "/channel-numbers"],
  ["GET", "/channel-numbers/00000000-0000-4000-8000-000000000000"],
  ["GET", "/usage"],
  ["GET", "/me"],
  ["GET", "/webhooks"],
  ["POST", "/webhooks"],
  // Extensions beyond SPEC §4 sit behind the same authentication.
  ["GET", "/channel-numbers/00000000-0000-4000-8000-000000000000/contacts/5511999998888"],
  ["POST", "/sandbox/inbound"],
  ["GET", "/webhooks/00000000-0000-4000-8000-000000000000/deliveries"],
  ["POST", "/webhooks/00000000-0000-4000-8000-000000000000/deliveries/evt_0/replay"],
  ["POST", "/webhooks/00000000-0000-4000-8000-000000000000/test"],
];

/** A fresh tenant, and another key of its workspace that worked and was then revoked. */
async function tenantWithRevokedKey(): Promise<{ tenant: Tenant; revokedKey: string }> {
  const tenant = await createTenant();
  const { key, id } = await createKey(tenant.workspaceId);
  expect((await api("/me", key)).status).toBe(200);
  expect((await admin(`/api-keys/${id}`, { method: "DELETE" })).status).toBe(204);
  return { tenant, revokedKey: key };
}

function authCases(tenant: Tenant, revokedKey: string): [string, Record<string, string>][] {
  const secret = tenant.key.slice(`${env.API_KEY_PREFIX}live_`.length);
  return [
    ["no Authorization header", {}],
    ["Basic scheme", { Authorization: `Basic ${btoa(`user:${tenant.key}`)}` }],
    ["scheme without a key", { Authorization: "Bearer" }],
    ["malformed: a tab instead of a space", { Authorization: `Bearer\t${tenant.key}` }],
    ["malformed: trailing junk", { Authorization: `Bearer ${tenant.key} extra` }],
    ["unknown key", { Authorization: `Bearer ${env.API_KEY_PREFIX}live_${"A".repeat(43)}` }],
    ["wrong prefix", { Authorization: `Bearer other_live_${secret}` }],
    ["test-mode prefix", { Authorization: `Bearer ${env.API_KEY_PREFIX}test_${secret}` }],
    ["10 KB header value", { Authorization: `Bearer ${tenant.key}${"x".repeat(10_240)}` }],
    ["SQL in the key", { Authorization: `Bearer ${env.API_KEY_PREFIX}live_' OR 1=1 --` }],
    ["revoked key", { Authorization: `Bearer ${revokedKey}` }],
  ];
}

describe("API-key authentication", () => {
  it.each(PUBLIC_ENDPOINTS)(
    "%s %s refuses every bad credential with a uniform 401 and a Bearer challenge",
    async (method, path) => {
      const { tenant, revokedKey } = await tenantWithRevokedKey();
      for (const [name, headers] of authCases(tenant, revokedKey)) {
        const res = await api(path, null, {
          method,
          headers: { ...headers, "Content-Type": "application/json", "Idempotency-Key": "k1" },
          body: method === "POST" ? "{}" : undefined,
        });
        // RFC 6750 §3: no error parameter when no credentials were sent.
        const challenge =
          name === "no Authorization header" ? 'Bearer realm="api"' : 'Bearer realm="api", error="invalid_token"';
        expect(res.headers.get("WWW-Authenticate"), name).toBe(challenge);
        await expectError(res, 401, "unauthorized");
      }
    },
  );

  it.each([
    ["lowercase", "bearer"],
    ["uppercase", "BEARER"],
    ["mixed case", "bEaReR"],
  ])("accepts the %s scheme name (RFC 9110: the scheme is case-insensitive)", async (_, scheme) => {
    const tenant = await createTenant();
    const res = await api("/me", null, { headers: { Authorization: `${scheme} ${tenant.key}` } });
    expect(res.status).toBe(200);
  });

  it("accepts more than one space after the scheme (RFC 9110: 1*SP)", async () => {
    const tenant = await createTenant();
    expect((await api("/me", null, { headers: { Authorization: `Bearer   ${tenant.key}` } })).status).toBe(200);
  });

  it("accepts a well-formed current key", async () => {
    const tenant = await createTenant();
    const res = await api("/me", tenant.key);
    expect(res.status).toBe(200);
  });

  it("a created key works at once and a revoked key stops working", async () => {
    const tenant = await createTenant();
    const created = await admin(`/workspaces/${tenant.workspaceId}/api-keys`, { method: "POST", json: {} });
    const { key, id } = (await created.json()) as { key: string; id: string };
    expect((await api("/me", key)).status).toBe(200);

    expect((await admin(`/api-keys/${id}`, { method: "DELETE" })).status).toBe(204);
    await expectError(await api("/me", key), 401, "unauthorized");
    // Other keys of the workspace are unaffected.
    expect((await api("/me", tenant.key)).status).toBe(200);
  });

  it("the 401 body never echoes the presented key", async () => {
    const bogus = `${env.API_KEY_PREFIX}live_${"B".repeat(43)}`;
    const res = await api("/me", bogus);
    expect(await res.text()).not.toContain(bogus);
  });
});

describe("admin authentication", () => {
  // Real ids of a live tenant: with the right token each call would change or reveal something.
  const adminRoutes = (tenant: Tenant): [string, string, unknown?][] => [
    ["POST", "/workspaces", { name: "x", plan: "free" }],
    ["GET", `/workspaces/${tenant.workspaceId}`],
    ["POST", `/workspaces/${tenant.workspaceId}/api-keys`, { name: "x" }],
    ["GET", `/workspaces/${tenant.workspaceId}/api-keys`],
    ["DELETE", `/api-keys/${tenant.keyId}`],
    [
      "POST",
      `/workspaces/${tenant.workspaceId}/channel-numbers`,
      { displayPhoneNumber: "15550009999", upstream: { type: "sandbox" } },
    ],
    ["GET", `/workspaces/${tenant.workspaceId}/channel-numbers`],
    ["DELETE", `/channel-numbers/${tenant.numberId}`],
  ];

  it.each([
    ["missing", undefined],
    ["wrong", "Bearer not-the-admin-token"],
    ["an API key instead", "API_KEY"],
    ["Basic scheme", `Basic ${"ADMIN"}`],
    ["10 KB", `Bearer ${"ADMIN"}${"x".repeat(10_240)}`],
  ])("every admin route refuses a %s admin token, and nothing changes", async (_, header) => {
    const tenant = await createTenant();
    const value = header === "API_KEY" ? `Bearer ${tenant.key}` : header?.replace("ADMIN", env.ADMIN_TOKEN);
    const keysBefore = await (await admin(`/workspaces/${tenant.workspaceId}/api-keys`)).text();
    const numbersBefore = await (await admin(`/workspaces/${tenant.workspaceId}/channel-numbers`)).text();
    for (const [method, path, body] of adminRoutes(tenant)) {
      const res = await call(`/admin/v1${path}`, {
        method,
        headers: { "Content-Type": "application/json", ...(value ? { Authorization: value } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      expect(res.headers.get("WWW-Authenticate")).toBe(
        value ? 'Bearer realm="admin", error="invalid_token"' : 'Bearer realm="admin"',
      );
      const err = await expectError(res, 401, "unauthorized");
      expect(JSON.stringify(err)).not.toContain(env.ADMIN_TOKEN);
    }
    expect(await (await admin(`/workspaces/${tenant.workspaceId}/api-keys`)).text()).toBe(keysBefore);
    expect(await (await admin(`/workspaces/${tenant.workspaceId}/channel-numbers`)).text()).toBe(numbersBefore);
    expect((await api("/me", tenant.key)).status).toBe(200);
  });
});

describe("admin token scheme", () => {
  it("is case-insensitive, like the API key's", async () => {
    const tenant = await createTenant();
    const res = await call(`/admin/v1/workspaces/${tenant.workspaceId}`, {
      headers: { Authorization: `bEARER ${env.ADMIN_TOKEN}` },
    });
    expect(res.status).toBe(200);
  });
});
