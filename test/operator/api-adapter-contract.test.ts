import { createExecutionContext, createMessageBatch, getQueueResult, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { admin, api, expectError, json } from "../helpers/http";
import { createWorkspace } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { answerAtEdge } from "../helpers/edge";
import {
  liveNumberTenant,
  operatorCallOf,
  operatorMessagesUrl,
  operatorNumberUrl,
  type OperatorCall,
} from "../helpers/operator";
import { queuedEvents, statusEventsOf } from "../helpers/events";
import type { WebhookEvent } from "../../src/messages/events";
import { inboundPayload, operatorSignature, postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { channelNumberStub } from "../../src/durable-objects/stubs";
import { classifyOperatorError } from "../../src/operator/error-codes";
import { CALL_STARTED_AT_HEADER, OperatorApiAdapter } from "../../src/operator/api-adapter";
import { PACE_SPACING_MS, PACE_WINDOW_MS } from "../../src/durable-objects/channel-number/delivery-policy";
import { PAIR_BURST, PAIR_INTERVAL_MS } from "../../src/durable-objects/channel-number/pair-pace";
import worker from "../../src/index";
import { fakeClockPerTest } from "../helpers/clock";

// The operator's real contract (WhatsApp Cloud API: send messages, error codes,
// throughput, webhooks), with the operator mocked at the fetch edge and its
// payloads shaped like Meta's documented examples.

const clock = fakeClockPerTest(Date.UTC(2042, 0, 1), (t) => t + 24 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

type Tenant = Awaited<ReturnType<typeof liveNumberTenant>>;

/**
 * The operator at the fetch edge: message sends go to `reply`; the connect-time
 * check of the number (GET with a token) answers for any token in `validTokens`.
 */
function operator(
  t: Tenant,
  reply: (call: OperatorCall, index: number) => Response | Promise<Response>,
  validTokens: Set<string> = new Set([t.token]),
) {
  const calls: OperatorCall[] = [];
  answerAtEdge(async (input, init) => {
    const req = new Request(input, init);
    const token = req.headers.get("authorization")?.replace(/^Bearer /, "") ?? "";
    if (req.method === "GET" && req.url === operatorNumberUrl(t.phoneNumberId)) {
      return validTokens.has(token)
        ? Response.json({ id: t.phoneNumberId, display_phone_number: "+1 555-777-0000", verified_name: "Acme" })
        : metaError(401, 190, { message: "Error validating access token: Session has expired." });
    }
    if (req.method !== "POST" || req.url !== operatorMessagesUrl(t.phoneNumberId))
      throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
    const call = await operatorCallOf(req);
    calls.push(call);
    return reply(call, calls.length - 1);
  });
  return calls;
}

/** Meta's send answer: `contacts[].wa_id` may differ from `input`; newer versions add `message_status`. */
const metaAccepted = (id: string, input: string, waId = input.replace(/^\+/, "")) =>
  Response.json({
    messaging_product: "whatsapp",
    contacts: [{ input, wa_id: waId }],
    messages: [{ id, message_status: "accepted" }],
  });

/** Meta's error object, as its error-codes page shows it. */
function metaError(
  status: number,
  code: number,
  opts: { subcode?: number; details?: string; transient?: boolean; message?: string } = {},
) {
  return Response.json(
    {
      error: {
        message: opts.message ?? "(#" + code + ") error",
        type: "OAuthException",
        code,
        ...(opts.subcode !== undefined ? { error_subcode: opts.subcode } : {}),
        error_data: { messaging_product: "whatsapp", details: opts.details ?? "" },
        ...(opts.transient !== undefined ? { is_transient: opts.transient } : {}),
        fbtrace_id: "Az8or2yhqkZfEZ-_4Qn_Bam",
      },
    },
    { status },
  );
}

const message = async (key: string, jobId: string) =>
  json<Record<string, unknown> & { status: string }>(await api(`/messages/${jobId}`, key));
const drain = (numberId: string) => runDurableObjectAlarm(channelNumberStub(env, numberId));
async function drainFor(numberId: string, rounds: number, stepMs = PACE_WINDOW_MS): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await drain(numberId);
    clock.advance(stepMs);
  }
}

async function sendOne(key: string, numberId: string, to = "5511999998888", body = "Hello"): Promise<string> {
  const res = await send(key, crypto.randomUUID(), textMessage(numberId, body, to));
  expect(res.status).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

const windowWith = async (t: Tenant, phone: string) =>
  json<{ windowOpen: boolean }>(await api(`/channel-numbers/${t.numberId}/contacts/${phone}`, t.key));

const sendingOf = async (t: Tenant) =>
  (await json<{ sending: Record<string, unknown> }>(await api(`/channel-numbers/${t.numberId}`, t.key))).sending;

/** The `message.received` events among those the queue carried, in order. */
const receivedEvents = (queued: () => WebhookEvent[]) =>
  queued().flatMap((e) => (e.type === "message.received" ? [e] : []));

describe("the recipient as the operator knows it", () => {
  it("goes out as '+' and digits; the operator's wa_id, when it differs, matches the recipient's inbound messages to the service window", async () => {
    const t = await liveNumberTenant();
    // A Brazilian mobile: sent with the ninth digit, known to the operator without it.
    const calls = operator(t, () => metaAccepted("wamid.HBgLNTUxMTkx", "+5511912345678", "551112345678"));
    const jobId = await sendOne(t.key, t.numberId, "5511912345678");
    await drain(t.numberId);
    expect(calls.map((c) => c.body.to)).toEqual(["+5511912345678"]);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.HBgLNTUxMTkx" });
    expect(await windowWith(t, "5511912345678")).toMatchObject({ windowOpen: false });

    const now = seconds(clock.now());
    const reply = inboundPayload(
      t.phoneNumberId,
      [{ from: "551112345678", id: "wamid.IN.ALIAS", timestamp: now, type: "text", text: { body: "Oi!" } }],
      [{ profile: { name: "Ana" }, wa_id: "551112345678" }],
    );
    expect((await postOperator(reply)).status).toBe(200);
    await vi.waitFor(async () => expect(await windowWith(t, "5511912345678")).toMatchObject({ windowOpen: true }), {
      timeout: 10_000,
      interval: 50,
    });
    expect(await windowWith(t, "551112345678")).toMatchObject({ windowOpen: true });
  });

  it("reads answers of newer API versions: added fields pass, a field of an unexpected shape reads as absent", async () => {
    const t = await liveNumberTenant();
    operator(t, () =>
      Response.json({
        messaging_product: "whatsapp",
        contacts: "not a list any more",
        messages: [{ id: "wamid.NEW", message_status: "accepted", pacing: { tier: 3 } }],
        added_in_a_later_version: { anything: true },
      }),
    );
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.NEW" });
    expect(env.UPSTREAM_CLOUD_API_VERSION).toMatch(/^v\d+\.0$/);
  });

  it("carries only the operator's headers; X-Call-Started-At (when the call started) only when a soak run asks for it", async () => {
    const t = await liveNumberTenant();
    const seen: Headers[] = [];
    operator(t, () => metaAccepted("wamid.H1", "+5511900000001", "5511900000001"));
    // Sees each request on its way to the operator, and leaves it to the operator's answer.
    answerAtEdge((input, init) => {
      seen.push(new Request(input, init).headers);
      return undefined;
    });
    await sendOne(t.key, t.numberId, "5511900000001");
    await drain(t.numberId);
    expect(env.UPSTREAM_STAMP_CALLS).toBe("false");
    expect([...seen[0]!.keys()].sort()).toEqual(["authorization", "content-type"]);

    const stamped = new OperatorApiAdapter({
      baseUrl: env.UPSTREAM_CLOUD_API_BASE_URL,
      version: env.UPSTREAM_CLOUD_API_VERSION,
      phoneNumberId: t.phoneNumberId,
      accessToken: t.token,
      messagingProduct: "whatsapp",
      timeoutMs: 1_000,
      stampCalls: true,
    });
    expect(
      await stamped.send({
        jobId: crypto.randomUUID(),
        to: "5511900000001",
        attempt: 1,
        type: "text",
        payload: { body: "hi" },
      }),
    ).toMatchObject({ kind: "accepted" });
    expect(seen[1]!.get(CALL_STARTED_AT_HEADER)).toBe(String(clock.now()));
  });
});

describe("operator errors, as the operator sends them", () => {
  it("classifies every code of the documented table by code first, then status, with is_transient as a hint", () => {
    const kind = (code: string | null, status = 400, isTransient?: boolean) => {
      const r = classifyOperatorError(status, code, "m", isTransient === undefined ? {} : { isTransient });
      return r.kind === "retryable" ? (r.pairRate ? "pair" : `retry:${r.scope}`) : r.kind;
    };
    for (const code of ["130429", "4", "80007"]) expect([code, kind(code)]).toEqual([code, "retry:number"]);
    for (const code of ["131000", "131016", "2", "131057"])
      expect([code, kind(code, 500)]).toEqual([code, "retry:message"]);
    expect(kind("131056")).toBe("pair");
    for (const code of [
      "131047",
      "131026",
      "100",
      "131008",
      "131009",
      "131021",
      "131051",
      "131053",
      "130472",
      "131050",
      "132000",
      "132012",
      "132999",
      "131049",
    ]) {
      expect([code, kind(code)]).toEqual([code, "permanent"]);
    }
    for (const code of [
      "190",
      "0",
      "3",
      "10",
      "368",
      "131031",
      "131042",
      "131045",
      "131048",
      "133010",
      "33",
      "131005",
      "131037",
      "200",
      "299",
    ])
      expect([code, kind(code, 400)]).toEqual([code, "number_blocked"]);
    // Codes we do not know: the operator's hint, then the status.
    expect(kind("999001", 400, true)).toBe("retry:message");
    expect(kind("999001", 400, false)).toBe("permanent");
    expect(kind("999001", 503)).toBe("retry:message");
    // No error object at all: 429 is "not processed"; a bare 5xx may have been accepted.
    expect(kind(null, 429)).toBe("retry:number");
    expect(kind(null, 502)).toBe("unknown");
  });

  it("a final code fails the message at once and keeps error_data.details in our message", async () => {
    const t = await liveNumberTenant();
    const calls = operator(t, () =>
      metaError(400, 131009, {
        subcode: 2494010,
        details: "Parameter 'to' is not a valid phone number.",
        transient: false,
        message: "(#131009) Parameter value is not valid",
      }),
    );
    const jobId = await sendOne(t.key, t.numberId);
    await drainFor(t.numberId, 5);
    expect(calls).toHaveLength(1);
    const m = await message(t.key, jobId);
    expect(m).toMatchObject({
      status: "failed",
      error: { code: "invalid_parameters", upstreamCode: "131009", retriable: false },
    });
    expect((m.error as { message: string }).message).toContain("Parameter 'to' is not a valid phone number.");
  });

  it("131049 is final now and says that sending again may succeed after 24 hours", async () => {
    const t = await liveNumberTenant();
    operator(t, () =>
      metaError(400, 131049, { details: "This message was not delivered to maintain healthy ecosystem engagement." }),
    );
    const jobId = await sendOne(t.key, t.numberId);
    await drain(t.numberId);
    const m = await message(t.key, jobId);
    expect(m).toMatchObject({
      status: "failed",
      error: { code: "ecosystem_limited", upstreamCode: "131049", retriable: true },
    });
    expect((m.error as { message: string }).message).toMatch(/after 24 hours/);
  });

  it("131000 is retried at most twice", async () => {
    const t = await liveNumberTenant();
    const calls = operator(t, () => metaError(500, 131000, { details: "Something went wrong", transient: true }));
    const jobId = await sendOne(t.key, t.numberId);
    await drainFor(t.numberId, 40, 2_000);
    expect(calls).toHaveLength(3);
    expect(await message(t.key, jobId)).toMatchObject({
      status: "failed",
      error: { code: "upstream_retries_exhausted" },
    });
  });

  it("80007 (account rate limit) is retried after a long back-off, and the whole number waits", async () => {
    const t = await liveNumberTenant();
    const calls = operator(t, (_, i) =>
      i === 0 ? metaError(400, 80007, { details: "Rate limit hit" }) : metaAccepted(`wamid.${i}`, "+1"),
    );
    const first = await sendOne(t.key, t.numberId, "5511900000001");
    clock.advance(500);
    const other = await sendOne(t.key, t.numberId, "5511900000002");
    const start = clock.now();
    await drainFor(t.numberId, 20, 2_000);
    expect(calls).toHaveLength(1);
    expect(await message(t.key, first)).not.toMatchObject({ status: "failed" });
    clock.advance(60_000 - (clock.now() - start));
    await drainFor(t.numberId, 4);
    // Order is kept per conversation only: after the back-off, either may leave first.
    expect(calls.map((c) => c.body.biz_opaque_callback_data).sort()).toEqual([first, first, other].sort());
    for (const later of calls.slice(1)) expect(later.at - calls[0]!.at).toBeGreaterThanOrEqual(60_000);
    expect(await message(t.key, first)).toMatchObject({ status: "sent" });
  });

  it("a code we do not know is retried when the operator marks it is_transient, and final when it does not", async () => {
    const t = await liveNumberTenant();
    const calls = operator(t, (c, i) =>
      c.body.to === "+5511900000001" && i === 0
        ? metaError(400, 999001, { transient: true })
        : c.body.to === "+5511900000002"
          ? metaError(400, 999002, { transient: false })
          : metaAccepted(`wamid.${i}`, c.body.to),
    );
    const transient = await sendOne(t.key, t.numberId, "5511900000001");
    clock.advance(500);
    const final = await sendOne(t.key, t.numberId, "5511900000002");
    await drainFor(t.numberId, 10, 2_000);
    expect(await message(t.key, transient)).toMatchObject({ status: "sent" });
    expect(await message(t.key, final)).toMatchObject({
      status: "failed",
      error: { code: "upstream_rejected", upstreamCode: "999002" },
    });
    expect(calls).toHaveLength(3);
  });
});

describe("account-level refusals pause the number", () => {
  it("190 (expired token): nothing fails, the pause shows on the number, and reconnected credentials resume it at once", async () => {
    const t = await liveNumberTenant();
    const fresh = `EAAG${crypto.randomUUID().replaceAll("-", "")}`;
    const calls = operator(
      t,
      (c, i) =>
        c.auth === `Bearer ${fresh}`
          ? metaAccepted(`wamid.${i}`, c.body.to)
          : metaError(401, 190, { subcode: 463, message: "Error validating access token: Session has expired." }),
      new Set([fresh]),
    );
    const jobs = [];
    for (const to of ["5511900000001", "5511900000002", "5511900000001"]) {
      jobs.push(await sendOne(t.key, t.numberId, to));
      clock.advance(500);
    }
    await drainFor(t.numberId, 10);
    expect(calls).toHaveLength(1);
    for (const jobId of jobs) expect((await message(t.key, jobId)).status).not.toBe("failed");
    expect(await sendingOf(t)).toMatchObject({
      state: "paused",
      pausedSince: expect.any(String),
      nextAttemptAt: expect.any(String),
      reason: { code: "upstream_auth_failed", upstreamCode: "190" },
    });
    // Still accepted while paused: they wait in order.
    jobs.push(await sendOne(t.key, t.numberId, "5511900000003"));

    // Bad inputs change nothing: a token the operator refuses, a malformed body, an unknown number.
    await expectError(
      await admin(`/channel-numbers/${t.numberId}/credentials`, {
        method: "PUT",
        json: { accessToken: "EAAGnot-valid-anymore-0000" },
      }),
      400,
      "invalid_request",
    );
    await expectError(
      await admin(`/channel-numbers/${t.numberId}/credentials`, {
        method: "PUT",
        json: { accessToken: fresh, extra: 1 },
      }),
      400,
      "invalid_request",
    );
    await expectError(
      await admin(`/channel-numbers/${crypto.randomUUID()}/credentials`, {
        method: "PUT",
        json: { accessToken: fresh },
      }),
      404,
      "not_found",
    );
    expect(await sendingOf(t)).toMatchObject({ state: "paused" });

    const res = await admin(`/channel-numbers/${t.numberId}/credentials`, {
      method: "PUT",
      json: { accessToken: fresh },
    });
    expect(res.status).toBe(200);
    expect(JSON.stringify(await json(res))).not.toContain(fresh);
    expect(await sendingOf(t)).toEqual({ state: "active", pausedSince: null, nextAttemptAt: null, reason: null });
    await drainFor(t.numberId, 4);
    for (const jobId of jobs) expect(await message(t.key, jobId)).toMatchObject({ status: "sent" });
    const sent = calls.filter((c) => c.auth === `Bearer ${fresh}`).map((c) => c.body.biz_opaque_callback_data);
    expect(sent).toEqual(jobs);
  });

  it("131045 (number not registered) pauses; a later probe that goes through resumes by itself", async () => {
    const t = await liveNumberTenant();
    let registered = false;
    const calls = operator(t, (c, i) =>
      registered
        ? metaAccepted(`wamid.${i}`, c.body.to)
        : metaError(400, 131045, { details: "Message failed to send because of a phone number registration error." }),
    );
    const a = await sendOne(t.key, t.numberId, "5511900000001");
    clock.advance(500);
    const b = await sendOne(t.key, t.numberId, "5511900000002");
    await drainFor(t.numberId, 5);
    expect(calls).toHaveLength(1);
    const paused = await sendingOf(t);
    expect(paused).toMatchObject({
      state: "paused",
      reason: { code: "number_not_registered", upstreamCode: "131045" },
    });
    // The first probe, when due, is refused again: still paused, with a later probe.
    clock.set(Date.parse(String(paused.nextAttemptAt)));
    await drainFor(t.numberId, 2);
    expect(calls).toHaveLength(2);
    const again = await sendingOf(t);
    expect(Date.parse(String(again.nextAttemptAt))).toBeGreaterThan(Date.parse(String(paused.nextAttemptAt)));
    registered = true;
    clock.set(Date.parse(String(again.nextAttemptAt)));
    await drainFor(t.numberId, 4);
    expect(await sendingOf(t)).toMatchObject({ state: "active" });
    expect(await message(t.key, a)).toMatchObject({ status: "sent" });
    expect(await message(t.key, b)).toMatchObject({ status: "sent" });
    expect(calls).toHaveLength(4);
  });

  it("credentials can only be replaced on a live number", async () => {
    const workspaceId = await createWorkspace();
    const res = await admin(`/workspaces/${workspaceId}/channel-numbers`, {
      method: "POST",
      json: { displayPhoneNumber: "15550001111", upstream: { type: "sandbox" } },
    });
    const { id } = await json<{ id: string }>(res);
    await expectError(
      await admin(`/channel-numbers/${id}/credentials`, {
        method: "PUT",
        json: { accessToken: "EAAG0000000000000000" },
      }),
      400,
      "invalid_request",
    );
  });
});

describe("the operator's pair rate", () => {
  it("a number sending to one user at 2/s is paced at the pair rate, in order, with no refusals; other users are not held up", async () => {
    const t = await liveNumberTenant();
    // The operator's own limit: a bucket of PAIR_BURST messages per user, refilled one every PAIR_INTERVAL_MS.
    const level = new Map<string, { level: number; at: number }>();
    let refusals = 0;
    const calls = operator(t, (c, i) => {
      const prev = level.get(c.body.to) ?? { level: 0, at: c.at };
      const next = Math.max(0, prev.level - (c.at - prev.at) / PAIR_INTERVAL_MS) + 1;
      if (next > PAIR_BURST + 1e-9) {
        refusals++;
        return metaError(400, 131056, {
          details:
            "Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time.",
        });
      }
      level.set(c.body.to, { level: next, at: c.at });
      return metaAccepted(`wamid.${i}`, c.body.to);
    });
    const toOne: string[] = [];
    for (let i = 0; i < 60; i++) {
      toOne.push(await sendOne(t.key, t.numberId, "5511900000001", `n${i}`));
      clock.advance(500);
    }
    const toOthers: string[] = [];
    for (const to of ["5511900000002", "5511900000003", "5511900000004"]) {
      toOthers.push(await sendOne(t.key, t.numberId, to));
      clock.advance(500);
    }
    await drainFor(t.numberId, 280, PACE_SPACING_MS);

    expect(refusals).toBe(0);
    const one = calls.filter((c) => c.body.to === "+5511900000001");
    expect(one.map((c) => c.body.biz_opaque_callback_data)).toEqual(toOne);
    for (const jobId of [...toOne, ...toOthers]) expect(await message(t.key, jobId)).toMatchObject({ status: "sent" });
    // Past the burst, one message to that user every PAIR_INTERVAL_MS at most.
    const tail = one.slice(PAIR_BURST + 5).map((c) => c.at);
    for (let i = 1; i < tail.length; i++)
      expect(tail[i]! - tail[i - 1]!).toBeGreaterThanOrEqual(PAIR_INTERVAL_MS - PACE_WINDOW_MS);
    // The other users' messages, accepted after all 60, leave while that user waits.
    const others = calls.filter((c) => c.body.to !== "+5511900000001").map((c) => c.at);
    expect(Math.max(...others)).toBeLessThan(one[55]!.at);
  });
});

describe("failures after acceptance", () => {
  it("a failed status with the operator's errors[] after sent records the error with its details and emits message.status", async () => {
    const t = await liveNumberTenant();
    operator(t, () => metaAccepted("wamid.LATE", "+5511900000009"));
    const jobId = await sendOne(t.key, t.numberId, "5511900000009");
    await drain(t.numberId);
    expect(await message(t.key, jobId)).toMatchObject({ status: "sent" });
    const failed = statusPayload(t.phoneNumberId, [
      {
        id: "wamid.LATE",
        status: "failed",
        timestamp: seconds(clock.now() + 3_000),
        recipient_id: "5511900000009",
        biz_opaque_callback_data: jobId,
        errors: [
          {
            code: 131026,
            title: "Message undeliverable.",
            message: "Message undeliverable.",
            error_data: { details: "Message Undeliverable." },
            href: "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/",
          },
        ],
      },
    ]);
    const queued = queuedEvents();
    expect((await postOperator(failed)).status).toBe(200);
    await vi.waitFor(async () => expect(await message(t.key, jobId)).toMatchObject({ status: "failed" }), {
      timeout: 10_000,
      interval: 50,
    });
    const m = await message(t.key, jobId);
    expect(m).toMatchObject({
      sentAt: expect.any(String),
      error: { code: "recipient_unreachable", upstreamCode: "131026" },
    });
    expect((m.error as { message: string }).message).toContain("Message Undeliverable.");
    // The report's one event, as the queue carried it: failed, after sent, with the error.
    expect(statusEventsOf(queued(), jobId)).toEqual([
      expect.objectContaining({
        data: expect.objectContaining({
          previousStatus: "sent",
          status: "failed",
          error: expect.objectContaining({ code: "recipient_unreachable", upstreamCode: "131026" }),
        }),
      }),
    ]);
  });
});

describe("webhook intake at the operator's sizes", () => {
  it("a 1,000-status payload above 1 MiB is accepted and split; each status applies; a malformed sibling drops nothing", async () => {
    const t = await liveNumberTenant();
    operator(t, (c, i) => metaAccepted(`wamid.REAL.${i}`, c.body.to));
    const jobs: string[] = [];
    for (const to of ["5511900000001", "5511900000002", "5511900000003"]) {
      jobs.push(await sendOne(t.key, t.numberId, to));
      clock.advance(500);
    }
    await drainFor(t.numberId, 3);
    vi.restoreAllMocks();
    const ts = seconds(clock.now() + 2_000);
    const filler = (i: number) => ({
      id: `wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJDQjZCMzlEQUE4OTJBMTE4RTUA${i}`,
      status: "failed",
      timestamp: ts,
      recipient_id: "16505551234",
      biz_opaque_callback_data: crypto.randomUUID(),
      errors: [
        {
          code: 131026,
          title: "Message undeliverable.",
          message: "Message undeliverable.",
          error_data: { details: "Message Undeliverable: ".padEnd(700, ".") },
          href: "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/",
        },
      ],
    });
    const statuses: Record<string, unknown>[] = Array.from({ length: 996 }, (_, i) => filler(i));
    statuses.splice(300, 0, { id: "", status: 42 }); // malformed
    statuses.push(
      {
        id: "wamid.REAL.0",
        status: "delivered",
        timestamp: ts,
        recipient_id: "5511900000001",
        biz_opaque_callback_data: jobs[0],
        conversation: { id: "c1", origin: { type: "service" } },
        pricing: { billable: false, pricing_model: "PMP", category: "service" },
      },
      {
        id: "wamid.REAL.1",
        status: "read",
        timestamp: ts,
        recipient_id: "5511900000002",
        biz_opaque_callback_data: jobs[1],
      },
      {
        id: "wamid.REAL.2",
        status: "failed",
        timestamp: ts,
        recipient_id: "5511900000003",
        biz_opaque_callback_data: jobs[2],
        errors: [{ code: 131047, title: "Re-engagement message" }],
      },
    );
    expect(statuses).toHaveLength(1_000);
    const raw = JSON.stringify(statusPayload(t.phoneNumberId, statuses));
    expect(raw.length).toBeGreaterThan(1024 * 1024);
    expect(raw.length).toBeLessThan(3 * 1024 * 1024);
    expect((await postOperator(null, { raw })).status).toBe(200);
    await vi.waitFor(
      async () => {
        expect(await message(t.key, jobs[0]!)).toMatchObject({ deliveredAt: expect.any(String) });
        expect(await message(t.key, jobs[1]!)).toMatchObject({ readAt: expect.any(String) });
        expect(await message(t.key, jobs[2]!)).toMatchObject({
          status: "failed",
          error: { code: "service_window_closed" },
        });
      },
      { timeout: 30_000, interval: 200 },
    );
  });

  it("an inbound message without `from` (the user withholds their number) is accepted under the operator's user id (fromUserId; from is null)", async () => {
    const t = await liveNumberTenant();
    const queued = queuedEvents();
    const payload = inboundPayload(
      t.phoneNumberId,
      [
        {
          from: undefined,
          id: "wamid.NOFROM.bad",
          timestamp: seconds(clock.now()),
          type: "text",
          text: { body: "no sender at all" },
        },
        {
          from_user_id: "BR.1349120865530274191",
          id: "wamid.NOFROM",
          timestamp: seconds(clock.now()),
          type: "text",
          text: { body: "sem número" },
        },
      ],
      [{ profile: { name: "Ana" }, user_id: "BR.1349120865530274191" }],
    );
    expect((await postOperator(payload)).status).toBe(200);
    await vi.waitFor(() => expect(receivedEvents(queued)).toHaveLength(1), {
      timeout: 10_000,
      interval: 50,
    });
    expect(receivedEvents(queued)[0]).toMatchObject({
      data: {
        from: null,
        fromUserId: "BR.1349120865530274191",
        profileName: "Ana",
        text: { body: "sem número" },
        upstreamMessageId: "wamid.NOFROM",
      },
    });
  });
});

describe("operator items that keep failing", () => {
  it("land in the dead-letter queue, whose consumer logs their ids only (no text, no phone number) and acknowledges them", async () => {
    const item = {
      kind: "message",
      phoneNumberId: "106540352242922",
      message: {
        from: "5511912345678",
        id: "wamid.DEAD",
        timestamp: "1700000000",
        type: "text",
        text: { body: "secret words" },
      },
    };
    const lines: string[] = [];
    vi.spyOn(console, "error").mockImplementation((line: unknown) => void lines.push(String(line)));
    const batch = createMessageBatch("upstream-events-dlq", [
      { id: "d1", timestamp: new Date(), attempts: 1, body: item },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env, ctx);
    expect((await getQueueResult(batch, ctx)).ackAll).toBe(true);
    const line = lines.find((l) => l.includes("operator item dead-lettered"));
    expect(line).toContain("wamid.DEAD");
    expect(line).toContain("106540352242922");
    expect(line).not.toContain("secret words");
    expect(line).not.toContain("5511912345678");
  });
});

describe("signatures over the exact bytes", () => {
  it("accented text and emoji, raw UTF-8 or escaped as the operator sends them, verify over their own bytes and arrive intact", async () => {
    const t = await liveNumberTenant();
    const text = "Olá, café às 9h? ☕🎉 ñandú";
    const queued = queuedEvents();
    const utf8 = JSON.stringify(
      inboundPayload(t.phoneNumberId, [
        {
          from: "5511912340001",
          id: "wamid.UTF8",
          timestamp: seconds(clock.now()),
          type: "text",
          text: { body: text },
        },
      ]),
    );
    // The operator escapes non-ASCII characters (emoji as surrogate pairs): other bytes, other signature.
    const escaped = JSON.stringify(
      inboundPayload(t.phoneNumberId, [
        { from: "5511912340001", id: "wamid.ESC", timestamp: seconds(clock.now()), type: "text", text: { body: text } },
      ]),
    ).replace(/[\u0080-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
    expect(escaped).toContain("\\u00e1");
    expect(escaped).toContain("\\ud83c\\udf89");
    const utf8Bytes = new TextEncoder().encode(utf8);
    expect(utf8Bytes.length).toBeGreaterThan(utf8.length);

    await expectError(
      await postOperator(null, { raw: escaped, signature: await operatorSignature(utf8Bytes) }),
      401,
      "unauthorized",
    );
    expect((await postOperator(null, { raw: utf8, signature: await operatorSignature(utf8Bytes) })).status).toBe(200);
    expect((await postOperator(null, { raw: escaped })).status).toBe(200);
    await vi.waitFor(() => expect(receivedEvents(queued)).toHaveLength(2), {
      timeout: 10_000,
      interval: 50,
    });
    const bodies = receivedEvents(queued)
      .map((e) => [e.data.upstreamMessageId, e.data.text?.body])
      .sort();
    expect(bodies).toEqual([
      ["wamid.ESC", text],
      ["wamid.UTF8", text],
    ]);
  });
});
