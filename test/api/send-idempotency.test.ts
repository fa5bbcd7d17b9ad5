import { describe, expect, it } from "vitest";
import { api, expectError, json } from "../helpers/http";
import { createTenant } from "../helpers/fixtures";
import { send, textMessage, usedMessages } from "../helpers/send";
import { testNumber } from "../helpers/objects";
import { fakeClockPerTest } from "../helpers/clock";

/** The number's queue (what it still has to call), oldest first. */
const queuedJobIds = async (numberId: string) => (await testNumber(numberId).queued()).map((e) => e.jobId);

const clock = fakeClockPerTest(Date.UTC(2032, 0, 10, 12), (t) => t + 3_600_000);

describe("idempotent sending", () => {
  it("answers 201 once, then 200 duplicado_identico with the original jobId, and sends nothing again", async () => {
    const t = await createTenant();
    const first = await send(t.key, "order-1", textMessage(t.numberId));
    expect(first.status).toBe(201);
    const { jobId, status } = await json<{ jobId: string; status: string }>(first);
    expect(status).toBe("created");

    clock.advance(10);
    const replay = await send(t.key, "order-1", textMessage(t.numberId));
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual({ jobId, status: "duplicado_identico" });

    expect(await queuedJobIds(t.numberId)).toEqual([jobId]);
    expect(await usedMessages(t.key)).toBe(1);
  });

  it("treats key order and whitespace as the same payload", async () => {
    const t = await createTenant();
    const a = await send(t.key, "k", { text: { body: "Hi" }, to: "5511999998888", channelNumberId: t.numberId });
    const raw = `{ "channelNumberId": "${t.numberId}",\n  "text": {"body":"Hi"}, "to":"5511999998888", "type": "text" }`;
    const b = await api("/messages", t.key, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Idempotency-Key": "k" },
      body: raw,
    });
    expect(a.status).toBe(201);
    expect(b.status).toBe(200);
    expect((await json<{ jobId: string }>(b)).jobId).toBe((await json<{ jobId: string }>(a)).jobId);
  });

  it("answers 409 idempotency_conflict for the same key with another payload", async () => {
    const t = await createTenant();
    const first = await send(t.key, "k", textMessage(t.numberId, "one"));
    expect(first.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(first);
    clock.advance(1_000);
    const conflict = await expectError(
      await send(t.key, "k", textMessage(t.numberId, "two")),
      409,
      "idempotency_conflict",
    );
    // The original jobId is in the details, so a client can look the first send up.
    expect(conflict.error.details).toEqual([expect.objectContaining({ path: "header.idempotency-key", jobId })]);
    await expectError(
      await send(t.key, "k", textMessage(t.numberId, "one", "5511000000000")),
      409,
      "idempotency_conflict",
    );
  });

  it("scopes keys to the workspace", async () => {
    const a = await createTenant();
    const b = await createTenant();
    const ra = await send(a.key, "shared-key", textMessage(a.numberId));
    const rb = await send(b.key, "shared-key", textMessage(b.numberId));
    expect([ra.status, rb.status]).toEqual([201, 201]);
    expect((await json<{ jobId: string }>(ra)).jobId).not.toBe((await json<{ jobId: string }>(rb)).jobId);
  });

  it("gives exactly one 201 for concurrent identical requests; the rest are duplicates of it", async () => {
    const t = await createTenant();
    const responses = await Promise.all(
      Array.from({ length: 12 }, () => send(t.key, "burst", textMessage(t.numberId))),
    );
    const bodies = await Promise.all(responses.map((r) => json<{ jobId: string; status: string }>(r)));
    expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
    expect(responses.filter((r) => r.status === 200)).toHaveLength(11);
    expect(new Set(bodies.map((b) => b.jobId)).size).toBe(1);
    expect(await queuedJobIds(t.numberId)).toEqual([bodies[0]!.jobId]);
  });

  it("a replay spends no quota and no rate budget; a rate-limited send spends no quota", async () => {
    const t = await createTenant({ monthlyMessageQuota: 3 });
    expect((await send(t.key, "a", textMessage(t.numberId))).status).toBe(201);
    expect((await send(t.key, "b", textMessage(t.numberId))).status).toBe(201);
    // The number's window (2/s) is now full: replays still answer.
    for (let i = 0; i < 5; i++) expect((await send(t.key, "a", textMessage(t.numberId))).status).toBe(200);
    await expectError(await send(t.key, "c", textMessage(t.numberId)), 429, "rate_limit_exceeded");
    clock.advance(1_000);
    // The refused "c" took no quota: the third send of a quota of 3 is admitted.
    expect((await send(t.key, "c", textMessage(t.numberId))).status).toBe(201);
    clock.advance(1_000);
    const over = await send(t.key, "d", textMessage(t.numberId));
    expect(over.headers.get("Retry-After")).toBeNull();
    await expectError(over, 429, "monthly_message_limit_exceeded");
    for (let i = 0; i < 3; i++) expect((await send(t.key, "b", textMessage(t.numberId))).status).toBe(200);
    expect(await usedMessages(t.key)).toBe(3);
  });

  it("a request refused with 401 or a quota 429 binds no key: the same key succeeds later", async () => {
    const t = await createTenant({ monthlyMessageQuota: 1 });
    const bogusKey = `${t.key.slice(0, -4)}AAAA`;
    await expectError(await send(bogusKey, "later", textMessage(t.numberId)), 401, "unauthorized");
    expect((await send(t.key, "first", textMessage(t.numberId))).status).toBe(201);
    clock.advance(1_000);
    await expectError(
      await send(t.key, "later", textMessage(t.numberId, "other text")),
      429,
      "monthly_message_limit_exceeded",
    );

    // The next calendar month (UTC) renews the quota; the key was never bound.
    const now = new Date(clock.now());
    clock.advance(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1) - clock.now());
    const res = await send(t.key, "later", textMessage(t.numberId));
    expect(res.status).toBe(201);
    expect(await queuedJobIds(t.numberId)).toHaveLength(2);
  });

  it("keeps a key bound for 24 hours; after that the key starts a new message", async () => {
    const t = await createTenant();
    const first = await json<{ jobId: string }>(await send(t.key, "daily", textMessage(t.numberId, "day one")));
    clock.advance(24 * 3_600_000 - 1);
    await expectError(await send(t.key, "daily", textMessage(t.numberId, "day two")), 409, "idempotency_conflict");
    clock.advance(1);
    const second = await send(t.key, "daily", textMessage(t.numberId, "day two"));
    expect(second.status).toBe(201);
    const { jobId } = await json<{ jobId: string }>(second);
    expect(jobId).not.toBe(first.jobId);
    // The first message is still readable and unchanged.
    const old = await json<{ text: { body: string } }>(await api(`/messages/${first.jobId}`, t.key));
    expect(old.text.body).toBe("day one");
  });
});

describe("GET /messages/{id}", () => {
  it("is readable the moment the 201 is sent, with the record's fields", async () => {
    const t = await createTenant();
    const { jobId } = await json<{ jobId: string }>(await send(t.key, "r1", textMessage(t.numberId, "Olá 👋")));
    const res = await api(`/messages/${jobId}`, t.key);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      id: jobId,
      direction: "outbound",
      channelNumberId: t.numberId,
      to: "5511999998888",
      toUserId: null,
      type: "text",
      text: { body: "Olá 👋" },
      status: "queued",
      upstreamMessageId: null,
      error: null,
      outcomeUnknownSince: null,
      createdAt: new Date(clock.now()).toISOString(),
      updatedAt: new Date(clock.now()).toISOString(),
      processingAt: null,
      sentAt: null,
      failedAt: null,
      deliveredAt: null,
      readAt: null,
    });
  });

  it("answers the same 404 for unknown, foreign, malformed and SQL-looking ids", async () => {
    const a = await createTenant();
    const b = await createTenant();
    const { jobId } = await json<{ jobId: string }>(await send(b.key, "x", textMessage(b.numberId)));
    for (const id of [jobId, crypto.randomUUID(), "123", "1'%20OR%20'1'='1", "%2e%2e"]) {
      await expectError(await api(`/messages/${id}`, a.key), 404, "not_found");
    }
    expect((await api(`/messages/${jobId}`, b.key)).status).toBe(200);
  });
});
