import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { answerAtEdge } from "../helpers/edge";
import { fakeClockPerTest } from "../helpers/clock";
import { api, json } from "../helpers/http";
import { send, textMessage } from "../helpers/send";
import { liveNumberTenant, type OperatorCall } from "../helpers/operator";
import { queuedEvents, statusEventsOf } from "../helpers/events";
import { postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { eventIdOf } from "../../src/messages/events";
import { crashObject } from "../helpers/objects";
import { PACE_WINDOW_MS } from "../../src/durable-objects/channel-number/delivery-policy";

// Reports that arrive in an unusual order or without our jobId (issue 21, item 5): a user on
// several devices reported failed and delivered; a timed-out send whose only report is a failure
// without `biz_opaque_callback_data`.

const clock = fakeClockPerTest(Date.UTC(2044, 0, 1), (t) => t + 24 * 3_600_000);
afterEach(() => {
  vi.restoreAllMocks();
});

type Tenant = Awaited<ReturnType<typeof liveNumberTenant>>;

/** The operator at the fetch edge: each send answered by `reply` (a thrown timeout: the answer is lost). */
function operator(reply: (call: OperatorCall, index: number) => Response): OperatorCall[] {
  const calls: OperatorCall[] = [];
  answerAtEdge(async (input, init) => {
    const req = new Request(input as RequestInfo, init);
    if (req.method !== "POST" || !req.url.startsWith(`${env.UPSTREAM_CLOUD_API_BASE_URL}/`))
      throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
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

/** Meta's send answer; `wa_id` is the operator's id for the recipient (it may differ from what we sent). */
const accepted = (id: string, waId?: string) =>
  Response.json({
    messaging_product: "whatsapp",
    ...(waId ? { contacts: [{ input: "x", wa_id: waId }] } : {}),
    messages: [{ id }],
  });
const timeout = (): Response => {
  throw new DOMException("The operation was aborted due to timeout", "TimeoutError");
};

const drain = async (numberId: string) => {
  await runDurableObjectAlarm(channelNumberStub(env, numberId));
  clock.advance(PACE_WINDOW_MS);
};

async function sendOne(t: Tenant, to: string): Promise<string> {
  const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Hello", to));
  expect(res.status).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

const message = async (t: Tenant, jobId: string) =>
  json<Record<string, unknown> & { status: string }>(await api(`/messages/${jobId}`, t.key));

const report = (t: Tenant, status: Record<string, unknown>) => postOperator(statusPayload(t.phoneNumberId, [status]));
const undeliverable = [{ code: 131026, title: "Message undeliverable.", error_data: { details: "Undeliverable." } }];

describe("a user on several devices: failed and delivered both reported", () => {
  it("failed first: the message stays failed with its error, records the delivery and announces it (status failed)", async () => {
    const t = await liveNumberTenant();
    operator((_, i) => accepted(`wamid.${i}`));
    const jobId = await sendOne(t, "5511900000001");
    await drain(t.numberId);
    const queued = queuedEvents();
    const failedAt = clock.now();
    await report(t, {
      id: "wamid.0",
      status: "failed",
      timestamp: seconds(failedAt),
      recipient_id: "5511900000001",
      biz_opaque_callback_data: jobId,
      errors: undeliverable,
    });
    // Another of the user's devices received it; the operator says so afterwards (and says read later).
    await report(t, {
      id: "wamid.0",
      status: "delivered",
      timestamp: seconds(failedAt + 2_000),
      recipient_id: "5511900000001",
      biz_opaque_callback_data: jobId,
    });
    await report(t, {
      id: "wamid.0",
      status: "read",
      timestamp: seconds(failedAt + 4_000),
      recipient_id: "5511900000001",
      biz_opaque_callback_data: jobId,
    });
    const m = await message(t, jobId);
    expect(m).toMatchObject({
      status: "failed",
      error: { code: "recipient_unreachable", upstreamCode: "131026" },
      failedAt: new Date(Math.floor(failedAt / 1000) * 1000).toISOString(),
      deliveredAt: new Date(Math.floor((failedAt + 2_000) / 1000) * 1000).toISOString(),
      readAt: new Date(Math.floor((failedAt + 4_000) / 1000) * 1000).toISOString(),
    });
    const events = statusEventsOf(queued(), jobId).map((e) => e.data);
    expect(events).toEqual([
      expect.objectContaining({ status: "failed", previousStatus: "sent", deliveredAt: null }),
      expect.objectContaining({
        status: "failed",
        previousStatus: "failed",
        deliveredAt: m.deliveredAt,
        readAt: null,
        error: expect.objectContaining({ code: "recipient_unreachable" }),
      }),
      expect.objectContaining({ status: "failed", previousStatus: "failed", readAt: m.readAt }),
    ]);
    // The timeline says the same, in the order the operator reported it.
    const { timeline } = await json<{ timeline: { status: string }[] }>(await api(`/messages/${jobId}/events`, t.key));
    expect(timeline.map((e) => e.status)).toEqual(["queued", "processing", "sent", "failed", "delivered", "read"]);
  });

  it("delivered first: the message stays sent, and the later failure is ignored", async () => {
    const t = await liveNumberTenant();
    operator((_, i) => accepted(`wamid.${i}`));
    const jobId = await sendOne(t, "5511900000001");
    await drain(t.numberId);
    const queued = queuedEvents();
    await report(t, {
      id: "wamid.0",
      status: "delivered",
      timestamp: seconds(clock.now()),
      biz_opaque_callback_data: jobId,
    });
    await report(t, {
      id: "wamid.0",
      status: "failed",
      timestamp: seconds(clock.now() + 2_000),
      biz_opaque_callback_data: jobId,
      errors: undeliverable,
    });
    expect(await message(t, jobId)).toMatchObject({ status: "sent", error: null, deliveredAt: expect.any(String) });
    expect(statusEventsOf(queued(), jobId).map((e) => e.data)).toEqual([
      expect.objectContaining({ status: "sent", previousStatus: "sent", deliveredAt: expect.any(String) }),
    ]);
  });
});

describe("a timed-out send whose only report is a failure without our jobId", () => {
  it("is matched by its number, recipient and time: it fails with the operator's error and learns the operator's id", async () => {
    const t = await liveNumberTenant();
    const calls = operator(timeout);
    const jobId = await sendOne(t, "5511900000001");
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    expect(await message(t, jobId)).toMatchObject({ status: "processing", outcomeUnknownSince: expect.any(String) });
    const res = await report(t, {
      id: "wamid.LOST",
      status: "failed",
      timestamp: seconds(clock.now()),
      recipient_id: "5511900000001",
      errors: [{ code: 131047, title: "Re-engagement message" }],
    });
    expect(res.status).toBe(200);
    expect(await message(t, jobId)).toMatchObject({
      status: "failed",
      upstreamMessageId: "wamid.LOST",
      outcomeUnknownSince: null,
      error: { code: "service_window_closed", upstreamCode: "131047" },
    });
    // The operator's retry of the same report finds the message settled: nothing changes.
    await report(t, {
      id: "wamid.LOST",
      status: "failed",
      timestamp: seconds(clock.now()),
      recipient_id: "5511900000001",
      errors: [{ code: 131047, title: "Re-engagement message" }],
    });
    expect(await message(t, jobId)).toMatchObject({ status: "failed", upstreamMessageId: "wamid.LOST" });
  });

  it("the operator's own id for the recipient (learnt from an earlier answer) matches too", async () => {
    const t = await liveNumberTenant();
    // A Brazilian mobile: sent with the ninth digit, known to the operator without it.
    let lost = false;
    operator((_, i) => (lost ? timeout() : accepted(`wamid.${i}`, "551199998888")));
    const first = await sendOne(t, "5511999998888");
    await drain(t.numberId);
    expect(await message(t, first)).toMatchObject({ status: "sent" });
    lost = true;
    const jobId = await sendOne(t, "5511999998888");
    clock.advance(10_000);
    await drain(t.numberId);
    expect(await message(t, jobId)).toMatchObject({ status: "processing", outcomeUnknownSince: expect.any(String) });
    await report(t, {
      id: "wamid.LOST",
      status: "failed",
      timestamp: seconds(clock.now()),
      recipient_id: "551199998888",
      errors: undeliverable,
    });
    expect(await message(t, jobId)).toMatchObject({ status: "failed", error: { code: "recipient_unreachable" } });
    expect(await message(t, first)).toMatchObject({ status: "sent", error: null });
  });

  it("is not matched when nothing tells which message it is about: two unknown outcomes to that recipient, another recipient, or a report older than the call", async () => {
    const t = await liveNumberTenant();
    operator(timeout);
    const callAt = clock.now();
    const a = await sendOne(t, "5511900000001");
    const b = await sendOne(t, "5511900000002");
    await drain(t.numberId);
    await drain(t.numberId);
    const failure = (recipient: string, at: number) =>
      report(t, {
        id: `wamid.${recipient}.${at}`,
        status: "failed",
        timestamp: seconds(at),
        recipient_id: recipient,
        errors: undeliverable,
      });
    // Another recipient, and a report from long before the call: neither is about these messages.
    await failure("5511900000003", clock.now());
    await failure("5511900000001", callAt - 60 * 60_000);
    for (const jobId of [a, b]) expect(await message(t, jobId)).toMatchObject({ status: "processing" });
    // Two messages to that recipient wait on an unknown outcome: the report could be about either.
    await sendOne(t, "5511900000002");
    clock.advance(10_000);
    await drain(t.numberId);
    await failure("5511900000002", clock.now());
    expect(await message(t, b)).toMatchObject({ status: "processing", outcomeUnknownSince: expect.any(String) });
    // A delivery without our jobId is never matched (it may be about a message sent from the business's own app).
    await report(t, {
      id: "wamid.APP",
      status: "delivered",
      timestamp: seconds(clock.now()),
      recipient_id: "5511900000001",
    });
    expect(await message(t, a)).toMatchObject({ status: "processing", deliveredAt: null });
    // The one message to the first recipient, reported now: matched.
    await failure("5511900000001", clock.now());
    expect(await message(t, a)).toMatchObject({ status: "failed", error: { code: "recipient_unreachable" } });
  });
});

describe("a report without our jobId is routed by the operator's id of the message", () => {
  /** A message sent and answered (`wamid.0`, the operator's id for it), with the events queued from then on. */
  async function sentMessage(t: Tenant, to = "5511900000001", waId?: string) {
    operator((_, i) => accepted(`wamid.${i}`, waId));
    const jobId = await sendOne(t, to);
    await drain(t.numberId);
    expect(await message(t, jobId)).toMatchObject({ status: "sent", upstreamMessageId: "wamid.0" });
    return { jobId, queued: queuedEvents() };
  }

  it("a late failure of a sent message: it fails with the operator's error, announced after sent", async () => {
    const t = await liveNumberTenant();
    const { jobId, queued } = await sentMessage(t);
    // Days later: the operator holds a message for an offline user for up to 30 days.
    clock.advance(20 * 24 * 3_600_000);
    const res = await report(t, {
      id: "wamid.0",
      status: "failed",
      timestamp: seconds(clock.now()),
      recipient_id: "5511900000001",
      errors: undeliverable,
    });
    expect(res.status).toBe(200);
    expect(await message(t, jobId)).toMatchObject({
      status: "failed",
      failedAt: new Date(Math.floor(clock.now() / 1000) * 1000).toISOString(),
      error: { code: "recipient_unreachable", upstreamCode: "131026" },
    });
    expect(statusEventsOf(queued(), jobId).map((e) => e.data)).toEqual([
      expect.objectContaining({
        status: "failed",
        previousStatus: "sent",
        error: expect.objectContaining({ code: "recipient_unreachable" }),
      }),
    ]);
  });

  it("a delivery, then a read: each recorded and announced", async () => {
    const t = await liveNumberTenant();
    const { jobId, queued } = await sentMessage(t);
    const deliveredAt = clock.now();
    await report(t, {
      id: "wamid.0",
      status: "delivered",
      timestamp: seconds(deliveredAt),
      recipient_id: "5511900000001",
    });
    expect(await message(t, jobId)).toMatchObject({ status: "sent", deliveredAt: expect.any(String), readAt: null });
    await report(t, {
      id: "wamid.0",
      status: "read",
      timestamp: seconds(deliveredAt + 5_000),
      recipient_id: "5511900000001",
    });
    expect(await message(t, jobId)).toMatchObject({
      status: "sent",
      deliveredAt: new Date(Math.floor(deliveredAt / 1000) * 1000).toISOString(),
      readAt: new Date(Math.floor((deliveredAt + 5_000) / 1000) * 1000).toISOString(),
    });
    expect(statusEventsOf(queued(), jobId).map((e) => e.id)).toEqual([
      eventIdOf(jobId, "delivered"),
      eventIdOf(jobId, "read"),
    ]);
  });

  it("after the workspace restarted, reports without our jobId are still routed: a retried sent changes nothing, the delivery that follows is announced", async () => {
    const t = await liveNumberTenant();
    const { jobId, queued } = await sentMessage(t);
    await crashObject(workspaceStub(env, t.workspaceId), "restart");
    // The sent event left before the restart (its obligation was stored with the change): the retry changes nothing.
    await report(t, { id: "wamid.0", status: "sent", timestamp: seconds(clock.now()), recipient_id: "5511900000001" });
    expect(await message(t, jobId)).toMatchObject({ status: "sent", deliveredAt: null, error: null });
    await report(t, {
      id: "wamid.0",
      status: "delivered",
      timestamp: seconds(clock.now()),
      recipient_id: "5511900000001",
    });
    expect(statusEventsOf(queued(), jobId)).toContainEqual(
      expect.objectContaining({ id: eventIdOf(jobId, "delivered"), data: expect.objectContaining({ status: "sent" }) }),
    );
    expect(await message(t, jobId)).toMatchObject({ status: "sent", deliveredAt: expect.any(String), error: null });
  });

  it("through the operator's own id for the recipient (learnt from the send's answer)", async () => {
    const t = await liveNumberTenant();
    // A Brazilian mobile: sent with the ninth digit, known to the operator without it.
    const { jobId } = await sentMessage(t, "5511999998888", "551199998888");
    await report(t, {
      id: "wamid.0",
      status: "failed",
      timestamp: seconds(clock.now()),
      recipient_id: "551199998888",
      errors: undeliverable,
    });
    expect(await message(t, jobId)).toMatchObject({ status: "failed", error: { code: "recipient_unreachable" } });
  });

  it("a report naming a message that is none of ours, or another recipient, changes nothing", async () => {
    const t = await liveNumberTenant();
    const { jobId, queued } = await sentMessage(t);
    // A message sent from the business's own app on the same number, to the same user.
    await report(t, {
      id: "wamid.APP",
      status: "failed",
      timestamp: seconds(clock.now()),
      recipient_id: "5511900000001",
      errors: undeliverable,
    });
    // Our message's id, reported for another user: not the conversation the record is in.
    await report(t, {
      id: "wamid.0",
      status: "delivered",
      timestamp: seconds(clock.now()),
      recipient_id: "5511900000002",
    });
    // The positive signal: the message's own delivery, reported afterwards, is its first event.
    await report(t, {
      id: "wamid.0",
      status: "delivered",
      timestamp: seconds(clock.now()),
      recipient_id: "5511900000001",
    });
    expect(statusEventsOf(queued(), jobId).map((e) => e.id)).toEqual([eventIdOf(jobId, "delivered")]);
    expect(await message(t, jobId)).toMatchObject({ status: "sent", error: null, deliveredAt: expect.any(String) });
  });
});
