import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { answerAtEdge } from "../helpers/edge";
import { fakeClockPerTest } from "../helpers/clock";
import { api, json } from "../helpers/http";
import { send, textMessage } from "../helpers/send";
import { liveNumberTenant, operatorError, type OperatorCall } from "../helpers/operator";
import { accountFieldPayload, combined, postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { channelNumberStub } from "../../src/durable-objects/stubs";
import { PACE_WINDOW_MS } from "../../src/durable-objects/channel-number/delivery-policy";
import { signedInMember } from "../helpers/dashboard";

// Account-level errors the operator reports by webhook (issue 21, item 4): a `failed` status with
// an account-level code, or the `errors` of a `messages` change, pause the number as the same code
// in the answer to a call does; other fields and errors are shown on the number's health.

const clock = fakeClockPerTest(Date.UTC(2043, 0, 1), (t) => t + 24 * 3_600_000);
afterEach(() => {
  vi.restoreAllMocks();
});

type Tenant = Awaited<ReturnType<typeof liveNumberTenant>>;

/**
 * The operator at the fetch edge: sends answered by `reply` (by default accepted, its id `wamid.<n>`, as
 * it does for an account it then fails by webhook); the hourly check of the number (a GET, when its
 * page is read) answered with its profile.
 */
function operator(
  reply: (call: OperatorCall, index: number) => Response = (_, i) =>
    Response.json({ messaging_product: "whatsapp", messages: [{ id: `wamid.${i}` }] }),
): OperatorCall[] {
  const calls: OperatorCall[] = [];
  answerAtEdge(async (input, init) => {
    const req = new Request(input as RequestInfo, init);
    if (!req.url.startsWith(`${env.UPSTREAM_CLOUD_API_BASE_URL}/`))
      throw new Error(`unexpected outbound request: ${req.url}`);
    if (req.method === "GET")
      return Response.json({ verified_name: "Acme", quality_rating: "GREEN", messaging_limit_tier: "TIER_1K" });
    const call: OperatorCall = {
      at: Date.now(),
      url: req.url,
      auth: req.headers.get("authorization"),
      body: await req.json(),
    };
    calls.push(call);
    return reply(call, calls.length - 1);
  });
  return calls;
}
const acceptAll = () => operator();

const drain = (numberId: string) => runDurableObjectAlarm(channelNumberStub(env, numberId));
async function drainFor(numberId: string, rounds: number): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await drain(numberId);
    clock.advance(PACE_WINDOW_MS);
  }
}

async function sendOne(t: Tenant, to: string): Promise<string> {
  const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Hello", to));
  expect(res.status).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

const message = async (t: Tenant, jobId: string) =>
  json<Record<string, unknown> & { status: string }>(await api(`/messages/${jobId}`, t.key));

interface NumberView {
  sending: { state: string; nextAttemptAt: string | null; reason: Record<string, unknown> | null } & Record<
    string,
    unknown
  >;
  health: Record<string, unknown>;
}
const numberView = async (t: Tenant) => json<NumberView>(await api(`/channel-numbers/${t.numberId}`, t.key));

/** The operator's `failed` status for one of our messages, with its error object. */
const failedReport = (t: Tenant, wamid: string, jobId: string, code: number, title: string) =>
  postOperator(
    statusPayload(t.phoneNumberId, [
      {
        id: wamid,
        status: "failed",
        timestamp: seconds(clock.now()),
        recipient_id: "5511900000001",
        biz_opaque_callback_data: jobId,
        errors: [{ code, title, message: title, error_data: { details: `${title}.` } }],
      },
    ]),
  );

describe("an account-level failure reported by webhook pauses the number", () => {
  it("131031: the message fails, later sends wait queued (never called) until a probe goes through without another failure", async () => {
    const t = await liveNumberTenant();
    const calls = acceptAll();
    const first = await sendOne(t, "5511900000001");
    await drainFor(t.numberId, 1);
    expect(await message(t, first)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.0" });

    // The operator took the call, then fails the message by webhook: the account is locked.
    expect((await failedReport(t, "wamid.0", first, 131031, "Business account locked")).status).toBe(200);
    expect(await message(t, first)).toMatchObject({
      status: "failed",
      error: { code: "account_restricted", upstreamCode: "131031", retriable: true },
    });
    const paused = await numberView(t);
    expect(paused.sending).toMatchObject({
      state: "paused",
      pausedSince: expect.any(String),
      reason: { code: "account_restricted", upstreamCode: "131031", reportedBy: "webhook" },
    });
    expect(paused.health).toMatchObject({
      state: "paused",
      pausedReason: expect.stringContaining("operator code 131031, reported by webhook"),
    });
    const firstProbeAt = Date.parse(paused.sending.nextAttemptAt!);
    expect(firstProbeAt - clock.now()).toBe(15 * 60_000);

    // Sends are still accepted; they wait, queued, and nothing is called.
    const later = [await sendOne(t, "5511900000002"), await sendOne(t, "5511900000003")];
    await drainFor(t.numberId, 5);
    expect(calls).toHaveLength(1);
    for (const jobId of later) expect(await message(t, jobId)).toMatchObject({ status: "queued" });

    // The probe: one message, accepted by the operator; that alone proves nothing, so the others still wait.
    clock.set(firstProbeAt);
    await drainFor(t.numberId, 3);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.body.biz_opaque_callback_data).toBe(later[0]);
    const confirming = await numberView(t);
    expect(confirming.sending).toMatchObject({ state: "paused", reason: { reportedBy: "webhook" } });
    expect(Date.parse(confirming.sending.nextAttemptAt!)).toBeGreaterThan(clock.now());

    // The operator fails the probe too: still paused, the next probe later than the first.
    expect((await failedReport(t, "wamid.1", later[0]!, 131031, "Business account locked")).status).toBe(200);
    expect(await message(t, later[0]!)).toMatchObject({ status: "failed", error: { code: "account_restricted" } });
    const again = await numberView(t);
    expect(Date.parse(again.sending.nextAttemptAt!) - clock.now()).toBe(30 * 60_000);
    await drainFor(t.numberId, 3);
    expect(calls).toHaveLength(2);

    // The account is unlocked: the next probe goes through and no failure follows; the number resumes.
    clock.set(Date.parse(again.sending.nextAttemptAt!));
    await drainFor(t.numberId, 2);
    expect(calls).toHaveLength(3);
    clock.set(Date.parse((await numberView(t)).sending.nextAttemptAt!));
    expect((await numberView(t)).sending).toEqual({
      state: "active",
      pausedSince: null,
      nextAttemptAt: null,
      reason: null,
    });
    const after = await sendOne(t, "5511900000004");
    await drainFor(t.numberId, 2);
    expect(await message(t, after)).toMatchObject({ status: "sent" });
    expect(calls).toHaveLength(4);
  });

  it("sends held by a webhook pause still fail with held_too_long 24 hours after their acceptance, never called", async () => {
    const t = await liveNumberTenant();
    acceptAll();
    const first = await sendOne(t, "5511900000001");
    await drainFor(t.numberId, 1);
    await failedReport(t, "wamid.0", first, 131042, "Business eligibility payment issue");
    expect((await numberView(t)).sending).toMatchObject({
      state: "paused",
      reason: { code: "account_payment_issue", upstreamCode: "131042", reportedBy: "webhook" },
    });
    // Every later report of the same kind (messages called before the pause) leaves the back-off as it is.
    const probeAt = (await numberView(t)).sending.nextAttemptAt;
    clock.advance(60_000);
    await failedReport(t, "wamid.0", first, 131042, "Business eligibility payment issue");
    expect((await numberView(t)).sending.nextAttemptAt).toBe(probeAt);

    // Its probes are refused at once from here on (the operator now answers the call with the code).
    vi.restoreAllMocks();
    const refused = operator(() => operatorError(400, 131042, "Business eligibility payment issue"));
    const held = await sendOne(t, "5511900000002");
    clock.advance(24 * 3_600_000 + 1_000);
    await drainFor(t.numberId, 3);
    expect(await message(t, held)).toMatchObject({ status: "failed", error: { code: "held_too_long" } });
    expect(refused.map((c) => c.body.biz_opaque_callback_data)).not.toContain(held);
  });

  it("the codes added to the pause table (33, 131005, 131037, 200–299) pause the number when a call is refused with them; nothing fails", async () => {
    const cases: [number, string][] = [
      [33, "number_deleted"],
      [131005, "upstream_permission_denied"],
      [131037, "display_name_not_approved"],
      [200, "upstream_permission_denied"],
      [299, "upstream_permission_denied"],
    ];
    for (const [code, ours] of cases) {
      const t = await liveNumberTenant();
      const calls = operator(() => operatorError(code === 33 ? 400 : 403, code, `(#${code}) refused`));
      const jobId = await sendOne(t, "5511900000001");
      await drainFor(t.numberId, 3);
      expect([code, calls.length]).toEqual([code, 1]);
      expect([code, (await message(t, jobId)).status]).not.toEqual([code, "failed"]);
      expect([code, (await numberView(t)).sending]).toMatchObject([
        code,
        { state: "paused", reason: { code: ours, upstreamCode: String(code), reportedBy: "answer" } },
      ]);
      vi.restoreAllMocks();
    }
  });
});

describe("temporary errors reported by webhook", () => {
  it("131000, 131016 and 130429 fail the message with upstream_temporary_failure, retriable; the number keeps sending", async () => {
    const t = await liveNumberTenant();
    acceptAll();
    for (const [i, code] of [131000, 131016, 130429].entries()) {
      const jobId = await sendOne(t, `551190000000${i}`);
      await drainFor(t.numberId, 1);
      expect((await failedReport(t, `wamid.${i}`, jobId, code, "Something went wrong")).status).toBe(200);
      expect(await message(t, jobId)).toMatchObject({
        status: "failed",
        error: { code: "upstream_temporary_failure", upstreamCode: String(code), retriable: true },
      });
    }
    expect((await numberView(t)).sending).toMatchObject({ state: "active" });
  });
});

describe("what the operator's webhooks say about a number beyond its messages", () => {
  it("a change of another field (standby) and a change's value.errors are shown on the number's health, never dropped; an account-level code in errors pauses", async () => {
    const t = await liveNumberTenant();
    operator();
    const standby = accountFieldPayload("WABA", "standby", {
      messaging_product: "whatsapp",
      metadata: { display_phone_number: "15557770000", phone_number_id: t.phoneNumberId },
      messages: [
        { from: "5511900000009", id: "wamid.SB", timestamp: seconds(clock.now()), type: "text", text: { body: "hi" } },
      ],
    });
    expect((await postOperator(standby)).status).toBe(200);
    const afterStandby = await numberView(t);
    expect(afterStandby.health.lastOperatorNotice).toMatchObject({
      field: "standby",
      message: expect.stringContaining("another app controls"),
      upstreamCode: null,
      at: expect.any(String),
    });
    // What a standby change carries is not applied: no inbound message, no window.
    expect(await json(await api(`/channel-numbers/${t.numberId}/contacts/5511900000009`, t.key))).toMatchObject({
      windowOpen: false,
    });
    expect(afterStandby.sending).toMatchObject({ state: "active" });
    // A standby number gets one per message: its row is rewritten at most hourly for the same field.
    clock.advance(60_000);
    expect((await postOperator(standby)).status).toBe(200);
    expect((await numberView(t)).health.lastOperatorNotice).toEqual(afterStandby.health.lastOperatorNotice);
    clock.advance(60 * 60_000);
    expect((await postOperator(standby)).status).toBe(200);
    expect(Date.parse(((await numberView(t)).health.lastOperatorNotice as { at: string }).at)).toBeGreaterThan(
      Date.parse((afterStandby.health.lastOperatorNotice as { at: string }).at),
    );

    // The errors of a messages change, about the number: shown, and an account-level one pauses it.
    const errors = (list: Record<string, unknown>[]) =>
      accountFieldPayload("WABA", "messages", {
        messaging_product: "whatsapp",
        metadata: { display_phone_number: "15557770000", phone_number_id: t.phoneNumberId },
        errors: list,
      });
    expect(
      (await postOperator(errors([{ code: 131051, title: "Unsupported message type", error_data: { details: "x" } }])))
        .status,
    ).toBe(200);
    expect((await numberView(t)).health.lastOperatorNotice).toMatchObject({
      field: "messages",
      message: "Unsupported message type (x)",
      upstreamCode: "131051",
    });
    expect((await numberView(t)).sending).toMatchObject({ state: "active" });
    const res = await postOperator(
      combined(
        errors([
          { code: 131048, title: "Spam rate limit hit", error_data: { details: "Too many messages were blocked." } },
        ]),
      ),
    );
    expect(res.status).toBe(200);
    const view = await numberView(t);
    expect(view.health.lastOperatorNotice).toMatchObject({ field: "messages", upstreamCode: "131048" });
    expect(view.sending).toMatchObject({
      state: "paused",
      reason: { code: "account_spam_limited", upstreamCode: "131048", reportedBy: "webhook" },
    });
  });
});

describe("the number's dashboard page", () => {
  it("shows a webhook pause with its reason and next attempt, and the last operator notice", async () => {
    const t = await liveNumberTenant();
    acceptAll();
    const first = await sendOne(t, "5511900000001");
    await drainFor(t.numberId, 1);
    await failedReport(t, "wamid.0", first, 131031, "Business account locked");
    await postOperator(
      accountFieldPayload("WABA", "standby", {
        messaging_product: "whatsapp",
        metadata: { display_phone_number: "15557770000", phone_number_id: t.phoneNumberId },
      }),
    );
    const owner = await signedInMember(t.workspaceId, "owner");
    const html = await (await owner.browser.get(`/dashboard/numbers/${t.numberId}`)).text();
    expect(html).toContain("state-paused");
    expect(html).toContain("The business account is locked or restricted.");
    expect(html).toContain("operator code 131031, reported by webhook");
    expect(html).toContain("Next attempt with one message");
    expect(html).toContain("no failure reported for 5 minutes");
    expect(html).toMatch(
      /Last operator notice<\/dt><dd>The operator sent this number(&#39;|')s webhook as (&quot;|")standby/,
    );
    expect(html).not.toContain("`");
  });
});

describe("an operator item too large for the queue", () => {
  it("is not acknowledged when it could not be applied at once: 500, and the operator's retry applies it", async () => {
    const t = await liveNumberTenant();
    acceptAll();
    const jobId = await sendOne(t, "5511900000001");
    await drainFor(t.numberId, 1);
    // A status with a field of its own of 130 KB: more than a queue message holds.
    const report = statusPayload(t.phoneNumberId, [
      {
        id: "wamid.0",
        status: "delivered",
        timestamp: seconds(clock.now()),
        biz_opaque_callback_data: jobId,
        pricing: { note: "x".repeat(130 * 1024) },
      },
    ]);
    const queued = vi.spyOn(env.UPSTREAM_EVENT_QUEUE, "sendBatch");
    // D1 fails while the route looks the number up: the item cannot be applied now, nor queued.
    // Only that lookup fails: the webhook consumer, delivering events meanwhile, reads D1 too.
    const prepare = env.DB.prepare.bind(env.DB);
    let failed = false;
    vi.spyOn(env.DB, "prepare").mockImplementation((query: string) => {
      if (!failed && query.includes("upstream_phone_number_id = ?")) {
        failed = true;
        throw new Error("D1_ERROR: the database is unavailable");
      }
      return prepare(query);
    });
    const refused = await postOperator(report);
    expect(refused.status).toBe(500);
    expect(queued).not.toHaveBeenCalled();
    expect(await message(t, jobId)).toMatchObject({ deliveredAt: null });
    // The operator sends the payload again: applied.
    expect((await postOperator(report)).status).toBe(200);
    expect(await message(t, jobId)).toMatchObject({ deliveredAt: expect.any(String) });
  });
});
