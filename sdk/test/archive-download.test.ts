import { describe, expect, it } from "vitest";
import { ApiError, ConnectionError, MessagingClient, MessagingError, type Message } from "../src/index.js";
import { ndjsonValues } from "../src/ndjson.js";

// How an archive download is read: line by line as the bytes arrive, whatever the chunking.
// The real Worker has no archive to offer a fresh `wrangler dev` (a day is archived 30 days
// after it ends): test/api/sdk-in-workers.test.ts downloads a real one inside workerd with a
// controlled clock; here a stub at the client's network edge plays the server for what the
// Worker does not do on demand (chunk boundaries, a 503, a slow or broken body).

const encoder = new TextEncoder();

/** A body delivered in exactly these byte chunks; `cancelled` tells whether the reader gave up on it. */
function chunked(chunks: Uint8Array[], options: { failAfter?: number } = {}) {
  const state = { cancelled: false, pulled: 0 };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (options.failAfter !== undefined && state.pulled === options.failAfter)
        return controller.error(new TypeError("terminated"));
      const next = chunks[state.pulled++];
      if (next) controller.enqueue(next);
      else controller.close();
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { body, state };
}

/** Splits bytes at the given offsets. */
const splitAt = (bytes: Uint8Array, ...offsets: number[]) =>
  [0, ...offsets].map((start, i) => bytes.slice(start, offsets[i] ?? bytes.length));

const collect = async <T>(values: AsyncIterable<T>): Promise<T[]> => {
  const out: T[] = [];
  for await (const v of values) out.push(v);
  return out;
};

describe("NDJSON, line by line", () => {
  it("parses lines split across chunks, inside a line and inside a multi-byte character", async () => {
    const text = '{"n":1,"t":"Olá 👋"}\n{"n":2,"t":"ção"}\r\n\n{"n":3}';
    const bytes = encoder.encode(text);
    const emoji = text.indexOf("👋");
    // Mid-key, inside the 4 bytes of the emoji, and just after the first newline.
    const at = encoder.encode(text.slice(0, emoji)).length;
    const chunks = splitAt(
      bytes,
      3,
      at + 2,
      encoder.encode(text.slice(0, text.indexOf("\n") + 1)).length,
      bytes.length - 2,
    );
    expect(chunks.length).toBe(5);
    const { body } = chunked(chunks);
    // Blank lines are skipped, CRLF is accepted, and the last line needs no newline.
    expect(await collect(ndjsonValues(body))).toEqual([{ n: 1, t: "Olá 👋" }, { n: 2, t: "ção" }, { n: 3 }]);
  });

  it("one byte at a time gives the same values", async () => {
    const lines = Array.from({ length: 20 }, (_, i) => ({ i, body: "x".repeat(i) + "é" }));
    const bytes = encoder.encode(lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
    const { body } = chunked(Array.from(bytes, (b) => Uint8Array.of(b)));
    expect(await collect(ndjsonValues(body))).toEqual(lines);
  });

  it("stopping early cancels the body", async () => {
    const more = Array.from({ length: 5 }, (_, i) => encoder.encode(`{"n":${i + 3}}\n`));
    const { body, state } = chunked([encoder.encode('{"n":1}\n{"n":2}\n'), ...more]);
    for await (const v of ndjsonValues<{ n: number }>(body)) if (v.n === 1) break;
    expect(state.cancelled).toBe(true);
    expect(state.pulled).toBeLessThan(more.length);
  });

  it("a body that breaks off is a ConnectionError after the lines already read; a line that is not JSON is a MessagingError", async () => {
    const broken = chunked([encoder.encode('{"n":1}\n{"n":2}\n{"n":')], { failAfter: 1 });
    const read: unknown[] = [];
    const err = await (async () => {
      for await (const v of ndjsonValues(broken.body)) read.push(v);
    })().catch((e: unknown) => e);
    expect(read).toEqual([{ n: 1 }, { n: 2 }]);
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as ConnectionError).message).toMatch(/broke off after 2 lines/);

    const garbled = chunked([encoder.encode('{"n":1}\n<html>\n'), ...Array.from({ length: 3 }, () => line(1))]);
    const bad = await collect(ndjsonValues(garbled.body)).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(MessagingError);
    expect((bad as Error).message).toMatch(/line 2 .*not JSON/);
    expect(garbled.state.cancelled).toBe(true);
  });
});

const message = (n: number): Message => ({
  id: `0190a0b0-0000-7000-8000-00000000000${n}`,
  direction: "inbound",
  channelNumberId: "6f1c2c4e-8a57-4b5e-9d0e-2f8c9a1b7d33",
  from: "5511977776666",
  fromUserId: null,
  profileName: null,
  username: null,
  replyTo: null,
  forwarded: null,
  reaction: null,
  referral: null,
  system: null,
  type: "text",
  text: { body: `hi ${n}` },
  content: null,
  status: "received",
  upstreamMessageId: null,
  receivedAt: "2026-10-01T10:00:00.000Z",
  createdAt: "2026-10-01T10:00:00.000Z",
  media: null,
});
const line = (n: number) => encoder.encode(`${JSON.stringify(message(n))}\n`);
const ndjsonResponse = (body: ReadableStream<Uint8Array>) =>
  new Response(body, { headers: { "Content-Type": "application/x-ndjson; charset=utf-8" } });
const unavailable = () =>
  Response.json(
    { error: { code: "internal_error", message: "try again", requestId: "req_0123456789abcdef0123456789abcdef" } },
    { status: 503 },
  );

/**
 * A body that, like a real network response, fails when the request's signal aborts, and
 * sends its second line only after `delayMs`.
 */
function slowBody(signal: AbortSignal, delayMs: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      signal.addEventListener("abort", () => controller.error(signal.reason), { once: true });
    },
    async pull(controller) {
      if (sent === 1) await new Promise((r) => setTimeout(r, delayMs));
      if (signal.aborted) return;
      if (sent < 2) controller.enqueue(line(++sent));
      else controller.close();
    },
  });
}

const clientWith = (fetch: (request: Request) => Promise<Response>, retry = {}) =>
  new MessagingClient({
    apiKey: "msg_live_test",
    baseUrl: "http://127.0.0.1:1",
    fetch,
    retry: { initialDelayMs: 1, maxDelayMs: 5, ...retry },
  });

describe("client.messageArchives.download", () => {
  it("retries the request like other reads, then yields the day's messages", async () => {
    const requests: string[] = [];
    const client = clientWith(async (request) => {
      requests.push(`${request.method} ${new URL(request.url).pathname}`);
      return requests.length === 1 ? unavailable() : ndjsonResponse(chunked([line(1), line(2)]).body);
    });
    expect(await collect(client.messageArchives.download("2026-10-01"))).toEqual([message(1), message(2)]);
    expect(requests).toEqual(["GET /api/v1/message-archives/2026-10-01", "GET /api/v1/message-archives/2026-10-01"]);
    // Each iteration downloads again.
    expect(await collect(client.messageArchives.download("2026-10-01"))).toHaveLength(2);
  });

  it("the retry deadline bounds the wait for the answer, not the reading of a long day", async () => {
    const client = clientWith(async (request) => ndjsonResponse(slowBody(request.signal, 300)), { deadlineMs: 100 });
    expect(await collect(client.messageArchives.download("2026-10-01"))).toEqual([message(1), message(2)]);
  });

  it("the caller's signal stops a download half-way", async () => {
    const caller = new AbortController();
    const client = clientWith(async (request) => ndjsonResponse(slowBody(request.signal, 10_000)));
    const read: Message[] = [];
    const err = await (async () => {
      for await (const m of client.messageArchives.download("2026-10-01", { signal: caller.signal })) {
        read.push(m);
        caller.abort(new Error("enough"));
      }
    })().catch((e: unknown) => e);
    expect(read).toEqual([message(1)]);
    expect(err).toEqual(new Error("enough"));
  });

  it("an error answer is the typed ApiError, with nothing yielded", async () => {
    const client = clientWith(async () =>
      Response.json(
        {
          error: {
            code: "not_found",
            message: "Archive not found.",
            requestId: "req_0123456789abcdef0123456789abcdef",
          },
        },
        { status: 404 },
      ),
    );
    const err = await collect(client.messageArchives.download("2026-10-02")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 404, code: "not_found", requestId: "req_0123456789abcdef0123456789abcdef" });
  });
});
