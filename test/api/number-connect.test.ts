import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, expectError, json } from "../helpers/http";
import { createKey, createTenant, createWorkspace } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import {
  accepted,
  liveConnectBody,
  fakeAccounts,
  mockOperator,
  operatorError,
  type FakeAccount,
} from "../helpers/operator";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { OPERATOR_REFRESH_MS } from "../../src/domain/number-health";
import { accountUpdatePayload, postOperator, qualityUpdatePayload } from "../helpers/operator-webhook";
import { fakeClock } from "../helpers/clock";
import { answerAtEdge } from "../helpers/edge";
import { PACE_WINDOW_MS } from "../../src/durable-objects/channel-number/delivery-policy";

const accounts = fakeAccounts();
const account = accounts.account;
afterEach(() => {
  accounts.restoreAll();
  vi.restoreAllMocks();
});

const connect = (key: string, body: unknown) => api("/channel-numbers", key, { method: "POST", json: body });
const rowsOf = async (workspaceId: string) =>
  (
    await env.DB.prepare("SELECT * FROM channel_numbers WHERE workspace_id = ?")
      .bind(workspaceId)
      .all<Record<string, unknown>>()
  ).results;

interface Detail {
  id: string;
  displayPhoneNumber: string;
  upstream: string;
  health: {
    state: string;
    verifiedName: string | null;
    qualityRating: string | null;
    messagingLimitTier: string | null;
    sendsToday: number;
    lastOperatorError: string | null;
    checkedAt: string | null;
  };
}

async function keyOnly(plan = "pro") {
  const workspaceId = await createWorkspace({ plan });
  const { key, id } = await createKey(workspaceId);
  return { workspaceId, key, keyId: id };
}

describe("POST /channel-numbers", () => {
  it("connects a sandbox number at once", async () => {
    const t = await keyOnly();
    const res = await connect(t.key, { displayPhoneNumber: "+15550009999", upstream: { type: "sandbox" } });
    expect(res.status).toBe(201);
    const body = await json<Detail>(res);
    expect(body).toMatchObject({
      displayPhoneNumber: "+15550009999",
      upstream: "sandbox",
      status: "connected",
      health: { state: "active", sendsToday: 0 },
    });
    // Usable at once for sending.
    expect((await send(t.key, crypto.randomUUID(), textMessage(body.id))).status).toBe(201);
  });

  it("connects a live number after the operator verified it and subscribed the app; the token is sealed and never returned", async () => {
    const t = await keyOnly();
    const a = account();
    const res = await connect(t.key, { upstream: liveConnectBody(a) });
    expect(res.status).toBe(201);
    const text = await res.text();
    expect(text).not.toContain(a.token);
    const body = JSON.parse(text) as Detail;
    expect(body).toMatchObject({
      displayPhoneNumber: "+15557770000",
      upstream: "cloud",
      health: {
        state: "active",
        verifiedName: "Acme Shop",
        qualityRating: "GREEN",
        messagingLimitTier: "TIER_1K",
        lastOperatorError: null,
      },
    });
    expect(a.calls).toEqual([
      `GET ${a.phoneNumberId}`,
      `GET ${a.wabaId}/phone_numbers`,
      `POST ${a.wabaId}/subscribed_apps`,
    ]);
    const [row] = await rowsOf(t.workspaceId);
    expect(row).toMatchObject({
      upstream_phone_number_id: a.phoneNumberId,
      waba_id: a.wabaId,
      quality_rating: "GREEN",
    });
    expect(String(row!.upstream_credentials)).not.toContain(a.token);
    // The read shows the same, without asking the operator again within the hour.
    const read = await json<Detail>(await api(`/channel-numbers/${body.id}`, t.key));
    expect(read.health).toMatchObject({ verifiedName: "Acme Shop", messagingLimitTier: "TIER_1K" });
    expect(a.calls).toHaveLength(3);
  });

  const refusals: [string, (a: FakeAccount) => unknown, string][] = [
    [
      "a bad token",
      (a) => ({ upstream: { ...liveConnectBody(a), accessToken: "EAAG-not-the-token-000000" } }),
      "upstream.accessToken",
    ],
    [
      "a wrong business account",
      (a) => ({ upstream: { ...liveConnectBody(a), wabaId: "999000111222" } }),
      "upstream.wabaId",
    ],
    [
      "a phone number id the token does not know",
      (a) => ({ upstream: { ...liveConnectBody(a), phoneNumberId: "123456789" } }),
      "upstream.phoneNumberId",
    ],
  ];
  it.each(refusals)(
    "refuses %s, naming the field and the operator's reason; nothing is stored",
    async (_, body, field) => {
      const t = await keyOnly();
      const a = account();
      const err = await expectError(await connect(t.key, body(a)), 400, "invalid_request");
      expect(err.error.details?.[0]).toMatchObject({ path: field, rule: "upstream_verification" });
      expect(err.error.details?.[0]?.message).toMatch(
        /HTTP 40[01], code (190|100)|not a number of business account|did not confirm/,
      );
      expect(await rowsOf(t.workspaceId)).toEqual([]);
    },
  );

  it("refuses when the webhook subscription fails; nothing is stored", async () => {
    const t = await keyOnly();
    const a = account({ subscribe: () => operatorError(403, 200, "Permissions error") });
    const err = await expectError(await connect(t.key, { upstream: liveConnectBody(a) }), 400, "invalid_request");
    expect(err.error.details?.[0]).toMatchObject({ path: "upstream.wabaId" });
    expect(err.error.details?.[0]?.message).toContain("HTTP 403, code 200: Permissions error");
    expect(await rowsOf(t.workspaceId)).toEqual([]);
  });

  it("holds to the plan's number limit (free: one number)", async () => {
    const t = await keyOnly("free");
    expect((await connect(t.key, { displayPhoneNumber: "15550001", upstream: { type: "sandbox" } })).status).toBe(201);
    await expectError(
      await connect(t.key, { displayPhoneNumber: "15550002", upstream: { type: "sandbox" } }),
      403,
      "forbidden",
    );
    const a = account();
    await expectError(await connect(t.key, { upstream: liveConnectBody(a) }), 403, "forbidden");
    // Refused before the operator is asked.
    expect(a.calls).toEqual([]);
    expect(await rowsOf(t.workspaceId)).toHaveLength(1);
  });

  it("bad input gets the uniform error and changes nothing", async () => {
    const t = await keyOnly();
    await expectError(await connect(t.key, { upstream: { type: "sandbox" } }), 400, "invalid_request");
    await expectError(
      await connect(t.key, { upstream: { type: "cloud", phoneNumberId: "12", accessToken: "short" } }),
      400,
      "invalid_request",
    );
    await expectError(
      await connect(t.key, { displayPhoneNumber: "+1555", upstream: { ...liveConnectBody(account()) } }),
      400,
      "invalid_request",
    );
    expect(await rowsOf(t.workspaceId)).toEqual([]);
  });
});

describe("PATCH and DELETE /channel-numbers/{id}", () => {
  it("replaces a live number's token after the operator confirmed it; a refused token changes nothing", async () => {
    const t = await keyOnly();
    const a = account();
    const { id } = await json<Detail>(await connect(t.key, { upstream: liveConnectBody(a) }));
    const before = (await rowsOf(t.workspaceId))[0]!.upstream_credentials;
    const err = await expectError(
      await api(`/channel-numbers/${id}`, t.key, {
        method: "PATCH",
        json: { accessToken: "EAAG-a-wrong-token-00000" },
      }),
      400,
      "invalid_request",
    );
    expect(err.error.details?.[0]?.path).toBe("upstream.accessToken");
    expect((await rowsOf(t.workspaceId))[0]!.upstream_credentials).toBe(before);
    const newToken = `EAAG${crypto.randomUUID().replaceAll("-", "")}`;
    a.token = newToken;
    const res = await api(`/channel-numbers/${id}`, t.key, { method: "PATCH", json: { accessToken: newToken } });
    expect(res.status).toBe(200);
    expect(await res.text()).not.toContain(newToken);
    expect((await rowsOf(t.workspaceId))[0]!.upstream_credentials).not.toBe(before);
  });

  it("a number paused by a refused token sends again at once when its token is replaced, with the new token", async () => {
    const clock = fakeClock(Date.UTC(2048, 0, 1));
    const t = await keyOnly();
    const a = account();
    const { id } = await json<Detail>(await connect(t.key, { upstream: liveConnectBody(a) }));
    // The operator's sends, answered for the account's current token only.
    const calls: (string | null)[] = [];
    answerAtEdge((input, init) => {
      const req = new Request(input, init);
      if (req.method !== "POST" || !req.url.endsWith(`/${a.phoneNumberId}/messages`)) return undefined;
      calls.push(req.headers.get("authorization"));
      return req.headers.get("authorization") === `Bearer ${a.token}`
        ? accepted(`wamid.${crypto.randomUUID()}`)
        : operatorError(401, 190);
    });
    a.token = `EAAG${crypto.randomUUID().replaceAll("-", "")}`;
    const res = await send(t.key, crypto.randomUUID(), textMessage(id, "Hello", "5511977770030"));
    expect(res.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(res);
    await runDurableObjectAlarm(channelNumberStub(env, id));
    const paused = await json<{ sending: { state: string; nextAttemptAt: string } }>(
      await api(`/channel-numbers/${id}`, t.key),
    );
    expect(paused.sending.state).toBe("paused");
    expect(Date.parse(paused.sending.nextAttemptAt)).toBeGreaterThan(Date.now());
    expect(
      (await api(`/channel-numbers/${id}`, t.key, { method: "PATCH", json: { accessToken: a.token } })).status,
    ).toBe(200);
    expect((await json<{ sending: { state: string } }>(await api(`/channel-numbers/${id}`, t.key))).sending.state).toBe(
      "active",
    );
    // The waiting message goes at the number's next pace slot, not at the pause's next probe (15 minutes on).
    clock.advance(PACE_WINDOW_MS);
    await runDurableObjectAlarm(channelNumberStub(env, id));
    await vi.waitFor(async () =>
      expect((await json<{ status: string }>(await api(`/messages/${jobId}`, t.key))).status).toBe("sent"),
    );
    expect(calls).toEqual([expect.not.stringContaining(a.token), `Bearer ${a.token}`]);
  });

  it("a sandbox number has no token to replace", async () => {
    const t = await createTenant();
    const err = await expectError(
      await api(`/channel-numbers/${t.numberId}`, t.key, {
        method: "PATCH",
        json: { accessToken: "EAAG-any-token-000000000" },
      }),
      400,
      "invalid_request",
    );
    expect(err.error.details?.[0]?.path).toBe("path.id");
  });

  it("another workspace's number is 404 for reads, token replacement and disconnect, and stays connected", async () => {
    const mine = await createTenant();
    const other = await createTenant();
    expect((await api(`/channel-numbers/${other.numberId}`, mine.key)).status).toBe(404);
    await expectError(
      await api(`/channel-numbers/${other.numberId}`, mine.key, {
        method: "PATCH",
        json: { accessToken: "EAAG-any-token-000000000" },
      }),
      404,
      "not_found",
    );
    await expectError(
      await api(`/channel-numbers/${other.numberId}`, mine.key, { method: "DELETE" }),
      404,
      "not_found",
    );
    expect((await api(`/channel-numbers/${other.numberId}`, other.key)).status).toBe(200);
  });

  it("disconnect: a pending message ends failed with number_disconnected, new sends are refused, the number reads 404", async () => {
    // A clock far ahead: the number's alarm runs only when the test runs it, so the message is still queued at the disconnect.
    fakeClock(Date.UTC(2041, 0, 1));
    const t = await keyOnly();
    const a = account();
    const { id } = await json<Detail>(await connect(t.key, { upstream: liveConnectBody(a) }));
    a.restore();
    const calls = mockOperator(() => accepted("wamid.never"));
    const sent = await send(t.key, crypto.randomUUID(), textMessage(id));
    expect(sent.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(sent);
    expect((await api(`/channel-numbers/${id}`, t.key, { method: "DELETE" })).status).toBe(204);
    await runDurableObjectAlarm(channelNumberStub(env, id));
    expect(calls).toHaveLength(0);
    expect(await json(await api(`/messages/${jobId}`, t.key))).toMatchObject({
      status: "failed",
      error: { code: "number_disconnected" },
    });
    expect((await api(`/channel-numbers/${id}`, t.key)).status).toBe(404);
    expect((await send(t.key, crypto.randomUUID(), textMessage(id))).status).toBeGreaterThanOrEqual(400);
    expect((await api(`/channel-numbers/${id}`, t.key, { method: "DELETE" })).status).toBe(404);
  });
});

describe("number health", () => {
  it("asks the operator again after an hour and shows its refusal as the last operator error, keeping the last rating", async () => {
    const start = Date.UTC(2042, 0, 1);
    const clock = fakeClock(start);
    const t = await keyOnly();
    const a = account();
    const { id } = await json<Detail>(await connect(t.key, { upstream: liveConnectBody(a) }));
    a.profile = { ...a.profile, quality_rating: "YELLOW", messaging_limit_tier: "TIER_10K" };
    clock.set(start + OPERATOR_REFRESH_MS - 1000);
    expect((await json<Detail>(await api(`/channel-numbers/${id}`, t.key))).health.qualityRating).toBe("GREEN");
    clock.set(start + OPERATOR_REFRESH_MS);
    const fresh = await json<Detail>(await api(`/channel-numbers/${id}`, t.key));
    expect(fresh.health).toMatchObject({
      qualityRating: "YELLOW",
      messagingLimitTier: "TIER_10K",
      lastOperatorError: null,
    });
    a.token = "EAAG-rotated-elsewhere-0000";
    clock.set(start + 2 * OPERATOR_REFRESH_MS);
    const refused = await json<Detail>(await api(`/channel-numbers/${id}`, t.key));
    expect(refused.health.qualityRating).toBe("YELLOW");
    expect(refused.health.lastOperatorError).toContain("HTTP 401, code 190");
    expect(a.calls.filter((c) => c === `GET ${a.phoneNumberId}`)).toHaveLength(3);
  });

  it("counts today's sends", async () => {
    const start = Date.UTC(2043, 0, 1, 12);
    const clock = fakeClock(start);
    const t = await createTenant();
    expect((await send(t.key, crypto.randomUUID(), textMessage(t.numberId))).status).toBe(201);
    // Counts reach D1 at most once a minute per workspace: the test ships them a minute later.
    clock.set(start + 61_000);
    await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    await vi.waitFor(
      async () =>
        expect((await json<Detail>(await api(`/channel-numbers/${t.numberId}`, t.key))).health.sendsToday).toBe(1),
      { timeout: 10_000, interval: 200 },
    );
  });

  it("the operator's quality webhook updates the rating and tier of the live number it names by display number, without waiting for the hour", async () => {
    const start = Date.UTC(2044, 0, 1);
    const clock = fakeClock(start);
    const display = {
      display_phone_number: "+1 555-201-0001",
      verified_name: "Acme Shop",
      quality_rating: "GREEN",
      messaging_limit_tier: "TIER_1K",
    };
    const t = await keyOnly();
    const a = account({ profile: display });
    const { id } = await json<Detail>(await connect(t.key, { upstream: liveConnectBody(a) }));
    // The same display number in another workspace, under another business account: never touched.
    const other = await keyOnly();
    const b = account({ profile: display });
    const { id: otherId } = await json<Detail>(await connect(other.key, { upstream: liveConnectBody(b) }));
    b.restore(); // one fake operator at a time from here (b's would refuse a's ids)
    const gets = () => a.calls.filter((c) => c === `GET ${a.phoneNumberId}`).length;
    const health = async () => (await json<Detail>(await api(`/channel-numbers/${id}`, t.key))).health;

    clock.set(start + 10 * 60_000);
    const upgrade = qualityUpdatePayload(a.wabaId, {
      display_phone_number: "15552010001",
      event: "UPGRADE",
      current_limit: "TIER_10K",
      old_limit: "TIER_1K",
      max_daily_conversation_per_phone_number: 10000,
    });
    expect((await postOperator(upgrade)).status).toBe(200);
    expect(await health()).toMatchObject({
      qualityRating: "GREEN",
      messagingLimitTier: "TIER_10K",
      checkedAt: new Date(start + 10 * 60_000).toISOString(),
    });

    // Formatted digits match too; FLAGGED is the operator's Low rating.
    clock.set(start + 20 * 60_000);
    expect(
      (
        await postOperator(
          qualityUpdatePayload(a.wabaId, {
            display_phone_number: "+1 (555) 201-0001",
            event: "FLAGGED",
            current_limit: "TIER_10K",
          }),
        )
      ).status,
    ).toBe(200);
    expect(await health()).toMatchObject({ qualityRating: "RED", messagingLimitTier: "TIER_10K" });
    expect(gets()).toBe(1);

    // UNFLAGGED does not say which rating it left Low for: the next read asks the operator.
    a.profile = { ...a.profile, quality_rating: "YELLOW", messaging_limit_tier: "TIER_10K" };
    expect(
      (
        await postOperator(
          qualityUpdatePayload(a.wabaId, {
            display_phone_number: "15552010001",
            event: "UNFLAGGED",
            current_limit: "TIER_10K",
          }),
        )
      ).status,
    ).toBe(200);
    expect(await health()).toMatchObject({
      qualityRating: "YELLOW",
      messagingLimitTier: "TIER_10K",
      lastOperatorError: null,
    });
    expect(gets()).toBe(2);

    expect((await json<Detail>(await api(`/channel-numbers/${otherId}`, other.key))).health).toMatchObject({
      qualityRating: "GREEN",
      messagingLimitTier: "TIER_1K",
    });
  });

  it("an account ban or restriction from the operator's webhook becomes the live number's last operator error; other account events change nothing", async () => {
    fakeClock(Date.UTC(2045, 0, 1));
    const t = await keyOnly();
    const a = account();
    const { id } = await json<Detail>(await connect(t.key, { upstream: liveConnectBody(a) }));
    const health = async () => (await json<Detail>(await api(`/channel-numbers/${id}`, t.key))).health;

    expect(
      (await postOperator(accountUpdatePayload(a.wabaId, { event: "VERIFIED_ACCOUNT", phone_number: "15557770000" })))
        .status,
    ).toBe(200);
    expect((await health()).lastOperatorError).toBeNull();

    const restriction = {
      event: "ACCOUNT_RESTRICTION",
      restriction_info: [
        { restriction_type: "RESTRICTED_BIZ_INITIATED_MESSAGING", expiration: "2045-01-02T00:00:00+0000" },
      ],
    };
    expect((await postOperator(accountUpdatePayload(a.wabaId, restriction))).status).toBe(200);
    expect((await health()).lastOperatorError).toBe(
      "The operator restricted the business account (ACCOUNT_RESTRICTION: RESTRICTED_BIZ_INITIATED_MESSAGING until 2045-01-02T00:00:00+0000).",
    );

    const ban = { event: "DISABLED_UPDATE", ban_info: { waba_ban_state: "DISABLE", waba_ban_date: "January 1, 2045" } };
    expect((await postOperator(accountUpdatePayload(a.wabaId, ban))).status).toBe(200);
    expect(await health()).toMatchObject({
      lastOperatorError: "The operator banned the business account (DISABLED_UPDATE, DISABLE on January 1, 2045).",
      qualityRating: "GREEN",
    });
  });
});
