import { workspaceStub } from "../../src/durable-objects/stubs";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { dashboard } from "../../src/dashboard/app";
import { api, BASE } from "../helpers/http";
import { createWorkspace, TEST_CONTACT } from "../helpers/fixtures";
import { world, type World } from "../helpers/world";
import { mockNetworkPerTest } from "../helpers/webhook-net";
import { Browser, signedInMember, uniqueEmail, type Member } from "../helpers/dashboard";

const net = mockNetworkPerTest();

/** Routes that name an event need a world with one. */
const namesEvent = (route: string) => route.includes(":eventId");

/** What any dashboard POST could change, read straight from D1. */
async function state(w: World) {
  const ws = w.tenant.workspaceId;
  const [keys, webhooks, members, audit, numbers, testContacts] = await Promise.all([
    env.DB.prepare("SELECT id, name, revoked_at FROM api_keys WHERE workspace_id = ? ORDER BY id").bind(ws).all(),
    env.DB.prepare("SELECT id, channel_number_id, url, sealed_secret, status FROM webhooks WHERE workspace_id = ?")
      .bind(ws)
      .all(),
    env.DB.prepare(
      "SELECT id, email, role, password_hash, invitation_hash FROM members WHERE workspace_id = ? ORDER BY id",
    )
      .bind(ws)
      .all(),
    // A refused request writes no audit entry either.
    env.DB.prepare("SELECT COUNT(*) AS n FROM audit_log WHERE workspace_id = ?").bind(ws).first(),
    env.DB.prepare("SELECT id, status, upstream_credentials FROM channel_numbers WHERE workspace_id = ? ORDER BY id")
      .bind(ws)
      .all(),
    env.DB.prepare(
      "SELECT t.channel_number_id, t.phone FROM sandbox_test_contacts t JOIN channel_numbers n ON n.id = t.channel_number_id WHERE n.workspace_id = ? ORDER BY 1, 2",
    )
      .bind(ws)
      .all(),
  ]);
  // Delivery attempts live in the workspace object's log.
  const attempts = await Promise.all(
    webhooks.results.map((w) =>
      workspaceStub(env, ws)
        .listDeliveries(String(w.channel_number_id), String(w.id), null, 100)
        .then((rows) => rows.length),
    ),
  );
  return JSON.stringify([
    keys.results,
    webhooks.results,
    members.results,
    attempts,
    audit,
    numbers.results,
    testContacts.results,
  ]);
}

/** Every POST route of the dashboard and who may use it. A new route must be added here, or this test fails. */
const POST_ROUTES = {
  "/sign-in": "public",
  "/sign-out": "public",
  "/invitations/:token": "public",
  "/choose-workspace": "public",
  "/account/password": "any member",
  "/api-keys": "developer",
  "/api-keys/:id/revoke": "developer",
  "/webhooks/:numberId": "developer",
  "/webhooks/:numberId/test": "developer",
  "/webhooks/:numberId/enable": "developer",
  "/webhooks/:numberId/deliveries/:eventId/replay": "developer",
  "/members": "owner",
  "/members/:id/role": "owner",
  "/members/:id/remove": "owner",
  "/numbers": "owner",
  "/numbers/:id/token": "owner",
  "/numbers/:id/disconnect": "owner",
  "/numbers/:id/test-contacts": "developer",
  "/numbers/:id/test-contacts/:phone/remove": "developer",
  "/numbers/:id/templates/test": "developer",
  "/numbers/:id/test-messages": "developer",
} as const;

/** A concrete path and a valid form for a route, aimed at workspace `w`'s own things. */
function request(route: string, w: World, target: Member): { path: string; fields: Record<string, string> } {
  if (namesEvent(route) && !w.eventId) throw new Error(`${route} needs a world with an event`);
  const path = `/dashboard${route}`
    .replace(":numberId", w.tenant.numberId)
    .replace(":eventId", w.eventId ?? "")
    .replace(":phone", TEST_CONTACT)
    .replace(
      ":id",
      route.startsWith("/members")
        ? target.memberId
        : route.startsWith("/numbers")
          ? w.tenant.numberId
          : w.tenant.keyId,
    );
  const fields: Record<string, Record<string, string>> = {
    "/api-keys": { name: "made by a forged post" },
    "/webhooks/:numberId": { url: w.webhookUrl },
    "/members": { email: uniqueEmail("forged"), role: "owner" },
    "/members/:id/role": { role: "owner" },
    "/numbers": { type: "sandbox", displayPhoneNumber: "15550008888" },
    "/numbers/:id/token": { accessToken: "EAAG-a-forged-token-000000" },
    "/numbers/:id/test-contacts": { phone: "5511955554444" },
    "/numbers/:id/test-messages": {
      form: "buttons",
      to: "5511999998888",
      body: "Confirm your table?",
      button_1: "Confirm",
    },
    "/numbers/:id/templates/test": {
      name: "appointment_reminder",
      language: "en_US",
      to: "5511955554444",
      body_first_name: "Ana",
      body_date: "May 2",
      body_time: "10:00",
    },
  };
  return { path, fields: { confirmed: "yes", ...(fields[route] ?? {}) } };
}

describe("dashboard POST routes", () => {
  it("are exactly the ones this file checks", () => {
    const posts = new Set(dashboard.routes.filter((r) => r.method === "POST").map((r) => r.path));
    expect([...posts].sort()).toEqual(Object.keys(POST_ROUTES).sort());
  });

  const guarded = Object.entries(POST_ROUTES).filter(([, who]) => who === "developer" || who === "owner");
  it.each(guarded)("%s refuses a viewer with 403 and changes nothing", async (route) => {
    const a = await world(net, "a", namesEvent(route));
    const before = await state(a);
    const { path, fields } = request(route, a, a.developer);
    const res = await a.viewer.browser.post(path, fields);
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("Not allowed");
    expect(await state(a)).toBe(before);
  });

  it.each(guarded.filter(([, who]) => who === "owner"))(
    "%s refuses a developer with 403 and changes nothing",
    async (route) => {
      const a = await world(net, "a");
      const before = await state(a);
      const { path, fields } = request(route, a, a.viewer);
      const res = await a.developer.browser.post(path, fields);
      expect(res.status).toBe(403);
      expect(await state(a)).toBe(before);
    },
  );

  it.each(guarded.filter(([route]) => route.includes(":")))(
    "%s aimed at another workspace's id gets the unknown-id 404 and changes nothing there",
    async (route) => {
      const [a, b] = await Promise.all([world(net, "a"), world(net, "b", namesEvent(route))]);
      const before = await state(b);
      const { path, fields } = request(route, b, b.developer);
      const res = await a.owner.browser.post(path, fields);
      expect(res.status).toBe(404);
      const unknown = await a.owner.browser.post(path.replace(/[0-9a-f-]{36}/g, crypto.randomUUID()), fields);
      expect(unknown.status).toBe(404);
      const strip = (html: string) => html.replace(/req_[0-9a-f]+/g, "");
      expect(strip(await res.text())).toBe(strip(await unknown.text()));
      expect(await state(b)).toBe(before);
    },
  );

  it("pages of another workspace's number and webhook are the unknown-id 404", async () => {
    const [a, b] = await Promise.all([world(net, "a"), world(net, "b")]);
    for (const path of [`/dashboard/numbers/${b.tenant.numberId}`, `/dashboard/webhooks/${b.tenant.numberId}`]) {
      const res = await a.owner.browser.get(path);
      expect(res.status).toBe(404);
      expect(await res.text()).not.toContain(b.webhookUrl);
    }
    // B's key still works after A's attempts.
    expect((await api("/me", b.tenant.key)).status).toBe(200);
  });
});

describe("webhook URLs", () => {
  it("are shown in full to developers and owners, and as scheme and host only to viewers (a URL may embed a token)", async () => {
    const w = await world(net, "u");
    const { host } = new URL(w.webhookUrl);
    const pages = [
      "/dashboard/webhooks",
      `/dashboard/webhooks/${w.tenant.numberId}`,
      `/dashboard/numbers/${w.tenant.numberId}`,
    ];
    for (const path of pages) {
      const viewerPage = await (await w.viewer.browser.get(path)).text();
      expect(viewerPage).toContain(`https://${host}/…`);
      expect(viewerPage).not.toContain(w.webhookUrl);
      expect(await (await w.developer.browser.get(path)).text()).toContain(w.webhookUrl);
    }
  });
});

describe("CSRF", () => {
  const createKey = (a: World, from: { origin?: string | null; site?: string | null }) =>
    a.owner.browser.post("/dashboard/api-keys", { name: "csrf" }, from);

  it.each([
    ["another site", { origin: "https://evil.example", site: "cross-site" }],
    ["a sibling subdomain", { origin: "https://evil.gateway.test", site: "same-site" }],
    ["no Origin and no Sec-Fetch-Site", { origin: null, site: null }],
    ["a forged Origin only", { origin: "https://evil.example", site: null }],
  ])("refuses a form posted from %s with 403, changing nothing", async (_label, from) => {
    const a = await world(net, "a");
    const before = await state(a);
    const res = await createKey(a, from);
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("Form refused");
    expect(await state(a)).toBe(before);
  });

  it("accepts the same form from the dashboard's own origin (Origin alone, or Sec-Fetch-Site alone)", async () => {
    const a = await world(net, "a");
    expect((await createKey(a, { origin: BASE, site: null })).status).toBe(303);
    expect((await createKey(a, { origin: null, site: "same-origin" })).status).toBe(303);
  });

  it("refuses any body that is not a form, so that no POST escapes the origin check", async () => {
    const a = await world(net, "a");
    for (const type of ["application/json", "text/xml", ""]) {
      const res = await a.owner.browser.post(
        `/dashboard/webhooks/${a.tenant.numberId}/test`,
        {},
        {
          origin: "https://evil.example",
          site: "cross-site",
          raw: { type, body: "{}" },
        },
      );
      expect(res.status).toBe(415);
    }
  });

  it("also guards sign-in (no login CSRF)", async () => {
    const owner = await signedInMember(await createWorkspace(), "owner");
    const res = await new Browser().post(
      "/dashboard/sign-in",
      { email: owner.email, password: "x" },
      { origin: "https://evil.example", site: "cross-site" },
    );
    expect(res.status).toBe(403);
  });
});
