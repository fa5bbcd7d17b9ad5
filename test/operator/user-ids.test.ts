import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeClockPerTest } from "../helpers/clock";
import { api, expectError, json } from "../helpers/http";
import { send } from "../helpers/send";
import { liveNumberTenant, mockOperator, operatorError, type OperatorCall } from "../helpers/operator";
import { queuedEvents, statusEventsOf } from "../helpers/events";
import { inboundPayload, postOperator, seconds } from "../helpers/operator-webhook";
import { channelNumberStub } from "../../src/durable-objects/stubs";
import type { WebhookEvent } from "../../src/messages/events";
import { InboundMessage, OutboundMessage } from "../../src/messages/message";

// Users who withhold their phone number behind a username (2026): the operator names them by a
// business-scoped user id (BSUID). Inbound through the real webhook endpoint with signed payloads,
// sends through the real POST /messages, the operator's API faked at the fetch edge.

const clock = fakeClockPerTest(Date.UTC(2043, 0, 1), (t) => t + 24 * 3_600_000);
afterEach(() => {
  vi.restoreAllMocks();
});

type Tenant = Awaited<ReturnType<typeof liveNumberTenant>>;

const HOUR = 3_600_000;
const drain = (numberId: string) => runDurableObjectAlarm(channelNumberStub(env, numberId));
const received = (queued: () => WebhookEvent[]) => queued().flatMap((e) => (e.type === "message.received" ? [e] : []));
const until = (check: () => void | Promise<void>) => vi.waitFor(check, { timeout: 10_000, interval: 50 });
const windowOf = async (t: Tenant, contact: string) =>
  json<{ windowOpen: boolean }>(await api(`/channel-numbers/${t.numberId}/contacts/${contact}`, t.key));

/** The operator's answer to a send: `contacts[]` names the recipient as it was addressed (`user_id` for a user id). */
const acceptedFor = (call: OperatorCall, id: string) =>
  Response.json({
    messaging_product: "whatsapp",
    contacts: [
      call.body.recipient ? { input: call.body.recipient, user_id: call.body.recipient } : { input: call.body.to },
    ],
    messages: [{ id }],
  });

async function sendTo(t: Tenant, recipient: { to: string } | { toUserId: string }, key = crypto.randomUUID()) {
  const res = await send(t.key, key, { channelNumberId: t.numberId, ...recipient, text: { body: "Hello" } });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

const text = (id: string, sender: Record<string, unknown>, body = "Oi") => ({
  id,
  timestamp: seconds(clock.now()),
  type: "text",
  text: { body },
  ...sender,
});

describe("senders known by a user id", () => {
  it("each is its own sender (from: null, fromUserId, profile), with a window of their own, whether `from` is empty or absent", async () => {
    const t = await liveNumberTenant();
    const queued = queuedEvents();
    // The operator's documents and mirrors disagree: an empty `from`, or none and the id only in contacts[].
    const ana = inboundPayload(
      t.phoneNumberId,
      [text("wamid.ANA", { from: "", from_user_id: "US.1111" })],
      [{ wa_id: "", user_id: "US.1111", profile: { name: "Ana", username: "ana.s" } }],
    );
    expect((await postOperator(ana)).status).toBe(200);
    await until(async () => expect(await windowOf(t, "US.1111")).toMatchObject({ windowOpen: true }));

    clock.advance(20 * HOUR);
    const bea = inboundPayload(
      t.phoneNumberId,
      [text("wamid.BEA", {})],
      [{ user_id: "BR.2222", profile: { name: "Bea" } }],
    );
    expect((await postOperator(bea)).status).toBe(200);
    await until(async () => expect(await windowOf(t, "BR.2222")).toMatchObject({ windowOpen: true }));

    const events = received(queued);
    expect(events.map((e) => e.data)).toMatchObject([
      { from: null, fromUserId: "US.1111", profileName: "Ana", username: "ana.s", upstreamMessageId: "wamid.ANA" },
      { from: null, fromUserId: "BR.2222", profileName: "Bea", username: null, upstreamMessageId: "wamid.BEA" },
    ]);
    // The record reads the same, in the published schema.
    for (const e of events) {
      const view = await json(await api(`/messages/${e.data.messageId}`, t.key));
      expect(InboundMessage.safeParse(view).success).toBe(true);
      expect(view).toMatchObject({
        from: null,
        fromUserId: e.data.fromUserId,
        profileName: e.data.profileName,
      });
    }
    // Two users, two windows: Ana's closes 24 hours after her message, Bea's stays open.
    clock.advance(5 * HOUR);
    expect(await windowOf(t, "US.1111")).toMatchObject({ windowOpen: false });
    expect(await windowOf(t, "BR.2222")).toMatchObject({ windowOpen: true });
  });

  it("a sender with a phone number and a user id: from is the number, fromUserId the id, and the id finds the number's window", async () => {
    const t = await liveNumberTenant();
    const queued = queuedEvents();
    const payload = inboundPayload(
      t.phoneNumberId,
      [text("wamid.BOTH", { from: "5511933334444", from_user_id: "BR.3333" })],
      [{ wa_id: "5511933334444", user_id: "BR.3333", profile: { name: "Caio" } }],
    );
    expect((await postOperator(payload)).status).toBe(200);
    await until(() => expect(received(queued)).toHaveLength(1));
    expect(received(queued)[0]!.data).toMatchObject({
      from: "5511933334444",
      fromUserId: "BR.3333",
      profileName: "Caio",
    });
    expect(await windowOf(t, "5511933334444")).toMatchObject({ windowOpen: true });
    expect(await windowOf(t, "BR.3333")).toMatchObject({ windowOpen: true });
  });
});

describe("sending to a user id: toUserId", () => {
  it("goes to the operator as `recipient`; the record and its events carry toUserId (to: null); replays and conflicts as for `to`", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator((call, i) => acceptedFor(call, `wamid.U${i}`));
    const queued = queuedEvents();
    const key = crypto.randomUUID();
    const jobId = await sendTo(t, { toUserId: "US.13491208655302741918" }, key);
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.body).toMatchObject({ recipient: "US.13491208655302741918", text: { body: "Hello" } });
    expect(calls[0]!.body).not.toHaveProperty("to");

    const view = await json(await api(`/messages/${jobId}`, t.key));
    expect(OutboundMessage.safeParse(view).success).toBe(true);
    expect(view).toMatchObject({ to: null, toUserId: "US.13491208655302741918", status: "sent" });
    expect(statusEventsOf(queued(), jobId).map((e) => e.data)).toMatchObject([
      { status: "processing", to: null, toUserId: "US.13491208655302741918" },
      { status: "sent", to: null, toUserId: "US.13491208655302741918" },
    ]);

    // The Idempotency-Key binds the user id like a phone number.
    const same = { channelNumberId: t.numberId, toUserId: "US.13491208655302741918", text: { body: "Hello" } };
    const replay = await send(t.key, key, same);
    expect(replay.status).toBe(200);
    expect(await json(replay)).toEqual({ jobId, status: "duplicado_identico" });
    await expectError(await send(t.key, key, { ...same, toUserId: "US.9" }), 409, "idempotency_conflict");
    const { toUserId: _, ...asPhone } = { ...same, to: "5511999998888" };
    await expectError(await send(t.key, key, asPhone), 409, "idempotency_conflict");
    expect(calls).toHaveLength(1);
  });

  it("exactly one of to and toUserId: both, or neither, is a 400 naming them, and nothing is recorded or bound", async () => {
    const t = await liveNumberTenant();
    const key = crypto.randomUUID();
    const both = await expectError(
      await send(t.key, key, {
        channelNumberId: t.numberId,
        to: "5511999998888",
        toUserId: "US.1",
        text: { body: "x" },
      }),
      400,
      "invalid_request",
    );
    expect(both.error.details).toEqual([
      { path: "toUserId", rule: "exclusive", message: expect.stringMatching(/either to .* or toUserId .*not both/) },
    ]);
    const neither = await expectError(
      await send(t.key, key, { channelNumberId: t.numberId, text: { body: "x" } }),
      400,
      "invalid_request",
    );
    expect(neither.error.details).toEqual([
      { path: "to", rule: "required", message: expect.stringMatching(/to .*toUserId/) },
    ]);
    for (const toUserId of ["", "5511999998888", "us.1", "US", "US.", "US.12 34", "US.1".padEnd(161, "1")]) {
      const bad = await expectError(
        await send(t.key, key, { channelNumberId: t.numberId, toUserId, text: { body: "x" } }),
        400,
        "invalid_request",
      );
      expect([...new Set(bad.error.details?.map((d) => d.path))], JSON.stringify(toUserId)).toEqual(["toUserId"]);
    }
    // `to` keeps every rule it had.
    await expectError(
      await send(t.key, key, { channelNumberId: t.numberId, to: "US.1", text: { body: "x" } }),
      400,
      "invalid_request",
    );
    expect((await json<{ data: unknown[] }>(await api("/messages", t.key))).data).toEqual([]);
    // None of them bound the key.
    expect(
      (await send(t.key, key, { channelNumberId: t.numberId, toUserId: "US.1", text: { body: "x" } })).status,
    ).toBe(201);
  });

  it("accepts every shape of user id the operator documents (a BSUID, a parent BSUID with ENT, 128 characters after the country), sent as given; other shapes are a 400 naming the field and its rule", async () => {
    // The operator's BSUID: an ISO 3166 alpha-2 country code, a dot, up to 128 letters and digits;
    // a parent BSUID (shared by linked business portfolios) has `ENT.` after the country.
    const t = await liveNumberTenant();
    const calls = mockOperator((call, i) => acceptedFor(call, `wamid.SHAPE${i}`));
    const documented = [
      "US.13491208655302741918",
      "BR.1502576394655843",
      "US.ENT.11815799212886844830",
      `IN.${"7".repeat(128)}`,
      `HK.ENT.${"Ab3".repeat(42)}xy`,
    ];
    const jobs: string[] = [];
    for (const toUserId of documented) {
      jobs.push(await sendTo(t, { toUserId }));
      for (let i = 0; i < 4 && calls.length < jobs.length; i++) {
        await drain(t.numberId);
        clock.advance(1_100);
      }
    }
    expect(calls.map((c) => c.body.recipient)).toEqual(documented);
    for (const [i, toUserId] of documented.entries()) {
      expect(await json(await api(`/messages/${jobs[i]}`, t.key))).toMatchObject({ to: null, toUserId });
      const listed = await json<{ data: { id: string }[] }>(await api(`/messages?to=${toUserId}`, t.key));
      expect(listed.data.map((m) => m.id)).toEqual([jobs[i]]);
      expect(await windowOf(t, toUserId)).toMatchObject({ windowOpen: false });
    }

    const rules = async (toUserId: string) => {
      const bad = await expectError(
        await send(t.key, crypto.randomUUID(), { channelNumberId: t.numberId, toUserId, text: { body: "x" } }),
        400,
        "invalid_request",
      );
      return bad.error.details?.map((d) => `${d.path}:${d.rule}`);
    };
    for (const shape of ["us.13491208655302741918", "USA.1349", "US13491208655302741918", "US.ENT.", "US.1349-1208"])
      expect(await rules(shape), shape).toEqual(["toUserId:invalid_format"]);
    expect(await rules(`US.${"1".repeat(158)}`)).toEqual(["toUserId:max"]);
    expect(calls).toHaveLength(documented.length);
  });

  it("counts against the number's 2-per-second limit and leaves in acceptance order, like a phone number", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator((call, i) => acceptedFor(call, `wamid.O${i}`));
    const first = await sendTo(t, { toUserId: "US.7" });
    const second = await sendTo(t, { toUserId: "US.7" });
    const third = await send(t.key, crypto.randomUUID(), {
      channelNumberId: t.numberId,
      toUserId: "US.8",
      text: { body: "x" },
    });
    await expectError(third, 429, "rate_limit_exceeded");
    for (let i = 0; i < 4 && calls.length < 2; i++) {
      await drain(t.numberId);
      clock.advance(1_100);
    }
    expect(calls.map((c) => c.body.biz_opaque_callback_data)).toEqual([first, second]);
  });

  it("GET /messages?to= finds the sends to a user id, as to= finds those to a phone number", async () => {
    const t = await liveNumberTenant();
    mockOperator((call, i) => acceptedFor(call, `wamid.L${i}`));
    const toUser = await sendTo(t, { toUserId: "US.13491208655302741918" });
    clock.advance(1_100);
    const toPhone = await sendTo(t, { to: "5511999998888" });
    clock.advance(1_100);
    const toOther = await sendTo(t, { toUserId: "BR.42" });
    const listed = async (q: string) =>
      (await json<{ data: { id: string }[] }>(await api(`/messages?${q}`, t.key))).data.map((m) => m.id);
    expect(await listed("to=US.13491208655302741918")).toEqual([toUser]);
    expect(await listed("to=BR.42")).toEqual([toOther]);
    expect(await listed("to=5511999998888")).toEqual([toPhone]);
    expect(await listed("to=US.1")).toEqual([]);
    // Neither a phone number nor a user id: the uniform 400 naming the parameter.
    for (const bad of ["us.1", "US.", "%2B5511999998888", "US.1".padEnd(161, "1")]) {
      const err = await expectError(await api(`/messages?to=${bad}`, t.key), 400, "invalid_request");
      expect(err.error.details?.map((d) => d.path)).toEqual(["query.to"]);
    }
  });

  it("the operator's 131062 (a user id is not accepted for this message) fails it with user_id_recipient_not_supported", async () => {
    const t = await liveNumberTenant();
    mockOperator(() =>
      operatorError(400, 131062, "(#131062) Business-scoped User ID recipients are not supported for this message."),
    );
    const jobId = await sendTo(t, { toUserId: "US.5" });
    await drain(t.numberId);
    expect(await json(await api(`/messages/${jobId}`, t.key))).toMatchObject({
      status: "failed",
      toUserId: "US.5",
      error: { code: "user_id_recipient_not_supported", retriable: false, upstreamCode: "131062" },
    });
  });
});

describe("identity changes (system messages)", () => {
  it("user_changed_user_id: shown as a system message, opens no window, and a later send to the old id reaches the new one", async () => {
    const t = await liveNumberTenant();
    const queued = queuedEvents();
    const change = inboundPayload(
      t.phoneNumberId,
      [
        {
          id: "wamid.SYS1",
          timestamp: seconds(clock.now()),
          type: "system",
          system: {
            body: "User changed their user id",
            type: "user_changed_user_id",
            user_id: "US.NEW1",
            previous_user_id: "US.OLD1",
          },
        },
      ],
      [],
    );
    expect((await postOperator(change)).status).toBe(200);
    await until(() => expect(received(queued)).toHaveLength(1));
    const data = received(queued)[0]!.data;
    expect(data).toMatchObject({
      type: "system",
      from: null,
      fromUserId: "US.OLD1",
      text: null,
      system: {
        type: "user_changed_user_id",
        body: "User changed their user id",
        previousPhone: null,
        previousUserId: "US.OLD1",
        newPhone: null,
        newUserId: "US.NEW1",
      },
    });
    expect(InboundMessage.safeParse(await json(await api(`/messages/${data.messageId}`, t.key))).success).toBe(true);

    const calls = mockOperator((call, i) => acceptedFor(call, `wamid.M${i}`));
    const jobId = await sendTo(t, { toUserId: "US.OLD1" });
    await drain(t.numberId);
    expect(calls.map((c) => c.body.recipient)).toEqual(["US.NEW1"]);
    // The record keeps what was sent to; the operator got the id the user has now.
    expect(await json(await api(`/messages/${jobId}`, t.key))).toMatchObject({ toUserId: "US.OLD1", status: "sent" });
    expect(await windowOf(t, "US.OLD1")).toMatchObject({ windowOpen: false });
    expect(await windowOf(t, "US.NEW1")).toMatchObject({ windowOpen: false });
  });

  it("a change reported late (the operator's retry) does not undo a newer one: a send to the old id goes to the newest", async () => {
    const t = await liveNumberTenant();
    const queued = queuedEvents();
    const changed = (id: string, at: number, to: string) =>
      inboundPayload(
        t.phoneNumberId,
        [
          {
            id,
            timestamp: seconds(at),
            type: "system",
            system: {
              body: "User changed their user id",
              type: "user_changed_user_id",
              user_id: to,
              previous_user_id: "US.OLD3",
            },
          },
        ],
        [],
      );
    // The id moved twice in a row; the report of the first move reaches us after the second's.
    expect((await postOperator(changed("wamid.SYS3B", clock.now(), "US.NEW3B"))).status).toBe(200);
    expect((await postOperator(changed("wamid.SYS3A", clock.now() - 60_000, "US.NEW3A"))).status).toBe(200);
    await until(() => expect(received(queued)).toHaveLength(2));

    const calls = mockOperator((call, i) => acceptedFor(call, `wamid.M${i}`));
    await sendTo(t, { toUserId: "US.OLD3" });
    await drain(t.numberId);
    expect(calls.map((c) => c.body.recipient)).toEqual(["US.NEW3B"]);
  });

  it("user_changed_number: no window opens for the user, and sends to the old number and old user id go to the new ones", async () => {
    const t = await liveNumberTenant();
    const queued = queuedEvents();
    const change = inboundPayload(
      t.phoneNumberId,
      [
        {
          from: "5511900000009",
          id: "wamid.SYS2",
          timestamp: seconds(clock.now()),
          type: "system",
          system: {
            body: "User Ana changed from 5511900000009 to 5511900000010",
            wa_id: "5511900000010",
            type: "user_changed_number",
            user_id: "BR.NEW2",
            previous_user_id: "BR.OLD2",
          },
        },
      ],
      [],
    );
    expect((await postOperator(change)).status).toBe(200);
    await until(() => expect(received(queued)).toHaveLength(1));
    expect(received(queued)[0]!.data).toMatchObject({
      type: "system",
      from: "5511900000009",
      system: {
        type: "user_changed_number",
        previousPhone: "5511900000009",
        previousUserId: "BR.OLD2",
        newPhone: "5511900000010",
        newUserId: "BR.NEW2",
      },
    });

    const calls = mockOperator((call, i) => acceptedFor(call, `wamid.N${i}`));
    await sendTo(t, { to: "5511900000009" });
    await sendTo(t, { toUserId: "BR.OLD2" });
    for (let i = 0; i < 4 && calls.length < 2; i++) {
      await drain(t.numberId);
      clock.advance(1_100);
    }
    expect(calls.map((c) => c.body.to ?? c.body.recipient)).toEqual(["+5511900000010", "BR.NEW2"]);
    // The operator telling of the change is not the user writing.
    expect(await windowOf(t, "5511900000009")).toMatchObject({ windowOpen: false });
    expect(await windowOf(t, "5511900000010")).toMatchObject({ windowOpen: false });
  });
});
