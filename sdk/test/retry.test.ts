import { describe, expect, it } from "vitest";
import { ApiError, ConnectionError, DEFAULT_RETRY, MessagingClient } from "../src/index.js";
import { backoffMs } from "../src/retry.js";

// These cases need answers the real Worker does not give on demand (5xx, endless network
// failures): a stub at the client's network edge plays the server.
const envelope = (status: number, code: string) =>
  Response.json(
    { error: { code, message: code, requestId: "req_0123456789abcdef0123456789abcdef" } },
    { status, headers: { "X-Request-Id": "req_0123456789abcdef0123456789abcdef" } },
  );
const accepted = () =>
  Response.json({ jobId: "42ab2093-bbe3-8710-9a4a-492ccdac721d", status: "created" }, { status: 201 });

function stub(...answers: (() => Response | Promise<Response>)[]) {
  const keys: (string | null)[] = [];
  const fetch = async (request: Request) => {
    keys.push(request.headers.get("idempotency-key"));
    const answer = answers[Math.min(keys.length - 1, answers.length - 1)]!;
    return answer();
  };
  return { fetch, keys };
}

const input = { channelNumberId: "6f1c2c4e-8a57-4b5e-9d0e-2f8c9a1b7d33", to: "5511999998888", text: { body: "x" } };
const client = (fetch: (r: Request) => Promise<Response>, retry = {}) =>
  new MessagingClient({
    apiKey: "msg_live_test",
    baseUrl: "http://127.0.0.1:1",
    fetch,
    retry: { initialDelayMs: 1, maxDelayMs: 5, ...retry },
  });

describe("retry policy", () => {
  it("retries 5xx with the same key until it succeeds", async () => {
    const net = stub(
      () => envelope(503, "internal_error"),
      () => envelope(500, "internal_error"),
      accepted,
    );
    const result = await client(net.fetch).messages.send(input);
    expect(result.status).toBe("created");
    expect(net.keys).toHaveLength(3);
    expect(new Set(net.keys).size).toBe(1);
  });

  it("stops after maxRetries and throws the last ApiError", async () => {
    const net = stub(() => envelope(503, "internal_error"));
    const err = await client(net.fetch, { maxRetries: 2 })
      .messages.send(input)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(503);
    expect(net.keys).toHaveLength(3);
  });

  it.each([
    [400, "invalid_request"],
    [401, "unauthorized"],
    [403, "forbidden"],
    [404, "not_found"],
    [409, "idempotency_conflict"],
  ])("never retries %i", async (status, code) => {
    const net = stub(() => envelope(status, code), accepted);
    await expect(client(net.fetch).messages.send(input)).rejects.toMatchObject({ status, code });
    expect(net.keys).toHaveLength(1);
  });

  it("a 429 without Retry-After (monthly quota used up) is final", async () => {
    const net = stub(() => envelope(429, "monthly_message_limit_exceeded"), accepted);
    await expect(client(net.fetch).messages.send(input)).rejects.toMatchObject({
      status: 429,
      code: "monthly_message_limit_exceeded",
    });
    expect(net.keys).toHaveLength(1);
  });

  it("network errors are retried, then reported as a ConnectionError with the attempts made", async () => {
    const net = stub(() => Promise.reject(new TypeError("fetch failed")));
    const err = await client(net.fetch, { maxRetries: 3 })
      .messages.send(input)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as ConnectionError).attempts).toBe(4);
    expect(new Set(net.keys).size).toBe(1);
  });

  it("the overall deadline bounds the call, waits included", async () => {
    const net = stub(() => Promise.reject(new TypeError("fetch failed")));
    const started = Date.now();
    const err = await client(net.fetch, { maxRetries: 1_000, initialDelayMs: 50, maxDelayMs: 50, deadlineMs: 300 })
      .messages.send(input)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(net.keys.length).toBeGreaterThan(1);
  });

  it("a Retry-After beyond the deadline is not waited for", async () => {
    const net = stub(
      () =>
        new Response(
          JSON.stringify({ error: { code: "rate_limit_exceeded", message: "slow down", requestId: "req_x" } }),
          { status: 429, headers: { "Retry-After": "30" } },
        ),
      accepted,
    );
    const err = await client(net.fetch, { deadlineMs: 2_000 })
      .messages.send(input)
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 429, code: "rate_limit_exceeded", retryAfterSeconds: 30 });
    expect(net.keys).toHaveLength(1);
  });

  // API v2's read mark: the operator's refusal (502) says whether marking again may succeed.
  const refused = (retriable: boolean) => () =>
    Response.json(
      {
        error: {
          code: retriable ? "upstream_unavailable" : "upstream_rejected",
          message: "The operator refused the read mark.",
          requestId: "req_0123456789abcdef0123456789abcdef",
          retriable,
          upstreamCode: retriable ? null : "100",
        },
      },
      { status: 502 },
    );
  const marked = () =>
    Response.json({
      messageId: "0193a4f2-7c1e-7b3a-9c2d-5e8f1a2b3c4d",
      readAt: "2026-11-22T18:40:05.210Z",
      typingIndicator: true,
    });

  it("a 502 that says retriable: false is final, and the ApiError carries the operator's retriable and code", async () => {
    const net = stub(refused(false), marked);
    const err = await client(net.fetch)
      .v2.messages.markRead("0193a4f2-7c1e-7b3a-9c2d-5e8f1a2b3c4d", { typing: true })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 502, code: "upstream_rejected", retriable: false, upstreamCode: "100" });
    expect(net.keys).toHaveLength(1);
  });

  it("a 502 that says retriable: true is retried like any 5xx", async () => {
    const seen: { url: string; method: string; body: string }[] = [];
    const net = stub(refused(true), marked);
    const mark = await client(async (request) => {
      seen.push({ url: request.url, method: request.method, body: await request.clone().text() });
      return net.fetch(request);
    }).v2.messages.markRead("0193a4f2-7c1e-7b3a-9c2d-5e8f1a2b3c4d", { typing: true });
    expect(mark).toEqual({
      messageId: "0193a4f2-7c1e-7b3a-9c2d-5e8f1a2b3c4d",
      readAt: "2026-11-22T18:40:05.210Z",
      typingIndicator: true,
    });
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual({
      url: "http://127.0.0.1:1/api/v2/messages/0193a4f2-7c1e-7b3a-9c2d-5e8f1a2b3c4d/read",
      method: "POST",
      body: '{"typing":true}',
    });
  });

  it("an error without the operator's fields has retriable and upstreamCode null", async () => {
    const net = stub(() => envelope(404, "not_found"));
    const err = await client(net.fetch)
      .v2.messages.markRead("0193a4f2-7c1e-7b3a-9c2d-5e8f1a2b3c4d")
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 404, code: "not_found", retriable: null, upstreamCode: null });
  });

  it("a media upload and a deletion are sent once, never retried; the upload's body is the file's bytes", async () => {
    const seen: { method: string; url: string; type: string | null; length: string | null; body: number[] }[] = [];
    const net = stub(() => envelope(503, "internal_error"));
    const media = client(async (request) => {
      seen.push({
        method: request.method,
        url: request.url,
        type: request.headers.get("content-type"),
        length: request.headers.get("content-length"),
        body: [...new Uint8Array(await request.clone().arrayBuffer())],
      });
      return net.fetch(request);
    }).v2.media;
    await expect(
      media.upload(new Uint8Array([1, 2, 3]), { contentType: "image/png", filename: "a b.png" }),
    ).rejects.toMatchObject({ status: 503 });
    await expect(media.delete("0193b4f2-7c1e-7a3b-9d2e-5f6a7b8c9d0f")).rejects.toMatchObject({ status: 503 });
    expect(seen).toEqual([
      {
        method: "POST",
        url: "http://127.0.0.1:1/api/v2/media?filename=a%20b.png",
        type: "image/png",
        length: "3",
        body: [1, 2, 3],
      },
      {
        method: "DELETE",
        url: "http://127.0.0.1:1/api/v2/media/0193b4f2-7c1e-7a3b-9d2e-5f6a7b8c9d0f",
        type: null,
        length: null,
        body: [],
      },
    ]);
  });

  it("an answer that is not the API's envelope is still a typed error", async () => {
    const net = stub(() => new Response("<html>bad gateway</html>", { status: 502 }));
    const err = await client(net.fetch, { maxRetries: 0 })
      .me()
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 502, code: "unexpected_response", requestId: null });
  });

  it("backoff grows exponentially with jitter and is capped", () => {
    const o = DEFAULT_RETRY;
    expect([backoffMs(0, o, () => 0), backoffMs(0, o, () => 1)]).toEqual([250, 500]);
    expect([backoffMs(2, o, () => 0), backoffMs(2, o, () => 1)]).toEqual([1_000, 2_000]);
    expect(backoffMs(10, o, () => 1)).toBe(o.maxDelayMs);
  });
});
