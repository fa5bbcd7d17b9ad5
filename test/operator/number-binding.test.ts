import {
  createExecutionContext,
  createScheduledController,
  runDurableObjectAlarm,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { admin, api, expectError, json } from "../helpers/http";
import { createKey, createWorkspace } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { answerAtEdge } from "../helpers/edge";
import {
  liveConnectBody,
  connectLiveNumber,
  fakeAccounts,
  operatorConfirmsNumber,
  operatorError,
  type FakeAccount,
} from "../helpers/operator";
import { accountFieldPayload, inboundPayload, postOperator, seconds } from "../helpers/operator-webhook";
import { apiV2, fakeTemplates, positionalTemplate } from "../helpers/operator-templates";
import { fakeClockPerTest } from "../helpers/clock";
import { signedInMember } from "../helpers/dashboard";
import { channelNumberStub } from "../../src/durable-objects/stubs";
import { OPERATOR_REFRESH_MS } from "../../src/domain/number-health";
import { OPERATOR_MEDIA_DAYS } from "../../src/messages/inbound-media";

// A live number is bound to a workspace only while the operator honours the token it was
// connected with (src/domain/number-binding.ts): a refused token, wherever it is seen, makes the
// binding unverified; its inbound messages then lose their content, and whoever proves control of
// the number with the operator may take it over. Connecting tells whether a number is connected
// elsewhere only to a caller who has just proven control of it.

const HOUR = 3_600_000;
const clock = fakeClockPerTest(Date.UTC(2047, 0, 1), (t) => t + 30 * 24 * HOUR);
const accounts = fakeAccounts();
let live: { key: string; numberId: string }[] = [];
afterEach(async () => {
  // No account of an earlier test is due at a later test's template sync: its numbers are disconnected.
  for (const n of live) await api(`/channel-numbers/${n.numberId}`, n.key, { method: "DELETE" });
  live = [];
  accounts.restoreAll();
  vi.restoreAllMocks();
});

const freshToken = () => `EAAG${crypto.randomUUID().replaceAll("-", "")}`;

interface Detail {
  id: string;
  status: string;
  sending: { state: string };
  health: { state: string; lastOperatorError: string | null; unverifiedSince: string | null };
}

async function workspaceWithKey(name = "Acme") {
  const workspaceId = await createWorkspace({ plan: "pro", name });
  const { key, id: keyId } = await createKey(workspaceId);
  return { workspaceId, key, keyId };
}

/** Connects `a`'s number to a new workspace through the public API. */
async function connected(a: FakeAccount, name = "Acme") {
  const w = await workspaceWithKey(name);
  const res = await api("/channel-numbers", w.key, { method: "POST", json: { upstream: liveConnectBody(a) } });
  expect(res.status, await res.clone().text()).toBe(201);
  const numberId = (await json<{ id: string }>(res)).id;
  live.push({ key: w.key, numberId });
  return { ...w, numberId };
}

const detail = async (key: string, numberId: string) => json<Detail>(await api(`/channel-numbers/${numberId}`, key));

/** A customer writes `body` to the number; what the workspace's inbox shows of it. */
async function customerWrites(a: FakeAccount, key: string, from: string, body: string) {
  const id = `wamid.IN${crypto.randomUUID().slice(0, 8)}`;
  const posted = await postOperator(
    inboundPayload(
      a.phoneNumberId,
      [{ from, id, timestamp: seconds(clock.now()), type: "text", text: { body } }],
      [{ wa_id: from, profile: { name: "Maria" } }],
    ),
  );
  expect(posted.status).toBe(200);
  const inbox = await json<{ data: Record<string, unknown>[] }>(
    await api(`/messages?direction=inbound&from=${from}`, key),
  );
  return inbox.data.find((m) => m.upstreamMessageId === id || JSON.stringify(m).includes(id)) ?? inbox.data[0] ?? null;
}

const auditOf = async (workspaceId: string) =>
  (
    await env.DB.prepare("SELECT * FROM audit_log WHERE workspace_id = ? ORDER BY seq")
      .bind(workspaceId)
      .all<Record<string, string | null>>()
  ).results;

describe("a refused token makes the number's binding unverified", () => {
  it("seen by the hourly check: inbound messages keep their sender and time but not their content, until an owner replaces the token", async () => {
    const a = accounts.account();
    const t = await connected(a);
    expect((await detail(t.key, t.numberId)).health.unverifiedSince).toBeNull();
    expect(await customerWrites(a, t.key, "5511977770001", "before")).toMatchObject({ text: { body: "before" } });

    // The business revokes the token; the next read after the hour asks the operator with it.
    a.token = freshToken();
    clock.advance(OPERATOR_REFRESH_MS);
    const refusedAt = new Date(clock.now()).toISOString();
    const refused = await detail(t.key, t.numberId);
    expect(refused.health).toMatchObject({ unverifiedSince: refusedAt });
    expect(refused.health.lastOperatorError).toMatch(/HTTP 401, code 190/);

    const withheld = await customerWrites(a, t.key, "5511977770002", "my card number is 4111");
    expect(withheld).toMatchObject({ from: "5511977770002", type: "text", text: { body: "" } });
    expect(JSON.stringify(withheld)).not.toContain("4111");
    expect(JSON.stringify(withheld)).not.toContain("Maria");

    // A later check that the operator answers does not verify it again: only a new token does.
    clock.advance(OPERATOR_REFRESH_MS);
    expect((await detail(t.key, t.numberId)).health.unverifiedSince).toBe(refusedAt);
    const replaced = await api(`/channel-numbers/${t.numberId}`, t.key, {
      method: "PATCH",
      json: { accessToken: a.token },
    });
    expect(replaced.status).toBe(200);
    expect((await json<Detail>(replaced)).health.unverifiedSince).toBeNull();
    expect(await customerWrites(a, t.key, "5511977770003", "after")).toMatchObject({ text: { body: "after" } });
  });

  it("seen by a send: the number pauses, as before, and its binding is unverified", async () => {
    const a = accounts.account();
    const t = await connected(a);
    a.token = freshToken();
    answerAtEdge((input, init) => {
      const req = new Request(input, init);
      return req.method === "POST" && req.url.endsWith(`/${a.phoneNumberId}/messages`)
        ? operatorError(401, 190, "Error validating access token: the session was invalidated")
        : undefined;
    });
    const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Hello", "5511977770010"));
    expect(res.status).toBe(201);
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    const after = await detail(t.key, t.numberId);
    expect(after.sending.state).toBe("paused");
    expect(after.health.unverifiedSince).toBe(new Date(clock.now()).toISOString());
  });
});

describe("the admin API's new credentials", () => {
  it("verify again the binding of a number connected without a business account", async () => {
    const w = await workspaceWithKey();
    const n = await connectLiveNumber(w.workspaceId);
    // The operator now refuses the token the number was connected with.
    const numberPath = `${env.UPSTREAM_CLOUD_API_BASE_URL}/${env.UPSTREAM_CLOUD_API_VERSION}/${n.phoneNumberId}?`;
    answerAtEdge((input, init) => {
      const req = new Request(input, init);
      return req.url.startsWith(numberPath) && req.headers.get("authorization") === `Bearer ${n.token}`
        ? operatorError(401, 190, "Error validating access token")
        : undefined;
    });
    clock.advance(OPERATOR_REFRESH_MS);
    expect((await detail(w.key, n.numberId)).health.unverifiedSince).not.toBeNull();
    const token = freshToken();
    const confirming = operatorConfirmsNumber(n.phoneNumberId, { token });
    const res = await admin(`/channel-numbers/${n.numberId}/credentials`, {
      method: "PUT",
      json: { accessToken: token },
    });
    confirming();
    expect(res.status, await res.clone().text()).toBe(200);
    const row = await env.DB.prepare("SELECT unverified_since FROM channel_numbers WHERE id = ?")
      .bind(n.numberId)
      .first<{ unverified_since: string | null }>();
    expect(row).toEqual({ unverified_since: null });
  });
});

describe("a refused token reported by the operator's webhook", () => {
  it("the errors of a messages change with code 190 pause the number and make its binding unverified", async () => {
    const a = accounts.account();
    const t = await connected(a);
    const posted = await postOperator(
      accountFieldPayload(a.wabaId, "messages", {
        messaging_product: "whatsapp",
        metadata: { display_phone_number: "15557770000", phone_number_id: a.phoneNumberId },
        errors: [{ code: 190, title: "Access token has expired", error_data: { details: "Session has expired." } }],
      }),
    );
    expect(posted.status).toBe(200);
    expect(await detail(t.key, t.numberId)).toMatchObject({
      sending: { state: "paused" },
      health: { unverifiedSince: new Date(clock.now()).toISOString() },
    });
  });
});

describe("taking over a number whose binding is unverified", () => {
  it("the business proves control with its new token: the number moves to its workspace, both audit logs say so, and its messages follow", async () => {
    const a = accounts.account();
    // An agency connected the business's number with a token the business later revoked.
    const agency = await connected(a, "Agency");
    const queued = await send(agency.key, crypto.randomUUID(), textMessage(agency.numberId, "Hi", "5511977770020"));
    expect(queued.status).toBe(201);
    a.token = freshToken();
    // No refusal was seen yet: the connect asks the operator with the agency's token, which it refuses.
    const business = await workspaceWithKey("Business");
    const res = await api("/channel-numbers", business.key, { method: "POST", json: { upstream: liveConnectBody(a) } });
    expect(res.status, await res.clone().text()).toBe(201);
    const taken = await json<Detail>(res);
    live.push({ key: business.key, numberId: taken.id });
    expect(taken.health.unverifiedSince).toBeNull();

    // The agency's number is gone: 404, and its queued message failed with number_disconnected.
    expect((await api(`/channel-numbers/${agency.numberId}`, agency.key)).status).toBe(404);
    await runDurableObjectAlarm(channelNumberStub(env, agency.numberId));
    const sent = await json<{ jobId: string }>(queued);
    await vi.waitFor(async () => {
      const m = await json<{ status: string; error: { code: string } | null }>(
        await api(`/messages/${sent.jobId}`, agency.key),
      );
      expect(m).toMatchObject({ status: "failed", error: { code: "number_disconnected" } });
    });

    // Both audit logs: the business's names the take-over; the agency's says what went and why, not who took it.
    const mine = await auditOf(business.workspaceId);
    expect(mine.at(-1)).toMatchObject({
      action: "channel_number.claimed",
      target_id: taken.id,
      actor_id: business.keyId,
    });
    const theirs = (await auditOf(agency.workspaceId)).find((e) => e.action === "channel_number.claimed_away");
    expect(theirs).toMatchObject({ target_id: agency.numberId, actor_type: "admin", client_address: null });
    expect(theirs!.detail).toMatch(/refused this workspace's token/);
    expect(JSON.stringify(theirs)).not.toContain(business.workspaceId);
    expect(JSON.stringify(theirs)).not.toContain(business.keyId);

    // The customers' messages now reach the business, in full; the agency sees nothing of them.
    expect(await customerWrites(a, business.key, "5511977770021", "hello business")).toMatchObject({
      text: { body: "hello business" },
    });
    const agencyInbox = await json<{ data: unknown[] }>(
      await api("/messages?direction=inbound&from=5511977770021", agency.key),
    );
    expect(agencyInbox.data).toEqual([]);
  });

  it("a number whose token the operator still honours stays where it is; only a caller who proved control learns it is connected", async () => {
    const a = accounts.account();
    const owner = await connected(a);
    const other = await workspaceWithKey("Other");
    const callsBefore = a.calls.length;

    // A junk token: the operator's refusal, and not a word about the number being connected.
    const junk = await expectError(
      await api("/channel-numbers", other.key, {
        method: "POST",
        json: { upstream: { ...liveConnectBody(a), accessToken: "junk-token-000000000" } },
      }),
      400,
      "invalid_request",
    );
    expect(junk.error.details?.[0]).toMatchObject({ path: "upstream.accessToken" });
    expect(JSON.stringify(junk)).not.toMatch(/already connected/);
    expect(a.calls.slice(callsBefore)).toEqual([`GET ${a.phoneNumberId}`]);

    // The number's own token (control proven): told it is connected, and nothing moves.
    const taken = await expectError(
      await api("/channel-numbers", other.key, { method: "POST", json: { upstream: liveConnectBody(a) } }),
      400,
      "invalid_request",
    );
    expect(taken.error.details?.[0]?.message).toMatch(/already connected/);
    expect(await detail(owner.key, owner.numberId)).toMatchObject({
      status: "connected",
      health: { unverifiedSince: null },
    });
    expect(await auditOf(owner.workspaceId)).not.toContainEqual(
      expect.objectContaining({ action: "channel_number.claimed_away" }),
    );
  });
});

describe("the dashboard", () => {
  it("a number's page says its connection is unverified and how to fix it; a member's connect takes over such a number", async () => {
    const a = accounts.account();
    const agency = await connected(a, "Agency");
    const agencyOwner = await signedInMember(agency.workspaceId, "owner");
    const page = async () => (await agencyOwner.browser.get(`/dashboard/numbers/${agency.numberId}`)).text();
    expect(await page()).not.toContain("unverified");
    a.token = freshToken();
    clock.advance(OPERATOR_REFRESH_MS);
    const shown = await page();
    expect(shown).toContain("unverified since");
    expect(shown).toMatch(/generate a new token for the number at the\s+operator and replace it on this page/);

    const business = await workspaceWithKey("Business");
    const owner = await signedInMember(business.workspaceId, "owner");
    const res = await owner.browser.post("/dashboard/numbers", {
      type: "cloud",
      phoneNumberId: a.phoneNumberId,
      wabaId: a.wabaId,
      accessToken: a.token,
    });
    expect(res.status, await res.clone().text()).toBe(303);
    const takenId = res.headers.get("location")!.split("/").at(-1)!;
    live.push({ key: business.key, numberId: takenId });
    expect((await auditOf(business.workspaceId)).at(-1)).toMatchObject({
      action: "channel_number.claimed",
      actor_id: owner.memberId,
    });
    expect((await auditOf(agency.workspaceId)).at(-1)).toMatchObject({ action: "channel_number.claimed_away" });
    expect((await agencyOwner.browser.get(`/dashboard/numbers/${agency.numberId}`)).status).toBe(404);
  });
});

const runCron = async () => {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: clock.now(), cron: "17 * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
};

describe("an account's templates and the workspace's own token", () => {
  it("a workspace whose token the operator refuses no longer lists the account's templates, though they stay synced", async () => {
    const a = accounts.account();
    fakeTemplates(a, [positionalTemplate("order_update")]);
    const t = await connected(a);
    const names = async () =>
      (await json<{ data: { name: string }[] }>(await apiV2("/templates", t.key))).data.map((x) => x.name);
    expect(await names()).toEqual(["order_update"]);
    a.token = freshToken();
    clock.advance(OPERATOR_REFRESH_MS);
    // The list checks the workspace's own token first (at most hourly): refused, so nothing is listed.
    expect(await names()).toEqual([]);
    expect((await detail(t.key, t.numberId)).health.unverifiedSince).not.toBeNull();
    expect(
      (await env.DB.prepare("SELECT COUNT(*) AS n FROM message_templates WHERE waba_id = ?")
        .bind(a.wabaId)
        .first<{ n: number }>())!.n,
    ).toBe(1);
  });

  it("the sync reads an account's templates with a token the operator honours, not the oldest connection's", async () => {
    const a = accounts.account();
    const first = await connected(a, "First");
    // A second number of the same business account, connected later by another workspace.
    const b = accounts.account();
    b.wabaId = a.wabaId;
    const listed = fakeTemplates(b, [positionalTemplate("order_update")]);
    const second = await connected(b, "Second");
    // The first workspace's token is revoked, and the hourly check has seen it.
    a.token = freshToken();
    clock.advance(OPERATOR_REFRESH_MS);
    expect((await detail(first.key, first.numberId)).health.unverifiedSince).not.toBeNull();
    expect((await detail(second.key, second.numberId)).health.unverifiedSince).toBeNull();
    const pagesBefore = listed.pages.length;
    await runCron();
    expect(listed.pages.length).toBe(pagesBefore + 1);
    const state = await env.DB.prepare("SELECT * FROM template_sync_state WHERE waba_id = ?")
      .bind(a.wabaId)
      .first<{ last_success_at: string | null; last_error: string | null }>();
    expect(state).toMatchObject({ last_success_at: new Date(clock.now()).toISOString(), last_error: null });
  });

  it("a token refused to the template sync marks that number's binding unverified", async () => {
    const a = accounts.account();
    fakeTemplates(a, [positionalTemplate("order_update")]);
    const t = await connected(a);
    a.token = freshToken();
    clock.advance(OPERATOR_REFRESH_MS);
    await runCron();
    const row = await env.DB.prepare("SELECT unverified_since, last_operator_error FROM channel_numbers WHERE id = ?")
      .bind(t.numberId)
      .first<{ unverified_since: string | null; last_operator_error: string | null }>();
    expect(row).toMatchObject({ unverified_since: new Date(clock.now()).toISOString() });
    expect(row!.last_operator_error).toMatch(/template sync/);
  });
});

describe("a disconnected number's sealed token", () => {
  const tokenOf = async (numberId: string) =>
    (
      await env.DB.prepare("SELECT upstream_credentials FROM channel_numbers WHERE id = ?")
        .bind(numberId)
        .first<{ upstream_credentials: string | null }>()
    )?.upstream_credentials ?? null;

  it("is cleared by the hourly job once the operator's 7-day media window has passed; a connected number's is kept", async () => {
    const gone = await connected(accounts.account(), "Gone");
    const kept = await connected(accounts.account(), "Kept");
    expect((await api(`/channel-numbers/${gone.numberId}`, gone.key, { method: "DELETE" })).status).toBe(204);
    const disconnectedAt = clock.now();
    // Within the window, a media copy or fetch-through of its last messages may still need it.
    clock.set(disconnectedAt + OPERATOR_MEDIA_DAYS * 24 * HOUR - 60_000);
    await runCron();
    expect(await tokenOf(gone.numberId)).not.toBeNull();
    clock.set(disconnectedAt + OPERATOR_MEDIA_DAYS * 24 * HOUR + 60_000);
    await runCron();
    expect(await tokenOf(gone.numberId)).toBeNull();
    expect(await tokenOf(kept.numberId)).not.toBeNull();
    // The index the job reads holds only disconnected numbers that still have a token.
    const plan = await env.DB.prepare(
      `EXPLAIN QUERY PLAN SELECT id FROM channel_numbers
        WHERE status = 'disconnected' AND upstream_credentials IS NOT NULL AND disconnected_at < ? LIMIT 10`,
    )
      .bind(new Date(clock.now()).toISOString())
      .all<{ detail: string }>();
    expect(plan.results.map((r) => r.detail).join(" ")).toContain("channel_numbers_sealed_after_disconnect");
  });
});
