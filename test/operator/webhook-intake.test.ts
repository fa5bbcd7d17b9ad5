import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { api, call, expectError, json } from "../helpers/http";
import { createKey, createTenant, createWorkspace } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { accepted, connectLiveNumber, mockOperator, operatorError } from "../helpers/operator";
import { mediaLookupUrl } from "../helpers/operator-media";
import { mockNetwork } from "../helpers/webhook-net";
import { toMessageView } from "../../src/messages/record";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { queuedEvents, statusEventsOf } from "../helpers/events";
import { testNumber, testWorkspace } from "../helpers/objects";
import type { WebhookEvent } from "../../src/messages/events";
import {
  accountFieldPayload,
  accountUpdatePayload,
  combined,
  inboundPayload,
  operatorSignature as sign,
  postOperator,
  qualityUpdatePayload,
  seconds,
  statusPayload,
} from "../helpers/operator-webhook";
import { fakeClockPerTest } from "../helpers/clock";

const clock = fakeClockPerTest(Date.UTC(2041, 0, 1), (t) => t + 24 * 3_600_000);
/** When the running test began: its operator reports are dated from it. */
let t0 = 0;
beforeEach(() => {
  t0 = clock.now();
});
afterEach(() => vi.restoreAllMocks());

/** A live number with one message already sent (operator's id wamid.S1). */
async function sentMessage() {
  const workspaceId = await createWorkspace();
  const { key } = await createKey(workspaceId);
  const number = await connectLiveNumber(workspaceId);
  mockOperator(() => accepted("wamid.S1"));
  const res = await send(key, crypto.randomUUID(), textMessage(number.numberId));
  const { jobId } = await json<{ jobId: string }>(res);
  await runDurableObjectAlarm(channelNumberStub(env, number.numberId));
  vi.restoreAllMocks();
  return { workspaceId, key, jobId, ...number };
}

const getMessage = async (key: string, jobId: string) =>
  json<Record<string, unknown>>(await api(`/messages/${jobId}`, key));

/**
 * A positive signal that the operator's earlier posts were processed: a second
 * message of the same number is reported delivered after them, and we wait
 * until that report is applied (the queue and its consumer keep the order).
 */
async function afterEarlierPosts(m: { key: string; numberId: string; phoneNumberId: string }): Promise<void> {
  mockOperator(() => accepted("wamid.MARK"));
  const { jobId } = await json<{ jobId: string }>(
    await send(m.key, crypto.randomUUID(), textMessage(m.numberId, "marker", "5511000000077")),
  );
  clock.set(Date.now() + 1_100);
  await runDurableObjectAlarm(channelNumberStub(env, m.numberId));
  vi.restoreAllMocks();
  expect(
    (
      await postOperator(
        statusPayload(m.phoneNumberId, [
          { id: "wamid.MARK", status: "delivered", timestamp: seconds(t0), biz_opaque_callback_data: jobId },
        ]),
      )
    ).status,
  ).toBe(200);
  await vi.waitFor(
    async () => expect(await getMessage(m.key, jobId)).toMatchObject({ deliveredAt: expect.any(String) }),
    { timeout: 10_000, interval: 50 },
  );
}

describe("operator webhook verification handshake", () => {
  it("echoes the challenge for the right token and refuses a wrong one", async () => {
    const ok = await call(
      `/upstream/cloud/webhook?hub.mode=subscribe&hub.verify_token=${env.UPSTREAM_VERIFY_TOKEN}&hub.challenge=1158201444`,
    );
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe("1158201444");
    await expectError(
      await call("/upstream/cloud/webhook?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1"),
      403,
      "forbidden",
    );
    await expectError(
      await call(
        `/upstream/cloud/webhook?hub.mode=unsubscribe&hub.verify_token=${env.UPSTREAM_VERIFY_TOKEN}&hub.challenge=1`,
      ),
      403,
      "forbidden",
    );
  });
});

describe("operator webhook signatures", () => {
  it("refuses a missing, wrong, or re-serialized signature with 401, and nothing changes", async () => {
    const m = await sentMessage();
    const payload = statusPayload(m.phoneNumberId, [
      { id: "wamid.S1", status: "read", timestamp: seconds(t0), biz_opaque_callback_data: m.jobId },
    ]);
    const raw = JSON.stringify(payload, null, 2);
    await expectError(await postOperator(payload, { signature: null, raw }), 401, "unauthorized");
    await expectError(
      await postOperator(payload, { signature: await sign(raw, "another-secret"), raw }),
      401,
      "unauthorized",
    );
    await expectError(await postOperator(payload, { signature: "sha256=deadbeef", raw }), 401, "unauthorized");
    // Signed over the re-serialized JSON instead of the bytes that were sent.
    await expectError(
      await postOperator(payload, { signature: await sign(JSON.stringify(payload)), raw }),
      401,
      "unauthorized",
    );
    await afterEarlierPosts(m);
    expect(await getMessage(m.key, m.jobId)).toMatchObject({ status: "sent", readAt: null });
  });
});

describe("operator webhook signatures, compared", () => {
  /** The bytes the constant-time comparison sees for `text` (lib/crypto.ts hashes each side first). */
  const digestOf = async (text: string) =>
    new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));

  it("in constant time: the header and the expected signature both go through crypto.subtle.timingSafeEqual", async () => {
    const m = await sentMessage();
    const payload = statusPayload(m.phoneNumberId, [
      { id: "wamid.S2", status: "read", timestamp: seconds(t0), biz_opaque_callback_data: m.jobId },
    ]);
    const raw = JSON.stringify(payload);
    const right = await sign(raw);
    // Of the same length, differing in the last character only: the case a plain !== answers fastest.
    const wrong = `${right.slice(0, -1)}${right.endsWith("0") ? "1" : "0"}`;
    const compared = vi.spyOn(crypto.subtle, "timingSafeEqual");
    const sawPair = async (a: string, b: string) => {
      const [da, db] = await Promise.all([digestOf(a), digestOf(b)]);
      return compared.mock.calls.some(
        ([x, y]) =>
          new Uint8Array(x as ArrayBuffer).join() === da.join() &&
          new Uint8Array(y as ArrayBuffer).join() === db.join(),
      );
    };
    await expectError(await postOperator(payload, { signature: wrong, raw }), 401, "unauthorized");
    expect(await sawPair(wrong, right)).toBe(true);
    compared.mockClear();
    expect((await postOperator(payload, { signature: right, raw })).status).toBe(200);
    expect(await sawPair(right, right)).toBe(true);
  });
});

describe("operator statuses", () => {
  it("a delivered report is applied once, however often it arrives", async () => {
    const m = await sentMessage();
    const delivered = statusPayload(m.phoneNumberId, [
      {
        id: "wamid.S1",
        status: "delivered",
        timestamp: seconds(t0 + 5_000),
        biz_opaque_callback_data: m.jobId,
      },
    ]);
    const queued = queuedEvents();
    expect((await postOperator(delivered)).status).toBe(200);
    await vi.waitFor(
      async () =>
        expect(await getMessage(m.key, m.jobId)).toMatchObject({
          deliveredAt: new Date(Math.floor((t0 + 5_000) / 1000) * 1000).toISOString(),
        }),
      { timeout: 5_000 },
    );
    expect((await postOperator(delivered)).status).toBe(200);
    expect((await postOperator(delivered)).status).toBe(200);
    await afterEarlierPosts(m);
    // One delivered event, however often the report came (the same object instance knows it published it).
    expect(statusEventsOf(queued(), m.jobId).map((e) => e.type === "message.status" && e.data.deliveredAt)).toEqual([
      new Date(Math.floor((t0 + 5_000) / 1000) * 1000).toISOString(),
    ]);
  });

  it("a status is applied within the operator's request, with no queue operation; one that cannot be applied then is queued and its consumer applies it", async () => {
    const m = await sentMessage();
    const queued = vi.spyOn(env.UPSTREAM_EVENT_QUEUE, "sendBatch");
    const report = (status: string, at: number) =>
      postOperator(
        statusPayload(m.phoneNumberId, [
          { id: "wamid.S1", status, timestamp: seconds(at), biz_opaque_callback_data: m.jobId },
        ]),
      );
    expect((await report("delivered", t0 + 5_000)).status).toBe(200);
    // Already applied when the operator got its answer.
    expect(await getMessage(m.key, m.jobId)).toMatchObject({
      deliveredAt: new Date(Math.floor((t0 + 5_000) / 1000) * 1000).toISOString(),
    });
    expect(queued).not.toHaveBeenCalled();

    // D1 fails while the route looks the number up: the item is queued, not lost, and the consumer applies it.
    // Only that lookup fails: the webhook consumer, delivering the delivered event meanwhile, reads D1 too.
    const prepare = env.DB.prepare.bind(env.DB);
    let failed = false;
    vi.spyOn(env.DB, "prepare").mockImplementation((query: string) => {
      if (!failed && query.includes("upstream_phone_number_id = ?")) {
        failed = true;
        throw new Error("D1_ERROR: the database is unavailable");
      }
      return prepare(query);
    });
    expect((await report("read", t0 + 6_000)).status).toBe(200);
    expect(queued).toHaveBeenCalledTimes(1);
    await vi.waitFor(
      async () => expect(await getMessage(m.key, m.jobId)).toMatchObject({ readAt: expect.any(String) }),
      { timeout: 10_000, interval: 50 },
    );
  });

  it("out-of-order statuses never move a message back; read before delivered is fine", async () => {
    const m = await sentMessage();
    const report = (status: string, at: number, extra: Record<string, unknown> = {}) =>
      postOperator(
        statusPayload(m.phoneNumberId, [
          { id: "wamid.S1", status, timestamp: seconds(at), biz_opaque_callback_data: m.jobId, ...extra },
        ]),
      );
    await report("read", t0 + 9_000);
    await report("delivered", t0 + 8_000);
    await report("sent", t0 + 7_000);
    await report("failed", t0 + 10_000, { errors: [{ code: 131026, title: "Undeliverable" }] });
    await afterEarlierPosts(m);
    // A failure reported after the operator said read is stale: the message reached its recipient.
    expect(await getMessage(m.key, m.jobId)).toMatchObject({
      status: "sent",
      error: null,
      readAt: expect.any(String),
      deliveredAt: expect.any(String),
    });
  });

  it("a failed report fails a message that was still processing, with the normalized code", async () => {
    const workspaceId = await createWorkspace();
    const { key } = await createKey(workspaceId);
    const number = await connectLiveNumber(workspaceId);
    mockOperator(() => {
      throw new DOMException("timed out", "TimeoutError");
    });
    const { jobId } = await json<{ jobId: string }>(await send(key, "k", textMessage(number.numberId)));
    await runDurableObjectAlarm(channelNumberStub(env, number.numberId));
    vi.restoreAllMocks();
    expect(await getMessage(key, jobId)).toMatchObject({ status: "processing" });
    // The send's answer was lost, but the operator's status carries our jobId.
    await postOperator(
      statusPayload(number.phoneNumberId, [
        {
          id: "wamid.LOST",
          status: "failed",
          timestamp: seconds(t0),
          biz_opaque_callback_data: jobId,
          errors: [{ code: 131047, title: "Re-engagement message" }],
        },
      ]),
    );
    await vi.waitFor(
      async () =>
        expect(await getMessage(key, jobId)).toMatchObject({
          status: "failed",
          upstreamMessageId: "wamid.LOST",
          error: { code: "service_window_closed", upstreamCode: "131047" },
        }),
      { timeout: 5_000 },
    );
    // Settled: the number has no more work for it (it never calls the operator for it again).
    expect(await testWorkspace(workspaceId).storedRecord(jobId)).toMatchObject({ status: "failed", pending: 0 });
    expect((await testNumber(number.numberId).queued()).map((e) => e.jobId)).not.toContain(jobId);
  });

  it("malformed quality and account entries are ignored without affecting a status in the same payload", async () => {
    const m = await sentMessage();
    const payload = combined(
      qualityUpdatePayload("WABA", { display_phone_number: { digits: "15557770000" }, event: "FLAGGED" }),
      qualityUpdatePayload("WABA", { display_phone_number: "12", event: "DOWNGRADE", current_limit: "TIER_250" }),
      accountFieldPayload("WABA", "phone_number_quality_update", "not an object"),
      accountUpdatePayload("WABA", { event: 42 } as unknown as { event: string }),
      { entry: [{ id: "WABA" }, "not an entry", { id: "WABA", changes: [null, { field: "messages" }] }] },
      statusPayload(m.phoneNumberId, [
        {
          id: "wamid.S1",
          status: "delivered",
          timestamp: seconds(t0 + 5_000),
          biz_opaque_callback_data: m.jobId,
        },
      ]),
    );
    const res = await postOperator(payload);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("EVENT_RECEIVED");
    await vi.waitFor(
      async () => expect(await getMessage(m.key, m.jobId)).toMatchObject({ deliveredAt: expect.any(String) }),
      { timeout: 10_000, interval: 50 },
    );
    const row = await env.DB.prepare(
      "SELECT quality_rating, messaging_limit_tier, last_operator_error FROM channel_numbers WHERE id = ?",
    )
      .bind(m.numberId)
      .first();
    expect(row).toMatchObject({ messaging_limit_tier: null, last_operator_error: null });
  });

  it("an unknown phone_number_id is acknowledged with 200 and changes nothing", async () => {
    const m = await sentMessage();
    const res = await postOperator(
      statusPayload("999999999", [
        { id: "wamid.S1", status: "read", timestamp: seconds(t0), biz_opaque_callback_data: m.jobId },
      ]),
    );
    expect(res.status).toBe(200);
    await afterEarlierPosts(m);
    expect(await getMessage(m.key, m.jobId)).toMatchObject({ status: "sent", readAt: null });
  });
});

describe("inbound messages", () => {
  it("an inbound text becomes one message.received event with the sender and text, and opens the window", async () => {
    const workspaceId = await createWorkspace();
    const { key } = await createKey(workspaceId);
    const number = await connectLiveNumber(workspaceId);
    const queued = queuedEvents();
    const payload = inboundPayload(number.phoneNumberId, [
      {
        from: "5511912345678",
        id: "wamid.IN1",
        timestamp: seconds(t0),
        type: "text",
        text: { body: "Oi, tudo bem?" },
      },
    ]);
    expect((await postOperator(payload)).status).toBe(200);
    expect((await postOperator(payload)).status).toBe(200); // the operator retries
    await vi.waitFor(
      async () =>
        expect(await json(await api(`/channel-numbers/${number.numberId}/contacts/5511912345678`, key))).toMatchObject({
          windowOpen: true,
        }),
      { timeout: 10_000 },
    );
    await afterEarlierPosts({ key, ...number });
    const window = await json<{ windowExpiresAt: string }>(
      await api(`/channel-numbers/${number.numberId}/contacts/5511912345678`, key),
    );
    expect(window.windowExpiresAt).toBe(new Date(Math.floor(t0 / 1000) * 1000 + 24 * 3_600_000).toISOString());

    // The operator's retry found the record: one event.
    const results = receivedEvents(queued);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({
      type: "message.received",
      workspaceId,
      channelNumberId: number.numberId,
      data: {
        from: "5511912345678",
        type: "text",
        text: { body: "Oi, tudo bem?" },
        upstreamMessageId: "wamid.IN1",
        content: null,
      },
    });
  });

  it("other inbound types are forwarded with their type and content", async () => {
    const workspaceId = await createWorkspace();
    const number = await connectLiveNumber(workspaceId);
    // The image's copy asks the operator for its media id, unknown there (test/operator/inbound-media.test.ts copies them).
    const net = mockNetwork();
    net.receivers.set(mediaLookupUrl("media-1"), () => operatorError(400, 100, "Object with ID does not exist"));
    const queued = queuedEvents();
    await postOperator(
      inboundPayload(number.phoneNumberId, [
        {
          from: "5511900000000",
          id: "wamid.IMG",
          timestamp: seconds(t0),
          type: "image",
          image: { id: "media-1", mime_type: "image/jpeg", caption: "look" },
        },
      ]),
    );
    await vi.waitFor(() => expect(receivedEvents(queued)).toHaveLength(1), { timeout: 10_000 });
    expect(receivedEvents(queued)[0]).toMatchObject({
      data: { type: "image", text: null, content: { id: "media-1", mime_type: "image/jpeg", caption: "look" } },
    });
    const messageId = String(receivedEvents(queued)[0]!.data.messageId);
    await vi.waitFor(
      async () =>
        expect(toMessageView((await workspaceStub(env, workspaceId).getMessage(messageId))!)).toMatchObject({
          media: { status: "failed" },
        }),
      { timeout: 10_000, interval: 50 },
    );
    expect(net.unhandled).toEqual([]);
  });
});

describe("operator payloads as they really come", () => {
  // The operator's reference writes `timestamp` and the ids as strings; relays re-serialize them as
  // JSON numbers, and the operator's other webhooks write times as integers. Both forms read alike.
  it("a message and a status whose timestamp (and digit ids) are JSON numbers are recorded and announced like the string form", async () => {
    const m = await sentMessage();
    const queued = queuedEvents();
    const at = Math.floor(t0 / 1000);
    const payload = inboundPayload(
      m.phoneNumberId,
      [{ from: 5511912345678, id: "wamid.NUM", timestamp: at, type: "text", text: { body: "Oi" } }],
      [{ wa_id: 5511912345678, profile: { name: "Ana" } }],
    );
    (payload.entry[0]!.changes[0]!.value.metadata as Record<string, unknown>).phone_number_id = Number(m.phoneNumberId);
    expect((await postOperator(payload)).status).toBe(200);
    const delivered = statusPayload(m.phoneNumberId, [
      { id: "wamid.S1", status: "delivered", timestamp: at + 5, biz_opaque_callback_data: m.jobId },
    ]);
    expect((await postOperator(delivered)).status).toBe(200);

    await vi.waitFor(() => expect(receivedEvents(queued)).toHaveLength(1), { timeout: 10_000, interval: 50 });
    const event = receivedEvents(queued)[0]!;
    expect(event.data).toMatchObject({
      from: "5511912345678",
      profileName: "Ana",
      upstreamMessageId: "wamid.NUM",
      receivedAt: new Date(at * 1000).toISOString(),
      text: { body: "Oi" },
    });
    expect(await getMessage(m.key, String(event.data.messageId))).toMatchObject({
      direction: "inbound",
      from: "5511912345678",
      receivedAt: new Date(at * 1000).toISOString(),
    });
    expect(await json(await api(`/channel-numbers/${m.numberId}/contacts/5511912345678`, m.key))).toMatchObject({
      windowOpen: true,
      windowExpiresAt: new Date(at * 1000 + 24 * 3_600_000).toISOString(),
    });
    await vi.waitFor(
      async () =>
        expect(await getMessage(m.key, m.jobId)).toMatchObject({
          deliveredAt: new Date((at + 5) * 1000).toISOString(),
        }),
      { timeout: 10_000, interval: 50 },
    );
    expect(statusEventsOf(queued(), m.jobId).map((e) => e.type === "message.status" && e.data.deliveredAt)).toEqual([
      new Date((at + 5) * 1000).toISOString(),
    ]);
  });

  it("what cannot be read is logged by its ids and what failed (never its text or sender), and its siblings still apply", async () => {
    const m = await sentMessage();
    const queued = queuedEvents();
    const lines: string[] = [];
    vi.spyOn(console, "warn").mockImplementation((line: unknown) => void lines.push(String(line)));
    const readable = {
      from: "5511912345678",
      id: "wamid.OK",
      timestamp: seconds(t0),
      type: "text",
      text: { body: "ok" },
    };
    const unreadable = { ...readable, id: "wamid.BAD", type: 7, text: { body: "secret words" } };
    const payload = combined(
      inboundPayload(m.phoneNumberId, [unreadable, readable]),
      statusPayload(m.phoneNumberId, [{ id: "wamid.S1", status: { delivered: true }, timestamp: seconds(t0) }]),
      // Statuses naming no number of ours, and a change of no readable shape.
      { entry: [{ id: "WABA7", changes: [{ field: "messages", value: { statuses: [{ id: "wamid.X" }] } }, 42] }] },
    );
    expect((await postOperator(payload)).status).toBe(200);
    await vi.waitFor(() => expect(receivedEvents(queued)).toHaveLength(1), { timeout: 10_000, interval: 50 });
    expect(receivedEvents(queued)[0]!.data).toMatchObject({ upstreamMessageId: "wamid.OK" });

    const message = lines.find((l) => l.includes("operator message not understood"));
    expect(JSON.parse(message!)).toMatchObject({
      phoneNumberId: m.phoneNumberId,
      operatorId: "wamid.BAD",
      type: null,
      issues: "type:invalid_type",
    });
    const status = lines.find((l) => l.includes("operator status not understood"));
    expect(JSON.parse(status!)).toMatchObject({ operatorId: "wamid.S1", issues: "status:invalid_type" });
    const parts = lines.find((l) => l.includes("operator payload parts not understood"));
    expect(JSON.parse(parts!)).toMatchObject({ entries: 0, changes: 1, values: 0, withoutNumber: 1, wabaIds: "WABA7" });
    for (const line of lines) {
      expect(line).not.toContain("secret words");
      expect(line).not.toContain("5511912345678");
    }
    expect(await getMessage(m.key, m.jobId)).toMatchObject({ status: "sent", deliveredAt: null });
  });
});

describe("sandbox inbound injection", () => {
  it("injects a text on a sandbox number of the caller's workspace, and only there", async () => {
    const t = await createTenant();
    const other = await createTenant();
    const queued = queuedEvents();
    const res = await api("/sandbox/inbound", t.key, {
      method: "POST",
      json: { channelNumberId: t.numberId, from: "5511977776666", text: { body: "ping" } },
    });
    expect(res.status).toBe(202);
    const { messageId } = await json<{ messageId: string }>(res);
    // Announced before the answer: its event already left for the queue.
    expect(receivedEvents(queued)).toMatchObject([
      { type: "message.received", data: { messageId, from: "5511977776666", text: { body: "ping" } } },
    ]);

    await expectError(
      await api("/sandbox/inbound", t.key, {
        method: "POST",
        json: { channelNumberId: other.numberId, from: "5511977776666", text: { body: "x" } },
      }),
      404,
      "not_found",
    );
    await expectError(
      await api("/sandbox/inbound", t.key, {
        method: "POST",
        json: { channelNumberId: t.numberId, from: "+55119", text: { body: "x" } },
      }),
      400,
      "invalid_request",
    );
    const live = await connectLiveNumber(t.workspaceId);
    await expectError(
      await api("/sandbox/inbound", t.key, {
        method: "POST",
        json: { channelNumberId: live.numberId, from: "5511977776666", text: { body: "x" } },
      }),
      403,
      "forbidden",
    );
  });
});

/** The message.received events among those the queue carried, in order. */
const receivedEvents = (queued: () => WebhookEvent[]) => queued().filter((e) => e.type === "message.received");
