import { workspaceStub } from "../../src/durable-objects/stubs";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { CONTENT_SECURITY_POLICY } from "../../src/dashboard/headers";
import { LAST_USED_RESOLUTION_MS, noteKeyUsed } from "../../src/features/api-keys/record-use";
import { recordKeyUse } from "../../src/features/api-keys/store";
import { api, call } from "../helpers/http";
import { createTenant, createWorkspace, type Tenant } from "../helpers/fixtures";
import { answers, mockNetworkPerTest } from "../helpers/webhook-net";
import { Browser, invite, PASSWORD, signedInMember, uniqueEmail, type Member } from "../helpers/dashboard";
import { fakeClock } from "../helpers/clock";

const net = mockNetworkPerTest();

/** A fresh tenant and its owner, signed in. */
async function ownedTenant(): Promise<{ tenant: Tenant; owner: Member }> {
  const tenant = await createTenant();
  return { tenant, owner: await signedInMember(tenant.workspaceId, "owner") };
}

const KEY = /msg_live_[A-Za-z0-9_-]{43}/;
const SCRIPT_TAGS = /<script/gi;

/** A public host for webhook URLs, answered by the mocked DNS resolver and receiver. */
function receiver(...statuses: number[]): string {
  const host = `hooks-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
  net.dns.set(host, ["93.184.216.34"]);
  const url = `https://${host}/in?source=dashboard&x=1`;
  net.receivers.set(url, answers(...(statuses.length ? statuses : [204])));
  return url;
}

function expectSecurityHeaders(res: Response, what: string) {
  const h = res.headers;
  expect(h.get("content-security-policy"), what).toBe(CONTENT_SECURITY_POLICY);
  expect(CONTENT_SECURITY_POLICY).toMatch(/^default-src 'self'; script-src 'self'; style-src 'self';/);
  expect(CONTENT_SECURITY_POLICY).toContain("frame-ancestors 'none'");
  expect(h.get("x-content-type-options"), what).toBe("nosniff");
  expect(h.get("x-frame-options"), what).toBe("DENY");
  expect(["same-origin", "no-referrer"], what).toContain(h.get("referrer-policy"));
  expect(h.get("cache-control"), what).toBe("no-store");
}

describe("every dashboard response", () => {
  it("carries the security headers: pages, errors, forms refused and redirects", async () => {
    const { tenant, owner } = await ownedTenant();
    const viewer = await signedInMember(tenant.workspaceId, "viewer");
    const { path: invitation } = await invite(tenant.workspaceId, uniqueEmail("headers"), "viewer");
    const responses: [string, Response][] = [];
    for (const path of [
      "/dashboard",
      "/dashboard/messages",
      "/dashboard/messages?to=not-a-number",
      `/dashboard/messages/${crypto.randomUUID()}`,
      "/dashboard/api-keys",
      "/dashboard/numbers",
      `/dashboard/numbers/${tenant.numberId}`,
      "/dashboard/webhooks",
      `/dashboard/webhooks/${tenant.numberId}`,
      "/dashboard/members",
      "/dashboard/account",
      `/dashboard/numbers/${crypto.randomUUID()}`,
      "/dashboard/no-such-page",
    ]) {
      responses.push([path, await owner.browser.get(path)]);
    }
    responses.push(["sign-in", await new Browser().get("/dashboard/sign-in")]);
    responses.push(["invitation", await new Browser().get(invitation)]);
    responses.push(["dead invitation", await new Browser().get(`/dashboard/invitations/${"a".repeat(43)}`)]);
    responses.push(["signed out", await new Browser().get("/dashboard/api-keys")]);
    responses.push(["viewer refused", await viewer.browser.post("/dashboard/api-keys", { name: "x" })]);
    responses.push([
      "cross-site",
      await owner.browser.post(
        "/dashboard/api-keys",
        { name: "x" },
        { origin: "https://evil.example", site: "cross-site" },
      ),
    ]);
    responses.push(["bad form", await owner.browser.post("/dashboard/api-keys", { name: "" })]);
    responses.push([
      "wrong password",
      await new Browser().post(
        "/dashboard/sign-in",
        { email: owner.email, password: "nope nope nope" },
        { ip: "192.0.2.1" },
      ),
    ]);

    expect(responses.map(([p, r]) => `${p} ${r.status}`)).toEqual([
      "/dashboard 200",
      "/dashboard/messages 200",
      "/dashboard/messages?to=not-a-number 400",
      expect.stringMatching(/^\/dashboard\/messages\/.* 404$/),
      "/dashboard/api-keys 200",
      "/dashboard/numbers 200",
      `/dashboard/numbers/${tenant.numberId} 200`,
      "/dashboard/webhooks 200",
      `/dashboard/webhooks/${tenant.numberId} 200`,
      "/dashboard/members 200",
      "/dashboard/account 200",
      expect.stringMatching(/^\/dashboard\/numbers\/.* 404$/),
      "/dashboard/no-such-page 404",
      "sign-in 200",
      "invitation 200",
      "dead invitation 404",
      "signed out 303",
      "viewer refused 403",
      "cross-site 403",
      "bad form 400",
      "wrong password 401",
    ]);
    for (const [what, res] of responses) {
      expectSecurityHeaders(res, what);
      if (res.status !== 303) expect(res.headers.get("content-type"), what).toMatch(/^text\/html; charset=UTF-8$/i);
    }
  });
});

describe("API keys page", () => {
  it("shows a new key in exactly one response: the page after the redirect", async () => {
    const { tenant, owner } = await ownedTenant();
    const seen: string[] = [];
    const record = async (res: Response) => {
      seen.push(`${res.status} ${JSON.stringify([...res.headers])} ${await res.text()}`);
      return res;
    };
    const created = await record(await owner.browser.post("/dashboard/api-keys", { name: "once" }));
    expect(created.status).toBe(303);
    expect(created.headers.get("location")).toBe("/dashboard/api-keys");
    await record(await owner.browser.get("/dashboard/api-keys"));
    await record(await owner.browser.get("/dashboard/api-keys"));
    await record(await owner.browser.get("/dashboard"));

    const key = KEY.exec(seen[1]!)?.[0];
    expect(key).toBeDefined();
    expect(seen.map((text) => text.includes(key!))).toEqual([false, true, false, false]);
    expect(seen[1]).toContain("you won&#39;t see it again");
    // It works, and only its hash is stored.
    expect((await api("/me", key!)).status).toBe(200);
    const row = await env.DB.prepare("SELECT * FROM api_keys WHERE name = 'once' AND workspace_id = ?")
      .bind(tenant.workspaceId)
      .first();
    expect(JSON.stringify(row)).not.toContain(key!.slice(9));
  });

  it("revokes after a confirmation (a second page without JavaScript); the key stops working", async () => {
    const { tenant, owner } = await ownedTenant();
    await owner.browser.post("/dashboard/api-keys", { name: "to revoke" });
    const key = KEY.exec(await (await owner.browser.get("/dashboard/api-keys")).text())![0];
    const id = await env.DB.prepare("SELECT id FROM api_keys WHERE name = 'to revoke' AND workspace_id = ?")
      .bind(tenant.workspaceId)
      .first<string>("id");
    const ask = await owner.browser.post(`/dashboard/api-keys/${id}/revoke`);
    expect(ask.status).toBe(200);
    expect(await ask.text()).toMatch(/<input type="hidden" name="confirmed" value="yes"\/>/);
    expect((await api("/me", key)).status).toBe(200);
    const done = await owner.browser.post(`/dashboard/api-keys/${id}/revoke`, { confirmed: "yes" });
    expect(done.status).toBe(303);
    expect((await api("/me", key)).status).toBe(401);
    expect(await (await owner.browser.get("/dashboard/api-keys")).text()).toMatch(/revoked <time/);
  });

  it(`records "last used" at most once per key per ${LAST_USED_RESOLUTION_MS / 60_000} minutes, and shows it`, async () => {
    const clock = fakeClock();
    const t = await createTenant();
    const lastUsed = () =>
      env.DB.prepare("SELECT last_used_at FROM api_keys WHERE id = ?")
        .bind(t.keyId)
        .first<string | null>("last_used_at");
    const t0 = Date.now();
    // Through the API: the middleware's hook records the use after the response.
    expect((await api("/me", t.key)).status).toBe(200);
    await vi.waitFor(async () => expect(await lastUsed()).toBe(new Date(t0).toISOString()), {
      timeout: 5_000,
      interval: 50,
    });

    // The hook itself: within the period it issues no write at all (nothing handed to waitUntil).
    const writes: Promise<unknown>[] = [];
    const ctx = { waitUntil: (p: Promise<unknown>) => void writes.push(p) };
    clock.set(t0 + LAST_USED_RESOLUTION_MS / 2);
    noteKeyUsed(env, ctx, t.keyId);
    expect(writes).toHaveLength(0);
    clock.set(t0 + LAST_USED_RESOLUTION_MS);
    noteKeyUsed(env, ctx, t.keyId);
    expect(writes).toHaveLength(1);
    await Promise.all(writes);
    expect(await lastUsed()).toBe(new Date(t0 + LAST_USED_RESOLUTION_MS).toISOString());

    // Another isolate (its own memory) within the period: the UPDATE's guard changes nothing.
    const later = t0 + LAST_USED_RESOLUTION_MS + 60_000;
    await recordKeyUse(
      env.DB,
      t.keyId,
      new Date(later).toISOString(),
      new Date(later - LAST_USED_RESOLUTION_MS).toISOString(),
    );
    expect(await lastUsed()).toBe(new Date(t0 + LAST_USED_RESOLUTION_MS).toISOString());

    const member = await signedInMember(t.workspaceId, "viewer");
    expect(await (await member.browser.get("/dashboard/api-keys")).text()).toContain(
      `<time datetime="${new Date(t0 + LAST_USED_RESOLUTION_MS).toISOString()}">`,
    );
  });
});

describe("customer-controlled text is escaped", () => {
  const PAYLOAD = `<script>alert("x")</script>`;
  const scripts = (html: string) => html.match(SCRIPT_TAGS)?.length ?? 0;

  it("in key names (list, flash and confirmation dialog text)", async () => {
    const { owner } = await ownedTenant();
    await owner.browser.post("/dashboard/api-keys", { name: PAYLOAD });
    const page = await (await owner.browser.get("/dashboard/api-keys")).text();
    // The only script element is our own file.
    expect(scripts(page)).toBe(1);
    expect(page).toContain(`<script src="/static/dashboard/dashboard.js" defer=""></script>`);
    expect(page).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
  });

  it("in workspace names and member emails", async () => {
    const ws = await createWorkspace({ name: PAYLOAD });
    const member = await signedInMember(ws, "owner");
    const odd = `o'hara+${crypto.randomUUID().slice(0, 6)}@example.com`;
    await member.browser.post("/dashboard/members", { email: odd, role: "viewer" });
    const refused = await member.browser.post("/dashboard/members", {
      email: `"><script>alert(1)</script>@x.com`,
      role: "viewer",
    });
    expect(refused.status).toBe(400);
    const refusedPage = await refused.text();
    expect(scripts(refusedPage)).toBe(1);
    expect(refusedPage).toContain("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;@x.com");
    const page = await (await member.browser.get("/dashboard/members")).text();
    expect(scripts(page)).toBe(1);
    expect(page).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
    expect(page).toContain(odd.replace("'", "&#39;"));
  });

  it("in webhook URLs, stored or refused", async () => {
    const tenant = await createTenant();
    const developer = await signedInMember(tenant.workspaceId, "developer");
    const refused = await developer.browser.post(`/dashboard/webhooks/${tenant.numberId}`, {
      url: `https://x"><script>alert(1)</script>.example/`,
    });
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(scripts(html)).toBe(1);
    expect(html).toContain("https://x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;.example/");

    const url = receiver();
    expect((await developer.browser.post(`/dashboard/webhooks/${tenant.numberId}`, { url })).status).toBe(303);
    const page = await (await developer.browser.get(`/dashboard/webhooks/${tenant.numberId}`)).text();
    expect(page).toContain(url.replaceAll("&", "&amp;"));
    expect(page).not.toContain(url);
  });
});

describe("webhooks page", () => {
  it("configures a URL (secret shown once), refuses a private one inline, sends a test event and logs it delivered", async () => {
    const t = await createTenant();
    const dev = await signedInMember(t.workspaceId, "developer");
    const page = `/dashboard/webhooks/${t.numberId}`;

    const refused = await dev.browser.post(page, { url: "https://192.168.1.10/hook" });
    expect(refused.status).toBe(400);
    const refusedHtml = await refused.text();
    expect(refusedHtml).toMatch(/<p class="field-error" id="url-error">This URL is not allowed: [^<]*private/);
    expect(refusedHtml).toContain('aria-invalid="true"');
    expect(
      await env.DB.prepare("SELECT COUNT(*) AS n FROM webhooks WHERE channel_number_id = ?")
        .bind(t.numberId)
        .first("n"),
    ).toBe(0);

    const url = receiver();
    expect((await dev.browser.post(page, { url })).status).toBe(303);
    const shown = await (await dev.browser.get(page)).text();
    const secret = /whsec_[A-Za-z0-9+/=]+/.exec(shown)?.[0];
    expect(secret).toBeDefined();
    expect(await (await dev.browser.get(page)).text()).not.toContain(secret!);

    expect((await dev.browser.post(`${page}/test`)).status).toBe(303);
    await vi.waitFor(() => expect(net.seen.filter((s) => s.url === url)).toHaveLength(1), {
      timeout: 15_000,
      interval: 100,
    });
    const eventId = net.seen.find((s) => s.url === url)!.headers["webhook-id"]!;
    await vi.waitFor(
      async () => {
        const html = await (await dev.browser.get(page)).text();
        expect(html).toMatch(
          new RegExp(
            `webhook\\.test<br/><code class="small">${eventId}</code></td><td>1</td><td><span class="ok">delivered</span></td><td>204</td>`,
          ),
        );
      },
      { timeout: 5_000, interval: 100 },
    );

    // Replay: the same event goes out again with the same id.
    expect((await dev.browser.post(`${page}/deliveries/${eventId}/replay`)).status).toBe(303);
    await vi.waitFor(() => expect(net.seen.filter((s) => s.url === url)).toHaveLength(2), {
      timeout: 15_000,
      interval: 100,
    });
    expect(net.seen.filter((s) => s.url === url)[1]!.headers["webhook-id"]).toBe(eventId);
  });

  it("shows why a webhook was disabled, with its last error, and re-enables it keeping URL and secret", async () => {
    const t = await createTenant();
    const dev = await signedInMember(t.workspaceId, "developer");
    const page = `/dashboard/webhooks/${t.numberId}`;
    // One failure, then the immediate retry succeeds: nothing is left pending for later tests.
    const url = receiver(500, 204);
    await dev.browser.post(page, { url });
    await dev.browser.post(`${page}/test`);
    const webhookId = (await env.DB.prepare("SELECT id FROM webhooks WHERE channel_number_id = ?")
      .bind(t.numberId)
      .first<{ id: string }>())!.id;
    await vi.waitFor(
      async () =>
        expect(
          (await workspaceStub(env, t.workspaceId).listDeliveries(t.numberId, webhookId, null, 10)).filter(
            (a) => a.outcome === "delivered",
          ),
        ).toHaveLength(1),
      { timeout: 15_000, interval: 100 },
    );
    // 72 hours of failures later (the consumer's rule is tested in webhooks/delivery.test.ts).
    await env.DB.prepare(
      "UPDATE webhooks SET status = 'disabled', disabled_at = ?, failing_since = ? WHERE channel_number_id = ?",
    )
      .bind("2026-01-04T00:00:00.000Z", "2026-01-01T00:00:00.000Z", t.numberId)
      .run();
    const before = await env.DB.prepare("SELECT url, sealed_secret FROM webhooks WHERE channel_number_id = ?")
      .bind(t.numberId)
      .first();

    const html = await (await dev.browser.get(page)).text();
    expect(html).toContain("because deliveries kept failing for more than 72 hours");
    expect(html).toContain("Last error: <span>HTTP 500: the endpoint did not answer with a 2xx.</span>");
    expect(html).not.toContain("Send test event");

    const viewer = await signedInMember(t.workspaceId, "viewer");
    expect(await (await viewer.browser.get(page)).text()).not.toContain("Re-enable");

    expect((await dev.browser.post(`${page}/enable`)).status).toBe(303);
    const after = await env.DB.prepare(
      "SELECT url, sealed_secret, status, failing_since, disabled_at FROM webhooks WHERE channel_number_id = ?",
    )
      .bind(t.numberId)
      .first();
    expect(after).toEqual({ ...before, status: "enabled", failing_since: null, disabled_at: null });
    expect(await (await dev.browser.get("/dashboard")).text()).toContain("delivering");
  });
});

describe("members page", () => {
  it("owners invite (link shown once), change roles and remove; a workspace keeps at least one owner", async () => {
    const ws = await createWorkspace();
    const boss = await signedInMember(ws, "owner");
    const email = uniqueEmail("newbie");
    expect((await boss.browser.post("/dashboard/members", { email, role: "developer" })).status).toBe(303);
    const flashPage = await (await boss.browser.get("/dashboard/members")).text();
    const link = /https:\/\/gateway\.test\/dashboard\/invitations\/[A-Za-z0-9_-]{43}/.exec(flashPage)?.[0];
    expect(link).toBeDefined();
    expect(await (await boss.browser.get("/dashboard/members")).text()).not.toContain(link!);

    const newbie = new Browser();
    expect((await newbie.post(new URL(link!).pathname, { password: PASSWORD, confirm: PASSWORD })).status).toBe(303);
    const newbieId = (await env.DB.prepare("SELECT id FROM members WHERE email = ?")
      .bind(email)
      .first<{ id: string }>())!.id;

    expect((await boss.browser.post(`/dashboard/members/${newbieId}/role`, { role: "viewer" })).status).toBe(303);
    expect(await (await newbie.get("/dashboard/account")).text()).toMatch(/<dt>Role<\/dt><dd>viewer<\/dd>/);

    // The only owner can neither step down nor leave.
    await boss.browser.post(`/dashboard/members/${boss.memberId}/role`, { role: "developer" });
    expect(await (await boss.browser.get("/dashboard/members")).text()).toContain(
      "A workspace needs at least one owner",
    );
    await boss.browser.post(`/dashboard/members/${boss.memberId}/remove`, { confirmed: "yes" });
    expect(await env.DB.prepare("SELECT role FROM members WHERE id = ?").bind(boss.memberId).first("role")).toBe(
      "owner",
    );

    const self = await boss.browser.post("/dashboard/members", { email: boss.email, role: "viewer" });
    expect(self.status).toBe(400);

    expect((await boss.browser.post(`/dashboard/members/${newbieId}/remove`, { confirmed: "yes" })).status).toBe(303);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM members WHERE id = ?").bind(newbieId).first("n")).toBe(0);
  });
});

describe("overview", () => {
  it("shows plan, usage against quota, numbers and webhook health", async () => {
    const t = await createTenant({ plan: "free" });
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const html = await (await viewer.browser.get("/dashboard")).text();
    expect(html).toContain("Plan: <strong>Free</strong>");
    expect(html).toMatch(/<meter id="usage-meter" min="0" max="1000"[^>]* value="0">/);
    expect(html).toContain("1 of 1 allowed by the plan.");
    expect(html).toContain("No webhook is configured.");
  });
});

describe("docs/security.md", () => {
  it("states the Content-Security-Policy the dashboard actually sends", async () => {
    const { default: doc } = await import("../../docs/security.md?raw");
    expect(doc).toContain(`\`Content-Security-Policy: ${CONTENT_SECURITY_POLICY}\``);
    const res = await call("/dashboard/sign-in");
    expect(res.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
  });
});
