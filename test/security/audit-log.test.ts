import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { app } from "../../src/app";
import { appendAudit, AUDIT_MAX_ROWS_PER_ACTION, type AuditRow } from "../../src/features/audit/store";
import { AUDIT_ACTIONS, type AuditAction } from "../../src/domain/audit";
import { purgeOldAudit } from "../../src/scheduled/audit-retention";
import { admin, api, json } from "../helpers/http";
import { createTenant, createWorkspace, TEST_CONTACT } from "../helpers/fixtures";
import { Browser, invite, PASSWORD, signedInMember, uniqueEmail } from "../helpers/dashboard";
import { liveConnectBody, connectLiveNumber, fakeOperatorAccount, operatorConfirmsNumber } from "../helpers/operator";
import { mockNetworkPerTest } from "../helpers/webhook-net";
import { world, type World } from "../helpers/world";

const net = mockNetworkPerTest();
afterEach(() => vi.restoreAllMocks());

// Every request of the walk comes from this address: each entry must name it.
const IP = "203.0.113.77";
const fromIp = { "CF-Connecting-IP": IP };
const NEW_PASSWORD = "a new and long enough passphrase";

/** The state-changing routes the app declares under `prefix` ("METHOD /path"), read from the router itself. */
function declaredRoutes(prefix: string): string[] {
  const mutating = new Set(["POST", "PUT", "PATCH", "DELETE"]);
  return [
    ...new Set(
      app.routes.filter((r) => mutating.has(r.method) && r.path.startsWith(prefix)).map((r) => `${r.method} ${r.path}`),
    ),
  ].sort();
}

/** What one route's request must leave in the log: its action, and who must be named as the actor. */
interface Walk {
  action: AuditAction;
  /** The answer when it is a refusal that is still recorded (a failed sign-in). */
  status?: number;
  /** Webhook deliveries the request causes: the walk waits for them, so that none is still under way when the next test starts. */
  deliveries?: number;
  run(w: World): Promise<{ res: Response; workspaceId: string; actor: { type: AuditRow["actor_type"]; id: string } }>;
}

const asOwner = (w: World) => ({ type: "member" as const, id: w.owner.memberId });
const asKey = (w: World) => ({ type: "api_key" as const, id: w.tenant.keyId });
const asAdmin = { type: "admin" as const, id: "" };
const post = (b: Browser, path: string, fields: Record<string, string> = {}) => b.post(path, fields, { ip: IP });
const adminCall = (path: string, init: RequestInit & { json?: unknown }) => admin(path, { ...init, headers: fromIp });
const apiCall = (path: string, key: string, init: RequestInit & { json?: unknown }) =>
  api(path, key, { ...init, headers: fromIp });

const DASHBOARD: Record<string, Walk> = {
  "POST /dashboard/sign-in": {
    action: "member.signed_in",
    run: async (w) => ({
      res: await post(new Browser(), "/dashboard/sign-in", { email: w.owner.email, password: PASSWORD }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/sign-out": {
    action: "member.signed_out",
    run: async (w) => ({
      res: await post(w.viewer.browser, "/dashboard/sign-out"),
      workspaceId: w.tenant.workspaceId,
      actor: { type: "member", id: w.viewer.memberId },
    }),
  },
  "POST /dashboard/invitations/:token": {
    action: "member.invitation_accepted",
    run: async (w) => {
      const { path, memberId } = await invite(w.tenant.workspaceId, uniqueEmail("joins"), "viewer");
      return {
        res: await post(new Browser(), path, { password: NEW_PASSWORD, confirm: NEW_PASSWORD }),
        workspaceId: w.tenant.workspaceId,
        actor: { type: "member", id: memberId },
      };
    },
  },
  "POST /dashboard/choose-workspace": {
    action: "member.signed_in",
    run: async (w) => {
      // The owner's email is also a member, with the same password, of a second workspace.
      const other = await createWorkspace({ name: "Second" });
      await signedInMember(other, "viewer", w.owner.email);
      const browser = new Browser();
      expect(
        (await post(browser, "/dashboard/sign-in", { email: w.owner.email, password: PASSWORD })).headers.get(
          "location",
        ),
      ).toBe("/dashboard/choose-workspace");
      return {
        res: await post(browser, "/dashboard/choose-workspace", { memberId: w.owner.memberId }),
        workspaceId: w.tenant.workspaceId,
        actor: asOwner(w),
      };
    },
  },
  "POST /dashboard/account/password": {
    action: "member.password_changed",
    run: async (w) => ({
      res: await post(w.owner.browser, "/dashboard/account/password", {
        current: PASSWORD,
        password: NEW_PASSWORD,
        confirm: NEW_PASSWORD,
      }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/api-keys": {
    action: "api_key.created",
    run: async (w) => ({
      res: await post(w.owner.browser, "/dashboard/api-keys", { name: "ci" }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/api-keys/:id/revoke": {
    action: "api_key.revoked",
    run: async (w) => ({
      res: await post(w.owner.browser, `/dashboard/api-keys/${w.tenant.keyId}/revoke`, { confirmed: "yes" }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/webhooks/:numberId": {
    action: "webhook.configured",
    run: async (w) => ({
      res: await post(w.owner.browser, `/dashboard/webhooks/${w.tenant.numberId}`, { url: w.webhookUrl }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/webhooks/:numberId/test": {
    action: "webhook.test_sent",
    deliveries: 1,
    run: async (w) => ({
      res: await post(w.owner.browser, `/dashboard/webhooks/${w.tenant.numberId}/test`),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/webhooks/:numberId/enable": {
    action: "webhook.reenabled",
    run: async (w) => {
      await env.DB.prepare("UPDATE webhooks SET status = 'disabled', disabled_at = updated_at WHERE id = ?")
        .bind(w.webhookId)
        .run();
      return {
        res: await post(w.owner.browser, `/dashboard/webhooks/${w.tenant.numberId}/enable`),
        workspaceId: w.tenant.workspaceId,
        actor: asOwner(w),
      };
    },
  },
  "POST /dashboard/webhooks/:numberId/deliveries/:eventId/replay": {
    action: "webhook.event_replayed",
    deliveries: 1,
    run: async (w) => ({
      res: await post(w.owner.browser, `/dashboard/webhooks/${w.tenant.numberId}/deliveries/${w.eventId}/replay`),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/numbers": {
    action: "channel_number.connected",
    run: async (w) => ({
      res: await post(w.owner.browser, "/dashboard/numbers", { type: "sandbox", displayPhoneNumber: "15550004444" }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/numbers/:id/token": {
    action: "channel_number.credentials_replaced",
    run: async (w) => {
      const account = fakeOperatorAccount();
      try {
        const u = liveConnectBody(account);
        const connected = await post(w.owner.browser, "/dashboard/numbers", {
          type: "cloud",
          phoneNumberId: u.phoneNumberId,
          wabaId: u.wabaId,
          accessToken: u.accessToken,
        });
        const res = await post(w.owner.browser, `${connected.headers.get("location") ?? ""}/token`, {
          accessToken: account.token,
        });
        return { res, workspaceId: w.tenant.workspaceId, actor: asOwner(w) };
      } finally {
        account.restore();
      }
    },
  },
  "POST /dashboard/numbers/:id/disconnect": {
    action: "channel_number.disconnected",
    run: async (w) => ({
      res: await post(w.owner.browser, `/dashboard/numbers/${w.tenant.numberId}/disconnect`, { confirmed: "yes" }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/numbers/:id/test-contacts": {
    action: "sandbox.test_contact_added",
    run: async (w) => ({
      res: await post(w.owner.browser, `/dashboard/numbers/${w.tenant.numberId}/test-contacts`, {
        phone: "5511987654321",
      }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/numbers/:id/test-contacts/:phone/remove": {
    action: "sandbox.test_contact_removed",
    // createTenant made TEST_CONTACT a test contact.
    run: async (w) => ({
      res: await post(w.owner.browser, `/dashboard/numbers/${w.tenant.numberId}/test-contacts/${TEST_CONTACT}/remove`),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/numbers/:id/templates/test": {
    action: "template.test_sent",
    // The message's status events: processing, sent, then the sandbox's delivered (2 s) and read (5 s).
    deliveries: 4,
    run: async (w) => ({
      res: await post(w.owner.browser, `/dashboard/numbers/${w.tenant.numberId}/templates/test`, {
        name: "appointment_reminder",
        language: "en_US",
        to: TEST_CONTACT,
        body_first_name: "Ana",
        body_date: "May 2",
        body_time: "10:00",
      }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/numbers/:id/test-messages": {
    action: "sandbox.test_message_sent",
    // As a template's test: processing, sent, then the sandbox's delivered and read.
    deliveries: 4,
    run: async (w) => ({
      res: await post(w.owner.browser, `/dashboard/numbers/${w.tenant.numberId}/test-messages`, {
        form: "buttons",
        to: TEST_CONTACT,
        body: "Confirm your table?",
        button_1: "Confirm",
      }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/members": {
    action: "member.invited",
    run: async (w) => ({
      res: await post(w.owner.browser, "/dashboard/members", { email: uniqueEmail("new"), role: "viewer" }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/members/:id/role": {
    action: "member.role_changed",
    run: async (w) => ({
      res: await post(w.owner.browser, `/dashboard/members/${w.viewer.memberId}/role`, { role: "developer" }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
  "POST /dashboard/members/:id/remove": {
    action: "member.removed",
    run: async (w) => ({
      res: await post(w.owner.browser, `/dashboard/members/${w.viewer.memberId}/remove`, { confirmed: "yes" }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
};

const API: Record<string, Walk | { exempt: string }> = {
  "POST /api/v1/messages": {
    exempt:
      "sends are the data plane (up to 1,200 a minute per workspace): each accepted message is its own record in the message history, " +
      "with its id and timestamps, which a D1 table could not hold at that rate",
  },
  "POST /api/v1/webhooks": {
    action: "webhook.configured",
    run: async (w) => ({
      res: await apiCall("/webhooks", w.tenant.key, {
        method: "POST",
        json: { channelNumberId: w.tenant.numberId, url: w.webhookUrl },
      }),
      workspaceId: w.tenant.workspaceId,
      actor: asKey(w),
    }),
  },
  "POST /api/v1/webhooks/:id/test": {
    action: "webhook.test_sent",
    deliveries: 1,
    run: async (w) => ({
      res: await apiCall(`/webhooks/${w.webhookId}/test`, w.tenant.key, { method: "POST" }),
      workspaceId: w.tenant.workspaceId,
      actor: asKey(w),
    }),
  },
  "POST /api/v1/webhooks/:id/deliveries/:eventId/replay": {
    action: "webhook.event_replayed",
    deliveries: 1,
    run: async (w) => ({
      res: await apiCall(`/webhooks/${w.webhookId}/deliveries/${w.eventId}/replay`, w.tenant.key, { method: "POST" }),
      workspaceId: w.tenant.workspaceId,
      actor: asKey(w),
    }),
  },
  "POST /api/v1/channel-numbers": {
    action: "channel_number.connected",
    run: async (w) => ({
      res: await apiCall("/channel-numbers", w.tenant.key, {
        method: "POST",
        json: { displayPhoneNumber: "15550003333", upstream: { type: "sandbox" } },
      }),
      workspaceId: w.tenant.workspaceId,
      actor: asKey(w),
    }),
  },
  "PATCH /api/v1/channel-numbers/:id": {
    action: "channel_number.credentials_replaced",
    run: async (w) => {
      const account = fakeOperatorAccount();
      try {
        const connected = await apiCall("/channel-numbers", w.tenant.key, {
          method: "POST",
          json: { upstream: liveConnectBody(account) },
        });
        const { id } = await json<{ id: string }>(connected);
        const res = await apiCall(`/channel-numbers/${id}`, w.tenant.key, {
          method: "PATCH",
          json: { accessToken: account.token },
        });
        return { res, workspaceId: w.tenant.workspaceId, actor: asKey(w) };
      } finally {
        account.restore();
      }
    },
  },
  "DELETE /api/v1/channel-numbers/:id": {
    action: "channel_number.disconnected",
    run: async (w) => ({
      res: await apiCall(`/channel-numbers/${w.tenant.numberId}`, w.tenant.key, { method: "DELETE" }),
      workspaceId: w.tenant.workspaceId,
      actor: asKey(w),
    }),
  },
  "POST /api/v1/sandbox/inbound": {
    action: "sandbox.inbound_injected",
    deliveries: 1,
    run: async (w) => ({
      res: await apiCall("/sandbox/inbound", w.tenant.key, {
        method: "POST",
        json: { channelNumberId: w.tenant.numberId, from: "5511987654321", text: { body: "hi" } },
      }),
      workspaceId: w.tenant.workspaceId,
      actor: asKey(w),
    }),
  },
  "POST /api/v1/sandbox/test-contacts": {
    action: "sandbox.test_contact_added",
    run: async (w) => ({
      res: await apiCall("/sandbox/test-contacts", w.tenant.key, {
        method: "POST",
        json: { channelNumberId: w.tenant.numberId, phone: "5511987654321" },
      }),
      workspaceId: w.tenant.workspaceId,
      actor: asKey(w),
    }),
  },
  "DELETE /api/v1/sandbox/test-contacts/:channelNumberId/:phone": {
    action: "sandbox.test_contact_removed",
    run: async (w) => ({
      // createTenant made TEST_CONTACT a test contact.
      res: await apiCall(`/sandbox/test-contacts/${w.tenant.numberId}/${TEST_CONTACT}`, w.tenant.key, {
        method: "DELETE",
      }),
      workspaceId: w.tenant.workspaceId,
      actor: asKey(w),
    }),
  },
};

/** State-changing routes only API v2 has. */
const API_V2_ONLY: Record<string, { exempt: string }> = {
  "POST /api/v2/messages/:id/read": {
    exempt:
      "read marks are the data plane (up to 1,200 a minute per workspace), like sends: each is kept on the inbound message's " +
      "own record (`readAt`), which a D1 table could not hold at that rate",
  },
  "POST /api/v2/media": {
    exempt:
      "a media file is a message's content (the data plane, like a send): its own row keeps when it was stored, " +
      "by which workspace, its type, size and sha256",
  },
  "DELETE /api/v2/media/:id": {
    exempt: "removes message content (the data plane, like a send), as a customer may for its users' privacy",
  },
};

const ADMIN: Record<string, Walk | { exempt: string }> = {
  "POST /admin/v1/dev/object-restarts": {
    exempt:
      "a local soak switch (404 unless DEV_OBJECT_RESTARTS): restarts objects, changes no workspace; recorded in admin_audit_log",
  },
  "POST /admin/v1/secrets/reseal": {
    exempt: "acts on no workspace (re-seals every workspace's secrets); recorded in admin_audit_log",
  },
  "POST /admin/v1/workspaces": {
    action: "workspace.created",
    run: async () => {
      const res = await adminCall("/workspaces", { method: "POST", json: { name: "Audited", plan: "pro" } });
      return { res, workspaceId: (await json<{ id: string }>(res.clone())).id, actor: asAdmin };
    },
  },
  "POST /admin/v1/workspaces/:workspaceId/api-keys": {
    action: "api_key.created",
    run: async (w) => ({
      res: await adminCall(`/workspaces/${w.tenant.workspaceId}/api-keys`, { method: "POST", json: { name: "ops" } }),
      workspaceId: w.tenant.workspaceId,
      actor: asAdmin,
    }),
  },
  "DELETE /admin/v1/api-keys/:keyId": {
    action: "api_key.revoked",
    run: async (w) => ({
      res: await adminCall(`/api-keys/${w.tenant.keyId}`, { method: "DELETE" }),
      workspaceId: w.tenant.workspaceId,
      actor: asAdmin,
    }),
  },
  "POST /admin/v1/workspaces/:workspaceId/channel-numbers": {
    action: "channel_number.connected",
    run: async (w) => ({
      res: await adminCall(`/workspaces/${w.tenant.workspaceId}/channel-numbers`, {
        method: "POST",
        json: { displayPhoneNumber: "15550002222", upstream: { type: "sandbox" } },
      }),
      workspaceId: w.tenant.workspaceId,
      actor: asAdmin,
    }),
  },
  "DELETE /admin/v1/channel-numbers/:numberId": {
    action: "channel_number.disconnected",
    run: async (w) => ({
      res: await adminCall(`/channel-numbers/${w.tenant.numberId}`, { method: "DELETE" }),
      workspaceId: w.tenant.workspaceId,
      actor: asAdmin,
    }),
  },
  "PUT /admin/v1/channel-numbers/:numberId/credentials": {
    action: "channel_number.credentials_replaced",
    run: async (w) => {
      const { numberId, phoneNumberId } = await connectLiveNumber(w.tenant.workspaceId);
      // The operator confirms the new token controls the number (answered at the network edge).
      const confirming = operatorConfirmsNumber(phoneNumberId, { displayPhoneNumber: "+1 555" });
      try {
        const res = await adminCall(`/channel-numbers/${numberId}/credentials`, {
          method: "PUT",
          json: { accessToken: "EAAG-a-new-token-0123456789" },
        });
        return { res, workspaceId: w.tenant.workspaceId, actor: asAdmin };
      } finally {
        confirming();
      }
    },
  },
  "POST /admin/v1/workspaces/:workspaceId/members": {
    action: "member.invited",
    run: async (w) => ({
      res: await adminCall(`/workspaces/${w.tenant.workspaceId}/members`, {
        method: "POST",
        json: { email: uniqueEmail("ops"), role: "viewer" },
      }),
      workspaceId: w.tenant.workspaceId,
      actor: asAdmin,
    }),
  },
  "DELETE /admin/v1/workspaces/:workspaceId/members/:memberId": {
    action: "member.removed",
    run: async (w) => ({
      res: await adminCall(`/workspaces/${w.tenant.workspaceId}/members/${w.viewer.memberId}`, { method: "DELETE" }),
      workspaceId: w.tenant.workspaceId,
      actor: asAdmin,
    }),
  },
};

/** Refusals that owners still need to see: each records one entry in the workspace it concerns. */
const REFUSALS: Record<string, Walk> = {
  "POST /dashboard/sign-in with a wrong password": {
    action: "member.sign_in_failed",
    status: 401,
    run: async (w) => ({
      res: await post(new Browser(), "/dashboard/sign-in", { email: w.owner.email, password: "not the password" }),
      workspaceId: w.tenant.workspaceId,
      actor: asOwner(w),
    }),
  },
};

const entryOf = (workspaceId: string, requestId: string) =>
  env.DB.prepare("SELECT * FROM audit_log WHERE workspace_id = ? AND request_id = ?")
    .bind(workspaceId, requestId)
    .all<AuditRow>();

/** Runs a route's request on a fresh world and checks its one entry. */
async function walk(walkOf: Walk) {
  const w = await world(net, "audit", true);
  const seenBefore = net.seen.length;
  const { res, workspaceId, actor } = await walkOf.run(w);
  await vi.waitFor(() => expect(net.seen).toHaveLength(seenBefore + (walkOf.deliveries ?? 0)), {
    timeout: 15_000,
    interval: 100,
  });
  if (walkOf.status === undefined) expect(res.status).toBeLessThan(400);
  else expect(res.status).toBe(walkOf.status);
  const requestId = res.headers.get("X-Request-Id") ?? "";
  // Some entries are written after the answer (a failed sign-in's): wait for it.
  const { results } = await vi.waitFor(
    async () => {
      const found = await entryOf(workspaceId, requestId);
      expect(found.results).toHaveLength(1);
      return found;
    },
    { timeout: 5_000, interval: 50 },
  );
  const entry = results[0]!;
  expect(entry).toMatchObject({
    action: walkOf.action,
    actor_type: actor.type,
    // The operator's staff address is the operator's, never shown to the customer.
    client_address: actor.type === "admin" ? null : IP,
    request_id: requestId,
  });
  if (actor.type === "admin") expect(entry.actor_id).toMatch(/^admin-token:[0-9a-f]{12}$/);
  else expect(entry.actor_id).toBe(actor.id);
  expect(Date.now() - Date.parse(entry.at)).toBeLessThan(60_000);
  expect(entry.target_type).not.toBe("");
  // Never a secret: no key, signing secret, invitation token, password or full webhook URL.
  const text = JSON.stringify(entry);
  expect(text).not.toMatch(/msg_live_|whsec_|invitations\/|EAAG/);
  expect(text).not.toContain(PASSWORD);
  expect(text).not.toContain(new URL(w.webhookUrl).pathname);
}

describe("every state-changing route writes one audit entry", () => {
  it("the lists below are exactly the routes the app declares (a new route must say what it records)", () => {
    expect(declaredRoutes("/dashboard/")).toEqual(Object.keys(DASHBOARD).sort());
    expect(declaredRoutes("/api/v1/")).toEqual(Object.keys(API).sort());
    expect(declaredRoutes("/admin/v1/")).toEqual(Object.keys(ADMIN).sort());
  });

  it("API v2 changes state through v1's routes (the same routers, mounted again: the walks below cover them) and its own below", () => {
    expect(declaredRoutes("/api/v2/")).toEqual(
      [...Object.keys(API).map((r) => r.replace(" /api/v1/", " /api/v2/")), ...Object.keys(API_V2_ONLY)].sort(),
    );
  });

  const walks = (table: Record<string, Walk | { exempt: string }>) =>
    Object.entries(table).filter((e): e is [string, Walk] => "action" in e[1]);
  it.each(walks(DASHBOARD))("dashboard: %s", async (_, w) => walk(w));
  it.each(walks(REFUSALS))("refused but recorded: %s", async (_, w) => walk(w));
  it.each(walks(API))("API: %s", async (_, w) => walk(w));
  it.each(walks(ADMIN))("admin: %s", async (_, w) => walk(w));

  it("every action has words on the owners' page", () => {
    const used = [
      ...Object.values(DASHBOARD),
      ...Object.values(REFUSALS),
      ...Object.values(API),
      ...Object.values(ADMIN),
    ].flatMap((w) => ("action" in w ? [w.action] : []));
    // A connect that takes over a number whose token the operator refused writes these instead
    // (test/operator/number-binding.test.ts walks them).
    const claims: AuditAction[] = ["channel_number.claimed", "channel_number.claimed_away"];
    expect(new Set([...used, ...claims])).toEqual(new Set(Object.keys(AUDIT_ACTIONS)));
  });
});

describe("the audit page", () => {
  it("owners see it, linked from the navigation; developers and viewers are refused and not offered the link", async () => {
    const t = await createTenant();
    const [owner, developer, viewer] = await Promise.all([
      signedInMember(t.workspaceId, "owner"),
      signedInMember(t.workspaceId, "developer"),
      signedInMember(t.workspaceId, "viewer"),
    ]);
    await post(developer.browser, "/dashboard/api-keys", { name: "<script>alert(1)</script>" });
    const page = await owner.browser.get("/dashboard/audit");
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('href="/dashboard/audit"');
    expect(html).toContain(developer.email);
    expect(html).toContain("API key created");
    expect(html).toContain(IP);
    expect(html).not.toContain("<script>alert(1)</script>");
    for (const m of [developer, viewer]) {
      const refused = await m.browser.get("/dashboard/audit");
      expect(refused.status).toBe(403);
      expect(await (await m.browser.get("/dashboard")).text()).not.toContain('href="/dashboard/audit"');
    }
  });

  it("never shows the operator staff's address: the operator's own log keeps it", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const staff = "10.20.30.40";
    const res = await admin(`/workspaces/${t.workspaceId}/api-keys`, {
      method: "POST",
      headers: { "CF-Connecting-IP": staff },
      json: { name: "support" },
    });
    expect(res.status).toBe(201);
    const requestId = res.headers.get("X-Request-Id")!;
    expect((await entryOf(t.workspaceId, requestId)).results[0]).toMatchObject({
      actor_type: "admin",
      client_address: null,
    });
    const admins = await env.DB.prepare("SELECT client_address FROM admin_audit_log WHERE request_id = ?")
      .bind(requestId)
      .first<{ client_address: string }>();
    expect(admins?.client_address).toBe(staff);
    // An entry written with the address (before it was left out) does not show it either.
    await appendAudit(env.DB, {
      workspace_id: t.workspaceId,
      at: new Date().toISOString(),
      actor_type: "admin",
      actor_id: "admin-token:0123456789ab",
      actor_label: "operator",
      action: "api_key.revoked",
      target_type: "api_key",
      target_id: null,
      detail: null,
      client_address: "10.20.30.41",
      request_id: "req_seed_staff",
    });
    const html = await (await owner.browser.get("/dashboard/audit")).text();
    expect(html).toContain("req_seed_staff");
    expect(html).toContain(requestId);
    expect(html).not.toContain(staff);
    expect(html).not.toContain("10.20.30.41");
  });

  it("filters by action and by kind of actor, and pages 50 at a time, newest first", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const source = {
      workspace_id: t.workspaceId,
      actor_label: null,
      target_type: "webhook",
      target_id: null,
      detail: null,
      client_address: null,
    };
    for (let i = 0; i < 60; i++) {
      await appendAudit(env.DB, {
        ...source,
        at: new Date(Date.now() - (60 - i) * 1000).toISOString(),
        actor_type: i % 2 ? "api_key" : "member",
        actor_id: i % 2 ? t.keyId : owner.memberId,
        action: i % 3 ? "webhook.test_sent" : "webhook.event_replayed",
        request_id: `req_seed_${String(i).padStart(2, "0")}`,
      });
    }
    const ids = (html: string) => [...html.matchAll(/req_seed_(\d\d)/g)].map((m) => Number(m[1]));
    const first = await (await owner.browser.get("/dashboard/audit")).text();
    expect(ids(first)).toEqual(Array.from({ length: 50 }, (_, i) => 59 - i));
    const older = /href="(\/dashboard\/audit\?before=\d+)"/.exec(first)?.[1];
    expect(older).toBeDefined();
    expect(ids(await (await owner.browser.get(older!)).text())).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);

    const replays = ids(
      await (await owner.browser.get("/dashboard/audit?action=webhook.event_replayed&actor=api_key")).text(),
    );
    expect(replays).toEqual([57, 51, 45, 39, 33, 27, 21, 15, 9, 3]);
    // An unknown filter is ignored, never an error.
    expect((await owner.browser.get("/dashboard/audit?action=drop%20table&before=x")).status).toBe(200);
  });
});

describe("the audit log's bound", () => {
  const entry = (workspaceId: string, at: string, n: number) => ({
    workspace_id: workspaceId,
    at,
    actor_type: "admin" as const,
    actor_id: "admin-token:000000000000",
    actor_label: null,
    action: "workspace.created",
    target_type: "workspace",
    target_id: workspaceId,
    detail: null,
    client_address: null,
    request_id: `req_bound_${n}`,
  });
  const requestIds = async (workspaceId: string) =>
    (
      await env.DB.prepare("SELECT request_id FROM audit_log WHERE workspace_id = ? ORDER BY seq")
        .bind(workspaceId)
        .all<{ request_id: string }>()
    ).results.map((r) => r.request_id);

  it("a flood of one action never pushes out another's entries: each action keeps its newest AUDIT_MAX_ROWS_PER_ACTION", async () => {
    const a = crypto.randomUUID();
    const at = () => new Date().toISOString();
    await appendAudit(env.DB, { ...entry(a, at(), 0), action: "channel_number.connected" });
    for (let n = 1; n <= AUDIT_MAX_ROWS_PER_ACTION + 20; n++)
      await appendAudit(env.DB, { ...entry(a, at(), n), action: "sandbox.test_contact_added" });
    const ids = await requestIds(a);
    expect(ids[0]).toBe("req_bound_0");
    expect(ids).toHaveLength(1 + AUDIT_MAX_ROWS_PER_ACTION);
    expect(ids.at(1)).toBe("req_bound_21");
    expect(ids.at(-1)).toBe(`req_bound_${AUDIT_MAX_ROWS_PER_ACTION + 20}`);
  });

  it("keeps at most the newest N entries of an action: each insert drops what fell below, other workspaces untouched", async () => {
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
    await appendAudit(env.DB, entry(b, new Date().toISOString(), 0), 3);
    for (let n = 1; n <= 5; n++) await appendAudit(env.DB, entry(a, new Date().toISOString(), n), 3);
    expect(await requestIds(a)).toEqual(["req_bound_3", "req_bound_4", "req_bound_5"]);
    expect(await requestIds(b)).toEqual(["req_bound_0"]);
  });

  it("the hourly job deletes entries older than 90 days and keeps the rest, to the millisecond", async () => {
    const a = crypto.randomUUID();
    const now = Date.now();
    const ninetyDays = 90 * 86_400_000;
    const ages = [91 * 86_400_000, ninetyDays + 1, ninetyDays, ninetyDays - 1, 89 * 86_400_000];
    for (const [n, age] of ages.entries()) await appendAudit(env.DB, entry(a, new Date(now - age).toISOString(), n));
    expect(await purgeOldAudit.run(env, now)).toBeGreaterThanOrEqual(2);
    // Exactly 90 days old is still within the 90 days the docs promise; a millisecond more is not.
    expect(await requestIds(a)).toEqual(["req_bound_2", "req_bound_3", "req_bound_4"]);
  });
});
