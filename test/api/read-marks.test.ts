import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeClockPerTest } from "../helpers/clock";
import { admin, api, call, expectError, json } from "../helpers/http";
import { createTenant } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import {
  liveNumberTenant,
  mockOperator,
  operatorError,
  operatorMessagesUrl,
  type OperatorCall,
} from "../helpers/operator";
import { queuedEvents } from "../helpers/events";
import { inboundPayload, postOperator, seconds } from "../helpers/operator-webhook";
import { env } from "cloudflare:workers";
import { bucket, scopes } from "../../src/domain/abuse-limits";
import { takeToken } from "../../src/lib/throttle-client";

// API v2's read marks (`POST /api/v2/messages/{id}/read`): through the Worker's fetch handler, the
// number's object calling the operator, faked at the network edge (any other request fails).

const clock = fakeClockPerTest(Date.UTC(2045, 2, 1), (t) => t + 24 * 3_600_000);
afterEach(() => {
  vi.restoreAllMocks();
});

function v2(path: string, key: string, init: { method?: string; json?: unknown } = {}): Promise<Response> {
  const headers = new Headers({ Authorization: `Bearer ${key}` });
  if (init.json !== undefined) headers.set("Content-Type", "application/json");
  return call(`/api/v2${path}`, {
    method: init.method ?? "GET",
    headers,
    ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
  });
}

const markRead = (key: string, id: string, body?: unknown) =>
  v2(`/messages/${id}/read`, key, { method: "POST", ...(body === undefined ? {} : { json: body }) });

type Tenant = Awaited<ReturnType<typeof liveNumberTenant>>;

/** A user's message to a live number, through the operator's webhook; returns our id of it. */
async function inboundTo(t: Tenant, wamid: string): Promise<string> {
  const queued = queuedEvents();
  const payload = inboundPayload(t.phoneNumberId, [
    { from: "5511912345678", id: wamid, timestamp: seconds(clock.now()), type: "text", text: { body: "Hi" } },
  ]);
  expect((await postOperator(payload)).status).toBe(200);
  let id = "";
  await vi.waitFor(
    () => {
      const e = queued().find((ev) => ev.type === "message.received");
      expect(e).toBeDefined();
      if (e?.type === "message.received") id = e.data.messageId;
    },
    { timeout: 10_000, interval: 50 },
  );
  vi.restoreAllMocks();
  return id;
}

const success = () => Response.json({ success: true });

describe("POST /api/v2/messages/{id}/read", () => {
  it("marks an inbound message read at the operator with the typing indicator, once: a second call answers the same without a call", async () => {
    const t = await liveNumberTenant();
    const id = await inboundTo(t, "wamid.IN.READ1");
    const calls = mockOperator(success);
    const res = await markRead(t.key, id, { typing: true });
    expect(res.status).toBe(200);
    const mark = await json<{ readAt: string }>(res);
    expect(mark).toEqual({ messageId: id, readAt: new Date(Date.now()).toISOString(), typingIndicator: true });
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toBe(operatorMessagesUrl(t.phoneNumberId));
    expect(calls[0]!.auth).toBe(`Bearer ${t.token}`);
    expect(calls[0]!.body).toEqual({
      messaging_product: "whatsapp",
      status: "read",
      message_id: "wamid.IN.READ1",
      typing_indicator: { type: "text" },
    });

    clock.advance(60_000);
    const again = await markRead(t.key, id);
    expect(again.status).toBe(200);
    expect(await json(again)).toEqual(mark);
    expect(calls).toHaveLength(1);
    // The message shows the mark in v2; v1's view is as it always was.
    expect(await json(await v2(`/messages/${id}`, t.key))).toMatchObject({
      id,
      readAt: mark.readAt,
      typingIndicator: true,
      answer: null,
    });
    const v1 = await json(await api(`/messages/${id}`, t.key));
    expect(v1).not.toHaveProperty("readAt");
    expect(v1).not.toHaveProperty("typingIndicator");
  });

  it("without a body (or typing false) marks it read only", async () => {
    const t = await liveNumberTenant();
    const first = await inboundTo(t, "wamid.IN.READ2");
    const second = await inboundTo(t, "wamid.IN.READ3");
    const calls = mockOperator(success);
    const res = await markRead(t.key, first);
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ messageId: first, typingIndicator: false });
    expect((await markRead(t.key, second, { typing: false })).status).toBe(200);
    expect(calls.map((c) => c.body)).toEqual([
      { messaging_product: "whatsapp", status: "read", message_id: "wamid.IN.READ2" },
      { messaging_product: "whatsapp", status: "read", message_id: "wamid.IN.READ3" },
    ]);
  });

  it("two marks of one message at the same time make one operator call", async () => {
    const t = await liveNumberTenant();
    const id = await inboundTo(t, "wamid.IN.READ4");
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    const calls = mockOperator(async () => {
      await held;
      return success();
    });
    const both = Promise.all([markRead(t.key, id, { typing: true }), markRead(t.key, id, { typing: true })]);
    await vi.waitFor(() => expect(calls).toHaveLength(1), { timeout: 5_000, interval: 20 });
    release();
    const [a, b] = await both;
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await json(a)).toEqual(await json(b));
    expect(calls).toHaveLength(1);
  });

  it("an operator refusal answers 502 with the normalized error and retriable; nothing is marked, so the next call tries again", async () => {
    const t = await liveNumberTenant();
    const id = await inboundTo(t, "wamid.IN.READ5");
    const calls = mockOperator((_call: OperatorCall, i) =>
      i === 0 ? operatorError(401, 190, "Error validating access token") : success(),
    );
    const refused = await markRead(t.key, id, { typing: true });
    expect(refused.status).toBe(502);
    expect(await json(await v2(`/messages/${id}`, t.key))).toMatchObject({ readAt: null, typingIndicator: false });
    const body = await json<{ error: Record<string, unknown> }>(refused);
    expect(body).toEqual({
      error: {
        code: "upstream_auth_failed",
        message: "The number's access token is invalid or expired.",
        requestId: refused.headers.get("X-Request-Id"),
        retriable: true,
        upstreamCode: "190",
      },
    });
    const res = await markRead(t.key, id);
    expect(res.status).toBe(200);
    expect(calls).toHaveLength(2);
  });

  it("an operator that does not answer is a retriable 502", async () => {
    const t = await liveNumberTenant();
    const id = await inboundTo(t, "wamid.IN.READ6");
    mockOperator(() => {
      throw new TypeError("Network connection lost.");
    });
    const res = await markRead(t.key, id);
    expect(res.status).toBe(502);
    expect(await json(res)).toMatchObject({
      error: { code: "upstream_unavailable", retriable: true, upstreamCode: null },
    });
  });

  it("an outbound message's id is a 400 naming the rule, an unknown id a 404; neither calls the operator", async () => {
    const t = await liveNumberTenant();
    const calls = mockOperator(() => Response.json({ messaging_product: "whatsapp", messages: [{ id: "wamid.OUT" }] }));
    const sent = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Hello", "5511912345678"));
    expect(sent.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(sent);
    const outbound = await expectError(await markRead(t.key, jobId), 400, "invalid_request");
    expect(outbound.error.details).toEqual([expect.objectContaining({ path: "id", rule: "inbound_only" })]);
    await expectError(await markRead(t.key, crypto.randomUUID()), 404, "not_found");
    await expectError(await markRead(t.key, "not-a-uuid"), 404, "not_found");
    // Another workspace's inbound message reads as unknown.
    const other = await createTenant();
    const inject = await api("/sandbox/inbound", other.key, {
      method: "POST",
      json: { channelNumberId: other.numberId, from: "5511977776666", text: { body: "hi" } },
    });
    const { messageId } = await json<{ messageId: string }>(inject);
    await expectError(await markRead(t.key, messageId), 404, "not_found");
    expect(calls.filter((c) => (c.body as unknown as { status?: string }).status === "read")).toEqual([]);
  });

  it("a body must be JSON of its one field", async () => {
    const t = await createTenant();
    const inject = await api("/sandbox/inbound", t.key, {
      method: "POST",
      json: { channelNumberId: t.numberId, from: "5511977776666", text: { body: "hi" } },
    });
    const { messageId } = await json<{ messageId: string }>(inject);
    const bad = await expectError(await markRead(t.key, messageId, { typing: "yes" }), 400, "invalid_request");
    expect(bad.error.details?.[0]).toMatchObject({ path: "typing" });
    const unknown = await expectError(await markRead(t.key, messageId, { typeing: true }), 400, "invalid_request");
    expect(unknown.error.details?.[0]).toMatchObject({ path: "typeing" });
    // Nothing was marked: the next mark is this one.
    clock.advance(1_000);
    const res = await markRead(t.key, messageId);
    expect(await json(res)).toEqual({ messageId, readAt: new Date(Date.now()).toISOString(), typingIndicator: false });
  });

  it("spends the workspace's read-mark budget: past it, 429 with Retry-After, and nothing is called or marked", async () => {
    const t = await liveNumberTenant();
    const id = await inboundTo(t, "wamid.IN.READ7");
    const calls = mockOperator(success);
    const spec = bucket("readMark");
    await takeToken(env, scopes.workspace(t.workspaceId), [spec], spec.limit);
    const refused = await markRead(t.key, id, { typing: true });
    await expectError(refused, 429, "rate_limit_exceeded");
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    expect(calls).toEqual([]);
    // A token later, the mark is made: the refusal had not marked it.
    clock.advance(60_000);
    const res = await markRead(t.key, id);
    expect(await json(res)).toMatchObject({ messageId: id, typingIndicator: false });
    expect(calls).toHaveLength(1);
  });

  it("a message of a disconnected number is refused (403) without a call", async () => {
    const t = await liveNumberTenant();
    const id = await inboundTo(t, "wamid.IN.READ8");
    expect((await admin(`/channel-numbers/${t.numberId}`, { method: "DELETE" })).status).toBe(204);
    const calls = mockOperator(success);
    await expectError(await markRead(t.key, id), 403, "forbidden");
    expect(calls).toEqual([]);
  });

  it("is v2 only: v1 has no such route", async () => {
    const t = await createTenant();
    const res = await api(`/messages/${crypto.randomUUID()}/read`, t.key, { method: "POST", json: {} });
    await expectError(res, 404, "not_found");
  });
});

describe("read marks on a sandbox number", () => {
  it("are taken without a network call and kept on the message: GET shows the mark and the typing indicator", async () => {
    const t = await createTenant();
    const inject = await api("/sandbox/inbound", t.key, {
      method: "POST",
      json: { channelNumberId: t.numberId, from: "5511977776666", text: { body: "hi" } },
    });
    const { messageId } = await json<{ messageId: string }>(inject);
    // Any request leaving the Worker fails the test.
    mockOperator(() => {
      throw new Error("the sandbox calls no operator");
    });
    const res = await markRead(t.key, messageId, { typing: true });
    expect(res.status).toBe(200);
    const readAt = new Date(Date.now()).toISOString();
    expect(await json(res)).toEqual({ messageId, readAt, typingIndicator: true });
    clock.advance(1_000);
    expect(await json(await markRead(t.key, messageId))).toEqual({ messageId, readAt, typingIndicator: true });
    expect(await json(await v2(`/messages/${messageId}`, t.key))).toMatchObject({
      id: messageId,
      direction: "inbound",
      readAt,
      typingIndicator: true,
    });
    // And in lists.
    const list = await json<{ data: { id: string; readAt: string | null }[] }>(
      await v2(`/messages?direction=inbound`, t.key),
    );
    expect(list.data.find((m) => m.id === messageId)).toMatchObject({ readAt, typingIndicator: true });
  });
});
