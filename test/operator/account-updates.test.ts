import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, json } from "../helpers/http";
import { createKey, createWorkspace } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { liveConnectBody, fakeAccounts, type FakeAccount } from "../helpers/operator";
import { accountFieldPayload, postOperator } from "../helpers/operator-webhook";
import { fakeClockPerTest } from "../helpers/clock";
import { channelNumberStub } from "../../src/durable-objects/stubs";

// The operator's account-level webhook (`account_update`), in the shapes of its reference
// (developers.facebook.com, "account_update webhook reference": `entry[].id` the business account,
// `time` and `restriction_info[].expiration` Unix times; PARTNER_* events name the customer's
// account in `waba_info.waba_id`). Each event reaches the health of the account's live numbers;
// where the operator stops serving them, they pause, lose their verified binding, or are
// disconnected (accountEffect in src/features/numbers/operator-updates.ts, applied by src/queue/operator-webhook-events.ts).

const clock = fakeClockPerTest(Date.UTC(2049, 0, 1), (t) => t + 24 * 3_600_000);
const accounts = fakeAccounts();
afterEach(() => {
  accounts.restoreAll();
  vi.restoreAllMocks();
});

interface Detail {
  status: string;
  sending: { state: string; reason: { code: string; reportedBy: string } | null };
  health: { state: string; lastOperatorError: string | null; unverifiedSince: string | null };
}

async function liveNumber(): Promise<{ a: FakeAccount; workspaceId: string; key: string; numberId: string }> {
  const a = accounts.account();
  const workspaceId = await createWorkspace({ plan: "pro" });
  const { key } = await createKey(workspaceId);
  const res = await api("/channel-numbers", key, { method: "POST", json: { upstream: liveConnectBody(a) } });
  expect(res.status, await res.clone().text()).toBe(201);
  return { a, workspaceId, key, numberId: (await json<{ id: string }>(res)).id };
}

/** One `account_update` change, as the operator sends it (its own `time`, an integer). */
const accountUpdate = (entryId: string, value: Record<string, unknown>) => {
  const payload = accountFieldPayload(entryId, "account_update", value);
  payload.entry[0]!.time = Math.floor(clock.now() / 1000);
  return payload;
};

const detailOf = async (key: string, numberId: string) => json<Detail>(await api(`/channel-numbers/${numberId}`, key));

describe("account_update in the operator's published shapes", () => {
  it("ACCOUNT_RESTRICTION with an integer expiration (the reference's example) reaches the number's health", async () => {
    const t = await liveNumber();
    const expiration = Math.floor(clock.now() / 1000) + 86_400;
    const posted = await postOperator(
      accountUpdate(t.a.wabaId, {
        event: "ACCOUNT_RESTRICTION",
        restriction_info: [
          { restriction_type: "RESTRICTED_BIZ_INITIATED_MESSAGING", expiration },
          { restriction_type: "RESTRICTED_ADD_PHONE_NUMBER_ACTION", expiration },
        ],
      }),
    );
    expect(posted.status).toBe(200);
    const until = new Date(expiration * 1000).toISOString();
    const d = await detailOf(t.key, t.numberId);
    expect(d.health.lastOperatorError).toBe(
      `The operator restricted the business account (ACCOUNT_RESTRICTION: RESTRICTED_BIZ_INITIATED_MESSAGING until ${until}, RESTRICTED_ADD_PHONE_NUMBER_ACTION until ${until}).`,
    );
    // Replies to customers still go: a restriction does not pause the number.
    expect(d.sending.state).toBe("active");
  });

  it("ACCOUNT_VIOLATION is shown with its type; the number keeps sending", async () => {
    const t = await liveNumber();
    await postOperator(
      accountUpdate(t.a.wabaId, { event: "ACCOUNT_VIOLATION", violation_info: { violation_type: "SCAM" } }),
    );
    const d = await detailOf(t.key, t.numberId);
    expect(d.health.lastOperatorError).toBe(
      "The operator reported a policy violation by the business account (ACCOUNT_VIOLATION: SCAM).",
    );
    expect(d.sending.state).toBe("active");
  });

  it("DISABLED_UPDATE with the ban in force pauses the number; a scheduled ban only warns", async () => {
    const warned = await liveNumber();
    await postOperator(
      accountUpdate(warned.a.wabaId, {
        event: "DISABLED_UPDATE",
        ban_info: { waba_ban_state: "SCHEDULE_FOR_DISABLE", waba_ban_date: "January 8, 2049" },
      }),
    );
    expect(await detailOf(warned.key, warned.numberId)).toMatchObject({
      sending: { state: "active" },
      health: { lastOperatorError: expect.stringContaining("SCHEDULE_FOR_DISABLE") },
    });
    const banned = await liveNumber();
    await postOperator(
      accountUpdate(banned.a.wabaId, {
        event: "DISABLED_UPDATE",
        ban_info: { waba_ban_state: "DISABLE", waba_ban_date: "January 1, 2049" },
      }),
    );
    expect(await detailOf(banned.key, banned.numberId)).toMatchObject({
      sending: { state: "paused", reason: { code: "account_restricted", reportedBy: "webhook" } },
      health: { state: "paused" },
    });
  });

  it("ACCOUNT_OFFBOARDED pauses the number: the operator no longer serves it through the Cloud API", async () => {
    const t = await liveNumber();
    await postOperator(accountUpdate(t.a.wabaId, { event: "ACCOUNT_OFFBOARDED" }));
    const d = await detailOf(t.key, t.numberId);
    expect(d).toMatchObject({
      sending: { state: "paused", reason: { code: "number_not_registered", reportedBy: "webhook" } },
      health: { lastOperatorError: expect.stringContaining("ACCOUNT_OFFBOARDED") },
    });
    expect(d.health.unverifiedSince).toBeNull();
  });

  it("PARTNER_REMOVED (the customer's account in waba_info) pauses the number and makes its binding unverified", async () => {
    const t = await liveNumber();
    // The entry is the partner's; the account named is the customer's.
    await postOperator(
      accountUpdate("987654321098765", {
        event: "PARTNER_REMOVED",
        waba_info: { waba_id: t.a.wabaId, owner_business_id: "123456789012345" },
      }),
    );
    const d = await detailOf(t.key, t.numberId);
    expect(d).toMatchObject({
      sending: { state: "paused", reason: { code: "upstream_permission_denied" } },
      health: { unverifiedSince: new Date(clock.now()).toISOString() },
    });
    expect(d.health.lastOperatorError).toMatch(/PARTNER_REMOVED/);
  });

  it("ACCOUNT_DELETED disconnects the account's numbers: queued sends fail, the number reads 404, the audit log says why", async () => {
    const t = await liveNumber();
    const queued = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Hi", "5511977770040"));
    expect(queued.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(queued);
    await postOperator(accountUpdate(t.a.wabaId, { event: "ACCOUNT_DELETED" }));
    expect((await api(`/channel-numbers/${t.numberId}`, t.key)).status).toBe(404);
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    await vi.waitFor(async () =>
      expect(
        await json<{ status: string; error: { code: string } | null }>(await api(`/messages/${jobId}`, t.key)),
      ).toMatchObject({ status: "failed", error: { code: "number_disconnected" } }),
    );
    const audit = await env.DB.prepare("SELECT * FROM audit_log WHERE workspace_id = ? ORDER BY seq DESC LIMIT 1")
      .bind(t.workspaceId)
      .first<Record<string, string | null>>();
    expect(audit).toMatchObject({
      action: "channel_number.disconnected",
      target_id: t.numberId,
      actor_type: "admin",
      actor_label: "the operator's account_update webhook (ACCOUNT_DELETED)",
    });
  });

  it("an event about another account, or one that changes nothing here, leaves the number as it was", async () => {
    const t = await liveNumber();
    await postOperator(accountUpdate("111122223333", { event: "ACCOUNT_DELETED" }));
    await postOperator(accountUpdate(t.a.wabaId, { event: "ACCOUNT_RECONNECTED" }));
    await postOperator(accountUpdate(t.a.wabaId, { event: "BUSINESS_PRIMARY_LOCATION_COUNTRY_UPDATE", country: "BR" }));
    expect(await detailOf(t.key, t.numberId)).toMatchObject({
      status: "connected",
      sending: { state: "active" },
      health: { lastOperatorError: null, unverifiedSince: null },
    });
  });
});
