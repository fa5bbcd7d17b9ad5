import { describe, expect, it } from "vitest";
import { ApiError } from "../src/index.js";
import { createTenant, recordingFetch } from "./helpers/tenant.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("client.messages.send against the Worker", () => {
  it("sends with a generated Idempotency-Key and reads the message back", async () => {
    const t = await createTenant();
    const net = recordingFetch();
    const client = t.client({ fetch: net.fetch });
    const sent = await client.messages.send({
      channelNumberId: t.numberId,
      to: "5511999998888",
      text: { body: "Hello from the SDK" },
    });
    expect(sent).toEqual({
      jobId: expect.stringMatching(UUID),
      status: "created",
      idempotencyKey: expect.stringMatching(UUID),
    });
    expect(net.seen.map((s) => s.idempotencyKey)).toEqual([sent.idempotencyKey]);

    const message = await client.messages.get(sent.jobId);
    expect(message).toMatchObject({
      id: sent.jobId,
      channelNumberId: t.numberId,
      to: "5511999998888",
      text: { body: "Hello from the SDK" },
    });
  });

  it("a response lost after the server handled the send: the retry reuses the key and exactly one message exists", async () => {
    const t = await createTenant();
    const net = recordingFetch({ dropResponse: (i, req) => i === 0 && req.method === "POST" });
    const client = t.client({ fetch: net.fetch, retry: { initialDelayMs: 50 } });

    const sent = await client.messages.send({
      channelNumberId: t.numberId,
      to: "5511999998888",
      text: { body: "once" },
    });

    expect(net.seen.map((s) => s.status)).toEqual(["network error", 200]);
    expect(new Set(net.seen.map((s) => s.idempotencyKey))).toEqual(new Set([sent.idempotencyKey]));
    // The server had accepted the first attempt: the retry is its identical replay.
    expect(sent.status).toBe("duplicado_identico");
    const usage = await client.usage();
    expect(usage.messages.used).toBe(1);
    expect((await client.messages.get(sent.jobId)).id).toBe(sent.jobId);
  });

  it("a caller's own key is used as given, on every attempt", async () => {
    const t = await createTenant();
    const client = t.client();
    const key = `order-${crypto.randomUUID()}`;
    const first = await client.messages.send(
      { channelNumberId: t.numberId, to: "5511999998888", text: { body: "mine" } },
      { idempotencyKey: key },
    );
    const again = await client.messages.send(
      { channelNumberId: t.numberId, to: "5511999998888", text: { body: "mine" } },
      { idempotencyKey: key },
    );
    expect(first).toMatchObject({ status: "created", idempotencyKey: key });
    expect(again).toEqual({ jobId: first.jobId, status: "duplicado_identico", idempotencyKey: key });
  });

  it("honours Retry-After on a 429 and then succeeds", async () => {
    const t = await createTenant();
    const net = recordingFetch();
    const client = t.client({ fetch: net.fetch });
    // Three at once on one number: the number admits 2 per second, the third is told when to come back.
    const results = await Promise.all(
      [1, 2, 3].map((i) =>
        client.messages.send({ channelNumberId: t.numberId, to: "5511999998888", text: { body: `burst ${i}` } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(["created", "created", "created"]);
    const refused = net.seen.filter((s) => s.status === 429);
    expect(refused).toHaveLength(1);
    // Retry-After was 1 (second): the one retry waited that long, and was admitted.
    const attempts = net.seen.filter((s) => s.idempotencyKey === refused[0]!.idempotencyKey);
    expect(attempts.map((s) => s.status)).toEqual([429, 201]);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(1_000);
    expect((await client.usage()).messages.used).toBe(3);
  });
});

describe("typed errors", () => {
  const expectApiError = async (promise: Promise<unknown>, status: number, code: string): Promise<ApiError> => {
    const err = await promise.then(
      () => {
        throw new Error(`expected ${status} ${code}, the call succeeded`);
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    const api = err as ApiError;
    expect({ status: api.status, code: api.code }).toEqual({ status, code });
    expect(api.requestId).toMatch(/^req_[0-9a-f]{32}$/);
    expect(api.message.length).toBeGreaterThan(0);
    return api;
  };

  it("400, 401, 403, 404 and 409 carry status, code, message, requestId and details, and are never retried", async () => {
    const t = await createTenant();
    const other = await createTenant();
    const net = recordingFetch();
    const client = t.client({ fetch: net.fetch });

    const invalid = await expectApiError(
      client.messages.send({ channelNumberId: t.numberId, to: "+5511999998888", text: { body: "x" } }),
      400,
      "invalid_request",
    );
    expect(invalid.details).toContainEqual({
      path: "to",
      rule: "no_plus",
      message: expect.stringMatching(/leading '\+'/),
    });

    await expectApiError(t.client({ apiKey: "msg_live_not-a-key", fetch: net.fetch }).me(), 401, "unauthorized");
    await expectApiError(
      client.messages.send({ channelNumberId: other.numberId, to: "5511999998888", text: { body: "x" } }),
      403,
      "forbidden",
    );
    await expectApiError(client.messages.get(crypto.randomUUID()), 404, "not_found");

    const key = crypto.randomUUID();
    await client.messages.send(
      { channelNumberId: t.numberId, to: "5511999998888", text: { body: "first" } },
      { idempotencyKey: key },
    );
    await expectApiError(
      client.messages.send(
        { channelNumberId: t.numberId, to: "5511999998888", text: { body: "different" } },
        { idempotencyKey: key },
      ),
      409,
      "idempotency_conflict",
    );
    // One request per call: none of these was retried.
    expect(net.seen.map((s) => s.status)).toEqual([400, 401, 403, 404, 201, 409]);
  });
});
