import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeClockPerTest } from "../helpers/clock";
import { api, call, expectError, json } from "../helpers/http";
import { createTenant, TEST_CONTACT, TEST_CONTACT_2 } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { queuedEvents } from "../helpers/events";
import { channelNumberStub } from "../../src/durable-objects/stubs";
import { accepted, liveNumberTenant, mockOperator } from "../helpers/operator";
import { sendV2 } from "../helpers/operator-templates";
import { inboundPayload, postOperator, seconds } from "../helpers/operator-webhook";
import type { WebhookEvent } from "../../src/messages/events";

// A user's answers to buttons and lists (API v2): simulated on a sandbox number through
// `POST /api/v2/sandbox/inbound`, recorded and announced as the operator's own would be. Through
// the Worker's fetch handler; the sandbox makes no network call.

const clock = fakeClockPerTest(Date.UTC(2045, 5, 1), (t) => t + 24 * 3_600_000);
afterEach(() => {
  vi.restoreAllMocks();
});

function v2(path: string, key: string, body?: unknown): Promise<Response> {
  return call(`/api/v2${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

const received = (queued: () => WebhookEvent[]) => queued().flatMap((e) => (e.type === "message.received" ? [e] : []));

/** A message (a text unless `body` is given) sent from the tenant's sandbox number to `to`, called at the (sandbox) operator: its jobId. */
async function sentTo(
  t: { key: string; numberId: string },
  to: string,
  body?: Record<string, unknown>,
): Promise<string> {
  const res = body
    ? await sendV2(t.key, { channelNumberId: t.numberId, to, ...body })
    : await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Confirm your visit?", to));
  // The conversation's pace lets the next message of it go at once.
  clock.advance(60_000);
  expect(res.status).toBe(201);
  const { jobId } = await json<{ jobId: string }>(res);
  await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
  await vi.waitFor(
    async () => expect(await json(await api(`/messages/${jobId}`, t.key))).toMatchObject({ status: "sent" }),
    { timeout: 5_000, interval: 50 },
  );
  return jobId;
}

describe("simulated answers on a sandbox number (POST /api/v2/sandbox/inbound)", () => {
  it("a reply button chosen in answer to a message: recorded and announced as the operator's interactive reply, naming the message", async () => {
    const t = await createTenant();
    const jobId = await sentTo(t, TEST_CONTACT);
    const queued = queuedEvents();
    const res = await v2("/sandbox/inbound", t.key, {
      channelNumberId: t.numberId,
      from: TEST_CONTACT,
      answer: { type: "button_reply", id: "confirm", title: "Confirm" },
      replyTo: jobId,
    });
    expect(res.status).toBe(202);
    const { messageId } = await json<{ messageId: string }>(res);
    const [event] = received(queued);
    const answer = { type: "button_reply", id: "confirm", title: "Confirm", description: null, flow: null };
    // The v2 message carries the typed answer; v1's is as it always was.
    expect(await json(await v2(`/messages/${messageId}`, t.key))).toMatchObject({
      id: messageId,
      type: "interactive",
      answer,
      replyTo: { messageId: jobId },
      readAt: null,
      typingIndicator: false,
    });
    expect(await json(await api(`/messages/${messageId}`, t.key))).not.toHaveProperty("answer");
    expect(event?.data).toMatchObject({
      messageId,
      from: TEST_CONTACT,
      type: "interactive",
      text: null,
      content: { type: "button_reply", button_reply: { id: "confirm", title: "Confirm" } },
      replyTo: { messageId: jobId, upstreamMessageId: `sandbox.${jobId}` },
    });
  });

  it("a list row, with its description, and a template's quick-reply button; no replyTo is none", async () => {
    const t = await createTenant();
    const queued = queuedEvents();
    for (const answer of [
      { type: "list_reply", id: "slot-9", title: "9:00", description: "Friday morning" },
      { type: "button", id: "STOP_PROMOS", title: "Stop promotions" },
    ])
      expect(
        (await v2("/sandbox/inbound", t.key, { channelNumberId: t.numberId, from: TEST_CONTACT, answer })).status,
      ).toBe(202);
    expect(received(queued).map((e) => e.data)).toMatchObject([
      {
        type: "interactive",
        content: { type: "list_reply", list_reply: { id: "slot-9", title: "9:00", description: "Friday morning" } },
        replyTo: null,
      },
      { type: "button", content: { payload: "STOP_PROMOS", text: "Stop promotions" }, replyTo: null },
    ]);
  });

  it("refuses what the operator would not carry, naming the rule, and records nothing", async () => {
    const t = await createTenant();
    const jobId = await sentTo(t, TEST_CONTACT_2);
    const queued = queuedEvents();
    const refused = async (body: Record<string, unknown>, path: string, rule: string) => {
      const e = await expectError(
        await v2("/sandbox/inbound", t.key, { channelNumberId: t.numberId, from: TEST_CONTACT, ...body }),
        400,
        "invalid_request",
      );
      expect(e.error.details, JSON.stringify(body)).toEqual([expect.objectContaining({ path, rule })]);
    };
    // The operator's limits: a reply button's title 20 characters, a list row's 24.
    await refused({ answer: { type: "button_reply", id: "a", title: "x".repeat(21) } }, "answer.title", "max");
    await refused({ answer: { type: "list_reply", id: "a", title: "x".repeat(25) } }, "answer.title", "max");
    await refused({ answer: { type: "list_reply", id: "x".repeat(201), title: "A" } }, "answer.id", "max");
    await refused({ answer: { type: "poll_reply", id: "a", title: "A" } }, "answer.type", "invalid_union");
    await refused(
      { text: { body: "hi" }, answer: { type: "button_reply", id: "a", title: "A" } },
      "answer",
      "exactly_one",
    );
    await refused({ text: { body: "hi" }, replyTo: jobId }, "replyTo", "with_answer");
    // A message sent to someone else, or unknown, cannot be answered by this user.
    const answer = { type: "button_reply", id: "a", title: "A" };
    await refused({ answer, replyTo: jobId }, "replyTo", "not_sent_to_sender");
    await refused({ answer, replyTo: crypto.randomUUID() }, "replyTo", "unknown_message");
    // Nothing was recorded: the next message's event is the first.
    expect(
      (await v2("/sandbox/inbound", t.key, { channelNumberId: t.numberId, from: TEST_CONTACT, text: { body: "ok" } }))
        .status,
    ).toBe(202);
    expect(received(queued).map((e) => e.data.type)).toEqual(["text"]);
  });

  it("an answer to your interactive message is one of its own buttons or rows, as on a phone", async () => {
    const t = await createTenant();
    const buttons = await sentTo(t, TEST_CONTACT, {
      type: "interactive",
      interactive: {
        type: "button",
        body: "Your table for 4 is booked for Friday at 8 pm.",
        buttons: [
          { id: "confirm", title: "Confirm" },
          { id: "reschedule", title: "Reschedule" },
        ],
      },
    });
    const list = await sentTo(t, TEST_CONTACT, {
      type: "interactive",
      interactive: {
        type: "list",
        body: "How should we ship it?",
        button: "Choose",
        sections: [{ rows: [{ id: "express", title: "Express", description: "Next day" }] }],
      },
    });
    const simulate = (replyTo: string, answer: Record<string, unknown>) =>
      v2("/sandbox/inbound", t.key, { channelNumberId: t.numberId, from: TEST_CONTACT, answer, replyTo });
    for (const [replyTo, answer] of [
      [buttons, { type: "button_reply", id: "cancel", title: "Cancel" }],
      [buttons, { type: "button_reply", id: "confirm", title: "Reschedule" }],
      [buttons, { type: "list_reply", id: "confirm", title: "Confirm" }],
      [list, { type: "list_reply", id: "standard", title: "Standard" }],
    ] as const) {
      const e = await expectError(await simulate(replyTo, answer), 400, "invalid_request");
      expect(e.error.details, JSON.stringify(answer)).toEqual([
        expect.objectContaining({ path: "answer", rule: "no_such_choice" }),
      ]);
    }
    const queued = queuedEvents();
    expect((await simulate(buttons, { type: "button_reply", id: "reschedule", title: "Reschedule" })).status).toBe(202);
    expect((await simulate(list, { type: "list_reply", id: "express", title: "Express" })).status).toBe(202);
    expect(received(queued).map((e) => e.data.replyTo?.messageId)).toEqual([buttons, list]);
  });

  it("v1's route is unchanged: text only, an answer is an unknown field", async () => {
    const t = await createTenant();
    const e = await expectError(
      await api("/sandbox/inbound", t.key, {
        method: "POST",
        json: {
          channelNumberId: t.numberId,
          from: TEST_CONTACT,
          answer: { type: "button_reply", id: "a", title: "A" },
        },
      }),
      400,
      "invalid_request",
    );
    expect(e.error.details?.map((d) => d.path)).toContain("answer");
    clock.advance(1);
  });
});

describe("answers through the operator's webhook (a live number)", () => {
  it("reply buttons, list rows, a template's quick reply and a Flow's reply each name the message they answer", async () => {
    const t = await liveNumberTenant();
    mockOperator(() => accepted("wamid.OUT.ASK"));
    const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Confirm your visit?", "5511912345678"));
    const { jobId } = await json<{ jobId: string }>(res);
    await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
    vi.restoreAllMocks();
    clock.advance(2_000);
    const context = { from: "15557770000", id: "wamid.OUT.ASK" };
    const answers = [
      { type: "interactive", interactive: { type: "button_reply", button_reply: { id: "confirm", title: "Confirm" } } },
      {
        type: "interactive",
        interactive: { type: "list_reply", list_reply: { id: "slot-9", title: "9:00", description: "Friday" } },
      },
      { type: "button", button: { payload: "STOP_PROMOS", text: "Stop promotions" } },
      {
        type: "interactive",
        interactive: {
          type: "nfm_reply",
          nfm_reply: { name: "flow", body: "Sent", response_json: '{"flow_token": "booking-1042"}' },
        },
      },
    ];
    const queued = queuedEvents();
    for (const [i, m] of answers.entries())
      expect(
        (
          await postOperator(
            inboundPayload(t.phoneNumberId, [
              {
                from: "5511912345678",
                id: `wamid.IN.ANS${i}`,
                timestamp: seconds(clock.now() + i * 1_000),
                context,
                ...m,
              },
            ]),
          )
        ).status,
      ).toBe(200);
    await vi.waitFor(() => expect(received(queued)).toHaveLength(answers.length), { timeout: 10_000, interval: 50 });
    const events = received(queued).sort((a, b) => (a.data.upstreamMessageId! < b.data.upstreamMessageId! ? -1 : 1));
    const replyTo = { messageId: jobId, upstreamMessageId: "wamid.OUT.ASK" };
    // In v2, each as typed fields, beside the operator's payload.
    const views = await Promise.all(
      events.map(async (e) => json<{ answer: unknown }>(await v2(`/messages/${e.data.messageId}`, t.key))),
    );
    expect(views.map((v) => v.answer)).toEqual([
      { type: "button_reply", id: "confirm", title: "Confirm", description: null, flow: null },
      { type: "list_reply", id: "slot-9", title: "9:00", description: "Friday", flow: null },
      { type: "button", id: "STOP_PROMOS", title: "Stop promotions", description: null, flow: null },
      {
        type: "nfm_reply",
        id: null,
        title: null,
        description: null,
        flow: { name: "flow", body: "Sent", response: { flow_token: "booking-1042" } },
      },
    ]);
    expect(events.map((e) => ({ type: e.data.type, content: e.data.content, replyTo: e.data.replyTo }))).toEqual([
      { type: "interactive", content: answers[0]!.interactive, replyTo },
      { type: "interactive", content: answers[1]!.interactive, replyTo },
      { type: "button", content: answers[2]!.button, replyTo },
      { type: "interactive", content: answers[3]!.interactive, replyTo },
    ]);
  });
});
