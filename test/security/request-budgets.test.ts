import { createExecutionContext, runDurableObjectAlarm, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { ABUSE_LIMITS, bucket, scopes } from "../../src/domain/abuse-limits";
import { peekToken, takeToken } from "../../src/lib/throttle-client";
import { KEY_CACHE_TTL_MS } from "../../src/domain/key-cache";
import { workspaceStub } from "../../src/durable-objects/stubs";
import { BASE, admin, api, expectError, json } from "../helpers/http";
import { createTenant, type Tenant } from "../helpers/fixtures";
import { signedInMember, uniqueEmail } from "../helpers/dashboard";
import { apiV2 } from "../helpers/operator-templates";
import { answers, mockNetworkPerTest } from "../helpers/webhook-net";
import { fakeClockPerTest } from "../helpers/clock";

const clock = fakeClockPerTest(Date.UTC(2042, 0, 1), (t) => t + 24 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

function expectRateHeaders(res: Response, limit: number, remaining: number): void {
  expect(res.headers.get("RateLimit-Limit")).toBe(String(limit));
  expect(res.headers.get("RateLimit-Remaining")).toBe(String(remaining));
  expect(Number(res.headers.get("RateLimit-Reset"))).toBeGreaterThanOrEqual(0);
}

describe("per-key limit on reads", () => {
  it("answers with rate headers, refuses past the limit with 429 and Retry-After, and admits again when a token is back", async () => {
    const t = await createTenant();
    const { limit, periodSeconds } = ABUSE_LIMITS.read;
    const first = await api("/me", t.key);
    expect(first.status).toBe(200);
    expectRateHeaders(first, limit, limit - 1);

    // Spend all but one token in one call instead of thousands of requests.
    await takeToken(env, scopes.apiKey(t.keyId), [bucket("read")], limit - 2);
    const last = await api("/channel-numbers", t.key);
    expect(last.status).toBe(200);
    expectRateHeaders(last, limit, 0);

    const refused = await api("/usage", t.key);
    const err = await expectError(refused, 429, "rate_limit_exceeded");
    expect(err.error.message).toMatch(/per API key/);
    // One token comes back every period / limit: 20 ms, so Retry-After is its floor of 1 second.
    expect(refused.headers.get("Retry-After")).toBe("1");
    expectRateHeaders(refused, limit, 0);
    expect(Number(refused.headers.get("RateLimit-Reset"))).toBe(periodSeconds);

    clock.advance((periodSeconds * 1000) / limit);
    expect((await api("/me", t.key)).status).toBe(200);
    // Another key of the same workspace has its own budget.
    const other = await createTenant();
    expect((await api("/me", other.key)).status).toBe(200);
  });

  it("does not touch POST /messages, whose limits stay those of the send windows", async () => {
    const t = await createTenant();
    await takeToken(env, scopes.apiKey(t.keyId), [bucket("read")], ABUSE_LIMITS.read.limit);
    await expectError(await api("/me", t.key), 429, "rate_limit_exceeded");
    const res = await api("/messages", t.key, {
      method: "POST",
      headers: { "Idempotency-Key": crypto.randomUUID() },
      json: { channelNumberId: t.numberId, to: "5511999998888", text: { body: "hi" } },
    });
    expect(res.status).toBe(201);
    // The send's own headers: 2 per second per number is the closest limit.
    expect(res.headers.get("RateLimit-Limit")).toBe("2");
  });
});

describe("webhook test events and replays", () => {
  const net = mockNetworkPerTest();

  /** The workspace object publishes recorded events from its alarm; with the clock held far ahead, the test runs it. */
  const publish = (workspaceId: string) => runDurableObjectAlarm(workspaceStub(env, workspaceId));

  async function webhookOf(t: Awaited<ReturnType<typeof createTenant>>, host: string) {
    net.dns.set(host, ["93.184.216.34"]);
    net.receivers.set(`https://${host}/hook`, answers(204));
    const res = await api("/webhooks", t.key, {
      method: "POST",
      json: { channelNumberId: t.numberId, url: `https://${host}/hook` },
    });
    expect(res.status).toBe(201);
    return (await json<{ id: string }>(res)).id;
  }

  it("limits test events per webhook; a refused call queues nothing", async () => {
    const t = await createTenant();
    const id = await webhookOf(t, `t-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`);
    const { limit } = ABUSE_LIMITS.webhookTest;
    for (let i = 0; i < limit; i++) {
      const res = await api(`/webhooks/${id}/test`, t.key, { method: "POST" });
      expect(res.status).toBe(202);
      expect(res.headers.get("RateLimit-Limit")).toBe(String(limit));
      expect(res.headers.get("RateLimit-Remaining")).toBe(String(limit - 1 - i));
    }
    const refused = await api(`/webhooks/${id}/test`, t.key, { method: "POST" });
    const err = await expectError(refused, 429, "rate_limit_exceeded");
    expect(err.error.message).toMatch(/test events/);
    expect(refused.headers.get("Retry-After")).toBe(String(ABUSE_LIMITS.webhookTest.periodSeconds / limit));
    // Exactly `limit` events reach the receiver: the refused call queued nothing.
    await publish(t.workspaceId);
    await vi.waitFor(
      async () =>
        expect(
          (await json<{ data: unknown[] }>(await api(`/webhooks/${id}/deliveries?limit=100`, t.key))).data,
        ).toHaveLength(limit),
      { timeout: 15_000, interval: 100 },
    );
    expect(net.seen).toHaveLength(limit);

    clock.advance((ABUSE_LIMITS.webhookTest.periodSeconds * 1000) / limit);
    expect((await api(`/webhooks/${id}/test`, t.key, { method: "POST" })).status).toBe(202);
    await publish(t.workspaceId);
    await vi.waitFor(() => expect(net.seen).toHaveLength(limit + 1), { timeout: 15_000, interval: 100 });
  });

  it("limits test events and replays together per workspace; a refusal spends nothing of the per-webhook budget", async () => {
    const t = await createTenant();
    const id = await webhookOf(t, `w-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`);
    await takeToken(
      env,
      scopes.workspace(t.workspaceId),
      [bucket("webhookTriggers")],
      ABUSE_LIMITS.webhookTriggers.limit,
    );
    const refused = await api(`/webhooks/${id}/test`, t.key, { method: "POST" });
    await expectError(refused, 429, "rate_limit_exceeded");
    expect(refused.headers.get("RateLimit-Limit")).toBe(String(ABUSE_LIMITS.webhookTriggers.limit));
    clock.advance(1_000);
    // The per-webhook bucket is still full: the refused call took nothing from it.
    const admitted = await api(`/webhooks/${id}/test`, t.key, { method: "POST" });
    expect(admitted.status).toBe(202);
    await publish(t.workspaceId);
    await vi.waitFor(
      async () =>
        expect((await json<{ data: unknown[] }>(await api(`/webhooks/${id}/deliveries`, t.key))).data).toHaveLength(1),
      { timeout: 15_000, interval: 100 },
    );
  });

  it("when both limits refuse, Retry-After and the rate headers are those of the one that frees last", async () => {
    const t = await createTenant();
    const id = await webhookOf(t, `l-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`);
    const perWebhook = bucket("webhookTest", id);
    const perWorkspace = bucket("webhookTriggers");
    await takeToken(env, scopes.workspace(t.workspaceId), [perWebhook], perWebhook.limit);
    await takeToken(env, scopes.workspace(t.workspaceId), [perWorkspace], perWorkspace.limit);
    const refused = await api(`/webhooks/${id}/test`, t.key, { method: "POST" });
    await expectError(refused, 429, "rate_limit_exceeded");
    // The workspace's bucket frees a token in 0.5 s, the webhook's in 12 s: a retry after 1 s would be refused again.
    const webhookWait = perWebhook.periodSeconds / perWebhook.limit;
    expect(webhookWait).toBeGreaterThan(perWorkspace.periodSeconds / perWorkspace.limit);
    expect(refused.headers.get("Retry-After")).toBe(String(webhookWait));
    expect(refused.headers.get("RateLimit-Limit")).toBe(String(perWebhook.limit));
    clock.advance((webhookWait - 1) * 1000);
    await expectError(await api(`/webhooks/${id}/test`, t.key, { method: "POST" }), 429, "rate_limit_exceeded");
    clock.advance(1000);
    expect((await api(`/webhooks/${id}/test`, t.key, { method: "POST" })).status).toBe(202);
    await publish(t.workspaceId);
    await vi.waitFor(() => expect(net.seen).toHaveLength(1), { timeout: 15_000, interval: 100 });
  });

  it("limits replays per webhook", async () => {
    const t = await createTenant();
    const id = await webhookOf(t, `r-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`);
    const sent = await json<{ eventId: string }>(await api(`/webhooks/${id}/test`, t.key, { method: "POST" }));
    await publish(t.workspaceId);
    await vi.waitFor(
      async () =>
        expect((await json<{ data: unknown[] }>(await api(`/webhooks/${id}/deliveries`, t.key))).data).toHaveLength(1),
      { timeout: 15_000, interval: 100 },
    );
    await takeToken(
      env,
      scopes.workspace(t.workspaceId),
      [bucket("webhookReplay", id)],
      ABUSE_LIMITS.webhookReplay.limit,
    );
    const refused = await api(`/webhooks/${id}/deliveries/${sent.eventId}/replay`, t.key, { method: "POST" });
    const err = await expectError(refused, 429, "rate_limit_exceeded");
    expect(err.error.message).toMatch(/replays/);
    expect(refused.headers.get("RateLimit-Limit")).toBe(String(ABUSE_LIMITS.webhookReplay.limit));
  });
});

describe("the dashboard is held to the same limits as the API", () => {
  const net = mockNetworkPerTest();

  async function webhookOf(t: Tenant, tag: string) {
    const host = `${tag}-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
    net.dns.set(host, ["93.184.216.34"]);
    net.receivers.set(`https://${host}/hook`, answers(204));
    const res = await api("/webhooks", t.key, {
      method: "POST",
      json: { channelNumberId: t.numberId, url: `https://${host}/hook` },
    });
    expect(res.status).toBe(201);
    return { id: (await json<{ id: string }>(res)).id, url: `https://${host}/hook` };
  }

  it("test events: API calls and dashboard clicks share the per-webhook budget; past it the dashboard says how long to wait and sends nothing", async () => {
    const t = await createTenant();
    const { id } = await webhookOf(t, "dt");
    const dev = await signedInMember(t.workspaceId, "developer");
    const { limit, periodSeconds } = ABUSE_LIMITS.webhookTest;
    expect((await api(`/webhooks/${id}/test`, t.key, { method: "POST" })).status).toBe(202);
    for (let i = 1; i < limit; i++)
      expect((await dev.browser.post(`/dashboard/webhooks/${t.numberId}/test`)).status).toBe(303);
    const refused = await dev.browser.post(`/dashboard/webhooks/${t.numberId}/test`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("Retry-After")).toBe(String(periodSeconds / limit));
    expect(await refused.text()).toContain(`Try again in ${periodSeconds / limit} seconds`);
    await expectError(await api(`/webhooks/${id}/test`, t.key, { method: "POST" }), 429, "rate_limit_exceeded");
    // Exactly `limit` events were recorded: the refused clicks and calls queued nothing.
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    await vi.waitFor(() => expect(net.seen).toHaveLength(limit), { timeout: 15_000, interval: 100 });
  });

  it("replays from the dashboard spend the per-webhook and per-workspace budgets", async () => {
    const t = await createTenant();
    const { id } = await webhookOf(t, "dr");
    const dev = await signedInMember(t.workspaceId, "developer");
    const sent = await json<{ eventId: string }>(await api(`/webhooks/${id}/test`, t.key, { method: "POST" }));
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    await vi.waitFor(() => expect(net.seen).toHaveLength(1), { timeout: 15_000, interval: 100 });
    const path = `/dashboard/webhooks/${t.numberId}/deliveries/${sent.eventId}/replay`;
    expect((await dev.browser.post(path)).status).toBe(303);
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    await vi.waitFor(() => expect(net.seen).toHaveLength(2), { timeout: 15_000, interval: 100 });
    // Whatever is left of the workspace's budget (the test event and the replay spent some).
    while ((await takeToken(env, scopes.workspace(t.workspaceId), [bucket("webhookTriggers")])).allowed);
    const refused = await dev.browser.post(path);
    expect(refused.status).toBe(429);
    expect(await refused.text()).toMatch(/replays: .* per workspace/);
  });

  it("configuring a webhook from the dashboard is limited per member, like POST /webhooks per API key", async () => {
    const t = await createTenant();
    const { url } = await webhookOf(t, "dc");
    const dev = await signedInMember(t.workspaceId, "developer");
    const before = await env.DB.prepare("SELECT sealed_secret FROM webhooks WHERE workspace_id = ?")
      .bind(t.workspaceId)
      .first();
    await takeToken(
      env,
      scopes.actor({ type: "member", id: dev.memberId }),
      [bucket("webhookConfigure")],
      ABUSE_LIMITS.webhookConfigure.limit,
    );
    const refused = await dev.browser.post(`/dashboard/webhooks/${t.numberId}`, { url });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(
      await env.DB.prepare("SELECT sealed_secret FROM webhooks WHERE workspace_id = ?").bind(t.workspaceId).first(),
    ).toEqual(before);
    // The API key's own budget is separate.
    expect((await api("/webhooks", t.key, { method: "POST", json: { channelNumberId: t.numberId, url } })).status).toBe(
      201,
    );
  });

  it("number changes are limited per workspace, in the dashboard and the API alike; a refused one changes nothing", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const numbers = async () =>
      (
        await env.DB.prepare("SELECT id, status FROM channel_numbers WHERE workspace_id = ? ORDER BY id")
          .bind(t.workspaceId)
          .all()
      ).results;
    await takeToken(
      env,
      scopes.workspace(t.workspaceId),
      [bucket("numberChange")],
      ABUSE_LIMITS.numberChange.limit - 1,
    );
    expect(
      (
        await api("/channel-numbers", t.key, {
          method: "POST",
          json: { displayPhoneNumber: "15550005555", upstream: { type: "sandbox" } },
        })
      ).status,
    ).toBe(201);
    const before = await numbers();
    const refused = await owner.browser.post("/dashboard/numbers", {
      type: "sandbox",
      displayPhoneNumber: "15550006666",
    });
    expect(refused.status).toBe(429);
    expect(await refused.text()).toContain("number changes");
    await expectError(
      await api(`/channel-numbers/${t.numberId}`, t.key, { method: "DELETE" }),
      429,
      "rate_limit_exceeded",
    );
    expect(await numbers()).toEqual(before);
  });

  it("new API keys are limited per workspace, in the dashboard and the admin API alike", async () => {
    const t = await createTenant();
    const dev = await signedInMember(t.workspaceId, "developer");
    const count = async () =>
      (
        await env.DB.prepare("SELECT COUNT(*) AS n FROM api_keys WHERE workspace_id = ?")
          .bind(t.workspaceId)
          .first<{ n: number }>()
      )?.n;
    // The tenant's own key was the first.
    await takeToken(
      env,
      scopes.workspace(t.workspaceId),
      [bucket("apiKeyCreate")],
      ABUSE_LIMITS.apiKeyCreate.limit - 2,
    );
    expect((await dev.browser.post("/dashboard/api-keys", { name: "last one" })).status).toBe(303);
    const keys = await count();
    const refused = await dev.browser.post("/dashboard/api-keys", { name: "one too many" });
    expect(refused.status).toBe(429);
    expect(await refused.text()).toContain("new API keys");
    await expectError(
      await admin(`/workspaces/${t.workspaceId}/api-keys`, { method: "POST", json: { name: "admin too" } }),
      429,
      "rate_limit_exceeded",
    );
    expect(await count()).toBe(keys);
  });
});

describe("writes limited inside their domain operations, whoever asks", () => {
  it("sandbox test contacts: one budget per workspace for API v1, v2 and the dashboard; a refused change changes nothing", async () => {
    const t = await createTenant();
    const dev = await signedInMember(t.workspaceId, "developer");
    const contacts = async () =>
      (
        await env.DB.prepare("SELECT phone FROM sandbox_test_contacts WHERE channel_number_id = ? ORDER BY phone")
          .bind(t.numberId)
          .all<{ phone: string }>()
      ).results.map((r) => r.phone);
    const { limit } = ABUSE_LIMITS.testContactChange;
    await takeToken(env, scopes.workspace(t.workspaceId), [bucket("testContactChange")], limit - 1);
    const last = await api("/sandbox/test-contacts", t.key, {
      method: "POST",
      json: { channelNumberId: t.numberId, phone: "5511900000001" },
    });
    expect(last.status).toBe(201);
    expectRateHeaders(last, limit, 0);
    const before = await contacts();
    expect(before).toContain("5511900000001");
    const refused = await api("/sandbox/test-contacts", t.key, {
      method: "POST",
      json: { channelNumberId: t.numberId, phone: "5511900000002" },
    });
    const err = await expectError(refused, 429, "rate_limit_exceeded");
    expect(err.error.message).toMatch(/test contact changes/);
    expect(Number(refused.headers.get("Retry-After"))).toBe(ABUSE_LIMITS.testContactChange.periodSeconds / limit);
    await expectError(
      await api(`/sandbox/test-contacts/${t.numberId}/5511900000001`, t.key, { method: "DELETE" }),
      429,
      "rate_limit_exceeded",
    );
    await expectError(
      await apiV2(`/sandbox/test-contacts/${t.numberId}/5511900000001`, t.key, { method: "DELETE" }),
      429,
      "rate_limit_exceeded",
    );
    const added = await dev.browser.post(`/dashboard/numbers/${t.numberId}/test-contacts`, { phone: "5511900000003" });
    expect(added.status).toBe(429);
    expect(await added.text()).toContain("test contact changes");
    const removed = await dev.browser.post(`/dashboard/numbers/${t.numberId}/test-contacts/5511900000001/remove`, {});
    expect(removed.status).toBe(429);
    expect(await contacts()).toEqual(before);
    // Listing them is a read, not a change.
    expect((await api(`/sandbox/test-contacts?channelNumberId=${t.numberId}`, t.key)).status).toBe(200);
  });

  it("member invitations, role changes and removals: one budget per workspace for the dashboard and the admin API", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const members = async () =>
      (
        await env.DB.prepare("SELECT id, email, role FROM members WHERE workspace_id = ? ORDER BY id")
          .bind(t.workspaceId)
          .all()
      ).results;
    // The two invitations above spent two tokens: spend what is left.
    await takeToken(
      env,
      scopes.workspace(t.workspaceId),
      [bucket("memberChange")],
      ABUSE_LIMITS.memberChange.limit - 2,
    );
    const before = await members();
    const invited = await owner.browser.post("/dashboard/members", { email: uniqueEmail("late"), role: "viewer" });
    expect(invited.status).toBe(429);
    expect(await invited.text()).toContain("member changes");
    expect((await owner.browser.post(`/dashboard/members/${viewer.memberId}/role`, { role: "owner" })).status).toBe(
      429,
    );
    expect(
      (await owner.browser.post(`/dashboard/members/${viewer.memberId}/remove`, { confirmed: "yes" })).status,
    ).toBe(429);
    await expectError(
      await admin(`/workspaces/${t.workspaceId}/members`, {
        method: "POST",
        json: { email: uniqueEmail("admin"), role: "viewer" },
      }),
      429,
      "rate_limit_exceeded",
    );
    await expectError(
      await admin(`/workspaces/${t.workspaceId}/members/${viewer.memberId}`, { method: "DELETE" }),
      429,
      "rate_limit_exceeded",
    );
    expect(await members()).toEqual(before);
    // The viewer was neither promoted nor signed out.
    expect((await viewer.browser.get("/dashboard")).status).toBe(200);
  });
});

describe("webhook test events and replays on ids that are not an enabled webhook of the caller", () => {
  it("spend the key's request budget before the lookup: unknown, foreign and disabled ids are not free", async () => {
    const [t, other] = await Promise.all([createTenant(), createTenant()]);
    const disabled = crypto.randomUUID();
    await env.DB.prepare(
      "INSERT INTO webhooks (id, workspace_id, channel_number_id, url, sealed_secret, status, created_at, updated_at, disabled_at) VALUES (?, ?, ?, 'https://x.acme-shop.com/', 'v2.x', 'disabled', ?, ?, ?)",
    )
      .bind(
        disabled,
        t.workspaceId,
        t.numberId,
        new Date(clock.now()).toISOString(),
        new Date(clock.now()).toISOString(),
        new Date(clock.now()).toISOString(),
      )
      .run();
    const ids = [crypto.randomUUID(), "not-a-uuid", disabled];
    await takeToken(env, scopes.apiKey(t.keyId), [bucket("read")], ABUSE_LIMITS.read.limit);
    for (const id of ids) {
      await expectError(await api(`/webhooks/${id}/test`, t.key, { method: "POST" }), 429, "rate_limit_exceeded");
      await expectError(
        await api(`/webhooks/${id}/deliveries/evt_x/replay`, t.key, { method: "POST" }),
        429,
        "rate_limit_exceeded",
      );
    }
    // Another key is unaffected.
    expect((await api(`/webhooks/${crypto.randomUUID()}/test`, other.key, { method: "POST" })).status).toBe(404);
  });
});

describe("failed authentication per client address", () => {
  const unknownKey = () =>
    `${env.API_KEY_PREFIX}live_${btoa(crypto.randomUUID()).replaceAll("=", "").replaceAll("+", "-").replaceAll("/", "_").slice(0, 43).padEnd(43, "x")}`;

  /** A request through the real fetch handler with Server-Timing on, to count the D1 statements it ran. */
  async function from(address: string, key: string, path = "/api/v1/me") {
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      new Request(`${BASE}${path}`, { headers: { Authorization: `Bearer ${key}`, "CF-Connecting-IP": address } }),
      { ...env, SERVER_TIMING: "true" },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    const d1 = /d1;desc="D1 statements";dur=(\d+)/.exec(res.headers.get("Server-Timing") ?? "")?.[1];
    return { res, d1Statements: Number(d1) };
  }

  it("after the documented number of unknown keys, answers 429 with Retry-After without reading D1; other addresses are unaffected", async () => {
    const address = `198.51.100.${Math.floor(Math.random() * 250) + 1}`;
    const { limit, periodSeconds } = ABUSE_LIMITS.authFailures;
    for (let i = 0; i < limit; i++) {
      const { res, d1Statements } = await from(address, unknownKey());
      expect(res.status).toBe(401);
      expect(d1Statements).toBe(1);
    }
    const { res, d1Statements } = await from(address, unknownKey());
    await expectError(res, 429, "rate_limit_exceeded");
    expect(res.headers.get("Retry-After")).toBe(String(Math.ceil(periodSeconds / limit)));
    expect(d1Statements).toBe(0);
    // The same budget from the isolate's memory: still no D1 and no throttle call.
    expect((await from(address, unknownKey())).res.status).toBe(429);

    // Another address still gets its plain 401.
    expect((await from("203.0.113.77", unknownKey())).res.status).toBe(401);

    // Once a token is back, one more lookup is allowed.
    clock.advance((periodSeconds * 1000) / limit);
    expect((await from(address, unknownKey())).res.status).toBe(401);
  });

  it("holds under concurrency: of 120 unknown keys sent at once from one address, exactly the budget reaches D1", async () => {
    const address = `192.0.2.${Math.floor(Math.random() * 250) + 1}`;
    const { limit } = ABUSE_LIMITS.authFailures;
    const results = await Promise.all(Array.from({ length: 120 }, () => from(address, unknownKey())));
    const statuses = results.map((r) => r.res.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(limit);
    expect(statuses.filter((s) => s === 429)).toHaveLength(120 - limit);
    expect(results.reduce((n, r) => n + r.d1Statements, 0)).toBe(limit);
  });

  it("a burst of a valid key's first requests from one address shares one lookup: all pass, and the budget is intact", async () => {
    const t = await createTenant();
    const address = "203.0.113.202";
    const burst = await Promise.all(
      Array.from({ length: 2 * ABUSE_LIMITS.authFailures.limit }, () => from(address, t.key)),
    );
    expect(burst.map((r) => r.res.status)).toEqual(burst.map(() => 200));
    for (let i = 0; i < ABUSE_LIMITS.authFailures.limit; i++)
      expect((await from(address, unknownKey())).res.status).toBe(401);
    expect((await from(address, unknownKey())).res.status).toBe(429);
  });

  it("a valid key gets its token back: valid keys never use up an address's budget", async () => {
    const t = await createTenant();
    const address = "203.0.113.201";
    const { limit } = ABUSE_LIMITS.authFailures;
    // One failure left for this address.
    await takeToken(env, scopes.clientAddress(address), [bucket("authFailures")], limit - 1);
    // A key this isolate has not seen yet spends it for its lookup, then gets it back.
    expect((await from(address, t.key)).res.status).toBe(200);
    // So an unknown key still gets its lookup (401), and only the next one is refused.
    expect((await from(address, unknownKey())).res.status).toBe(401);
    expect((await from(address, unknownKey())).res.status).toBe(429);
  });

  it("a valid key read again when its cache entry expires spends nothing of the address's budget; once revoked, it spends again", async () => {
    const t = await createTenant();
    const address = "203.0.113.203";
    const scope = scopes.clientAddress(address);
    const failures = [bucket("authFailures")];
    const exhaust = async () => {
      while ((await takeToken(env, scope, failures)).allowed);
    };
    expect((await from(address, t.key)).res.status).toBe(200);
    clock.advance(KEY_CACHE_TTL_MS);
    // The address's budget used up (by another key's guesses, say): a refresh of the key is no guess.
    await exhaust();
    expect((await from(address, t.key)).res.status).toBe(200);
    expect((await peekToken(env, scope, failures)).remaining).toBe(0);
    // Revoked through another isolate (its cache here is not told): the next refresh finds it gone …
    await env.DB.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ?")
      .bind(new Date(clock.now()).toISOString(), t.keyId)
      .run();
    clock.advance(KEY_CACHE_TTL_MS);
    await exhaust();
    await expectError((await from(address, t.key)).res, 401, "unauthorized");
    // … and from then on the key is as unknown as any: its lookups spend from the budget, which is empty.
    clock.advance(KEY_CACHE_TTL_MS);
    await exhaust();
    await expectError((await from(address, t.key)).res, 429, "rate_limit_exceeded");
  });

  it("keeps serving a cached valid key from a throttled address", async () => {
    const t = await createTenant();
    const address = "2001:db8:aaaa:bbbb::1";
    expect((await from(address, t.key)).res.status).toBe(200);
    await takeToken(
      env,
      scopes.clientAddress("2001:db8:aaaa:bbbb::/64"),
      [bucket("authFailures")],
      ABUSE_LIMITS.authFailures.limit,
    );
    // Another address of the same /64 is throttled …
    expect((await from("2001:db8:aaaa:bbbb::2", unknownKey())).res.status).toBe(429);
    // … but the key already known to this isolate goes on working.
    expect((await from(address, t.key)).res.status).toBe(200);
  });
});
