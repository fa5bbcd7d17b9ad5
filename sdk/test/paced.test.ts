import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  ApiError,
  ConnectionError,
  MessagingClient,
  type PaceLimit,
  type PacedProgress,
  type SendMessageInputV2,
} from "../src/index.js";
import { createTenant, recordingFetch } from "./helpers/tenant.js";

// client.v2.messages.sendPaced against a fake gateway at the client's network edge that keeps the
// API's send limits on the test clock (vitest's fake timers): each request takes a while to arrive
// and its answer a while to come back, the fake decides at arrival, as the real one decides when
// it accepts. The last case runs against the real Worker.

const NUMBERS = [
  "6f1c2c4e-8a57-4b5e-9d0e-2f8c9a1b7d33",
  "0b5e7c1d-3f2a-4e6b-8c9d-1a2b3c4d5e6f",
  "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a",
];

const message = (i: number, channelNumberId = NUMBERS[0]!): SendMessageInputV2 => ({
  channelNumberId,
  to: "5511999998888",
  text: { body: `m${i}` },
});

interface Request_ {
  index: number;
  key: string;
  numberId: string;
  body: string;
  startedAt: number;
  arrivedAt: number;
  answeredAt: number | null;
  status: number | "lost" | "aborted";
  scope?: "number" | "workspace";
  retryAfter?: number;
}

/** A test clock's pause, cut short by `signal` like a connection dropped by the client. */
const pause = (ms: number, signal?: AbortSignal | null) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  Response.json(body, { status, headers: { "X-Request-Id": "req_0123456789abcdef0123456789abcdef", ...headers } });
const envelope = (status: number, code: string, headers: Record<string, string> = {}) =>
  json(status, { error: { code, message: code, requestId: "req_0123456789abcdef0123456789abcdef" } }, headers);

/**
 * The gateway's send limits and idempotency, on the test clock. `script` may answer a request
 * instead (by its position and body): a status of its own, or "lose" (accept it, then drop the
 * answer on the way back).
 */
function fakeGateway(
  options: {
    perNumber?: PaceLimit;
    perWorkspace?: PaceLimit;
    quota?: number;
    latency?: (index: number) => [number, number];
    script?: (index: number, body: string, key: string) => Response | "lose" | undefined;
  } = {},
) {
  const perNumber = options.perNumber ?? { count: 2, windowMs: 1_000 };
  const perWorkspace = options.perWorkspace ?? { count: 1_200, windowMs: 60_000 };
  const latency = options.latency ?? ((i: number) => [20 + ((i * 37) % 230), 10 + ((i * 53) % 190)]);
  const requests: Request_[] = [];
  const bound = new Map<string, { jobId: string; body: string }>();
  const accepted: { key: string; jobId: string; body: string; numberId: string; at: number }[] = [];

  const decide = (r: Request_): Response | "lose" => {
    const scripted = options.script?.(r.index, r.body, r.key);
    if (scripted instanceof Response) return scripted;
    const earlier = bound.get(r.key);
    if (earlier)
      return earlier.body === r.body
        ? json(200, { jobId: earlier.jobId, status: "duplicado_identico" })
        : envelope(409, "idempotency_conflict");
    if (options.quota !== undefined && accepted.length >= options.quota)
      return envelope(429, "monthly_message_limit_exceeded");
    const now = Date.now();
    const windows = [
      { scope: "number" as const, limit: perNumber, at: accepted.filter((a) => a.numberId === r.numberId) },
      { scope: "workspace" as const, limit: perWorkspace, at: accepted },
    ];
    for (const { scope, limit, at } of windows) {
      const inWindow = at.filter((a) => a.at > now - limit.windowMs);
      if (inWindow.length >= limit.count) {
        r.scope = scope;
        r.retryAfter = Math.max(1, Math.ceil((inWindow[0]!.at + limit.windowMs - now) / 1000));
        return envelope(429, "rate_limit_exceeded", {
          "Retry-After": String(r.retryAfter),
          RateLimit: `"${scope}";r=0;t=${r.retryAfter}`,
        });
      }
    }
    const jobId = crypto.randomUUID();
    bound.set(r.key, { jobId, body: r.body });
    accepted.push({ key: r.key, jobId, body: r.body, numberId: r.numberId, at: now });
    return scripted === "lose" ? "lose" : json(201, { jobId, status: "created" });
  };

  const fetch = async (request: Request): Promise<Response> => {
    const startedAt = Date.now();
    const body = await request.text();
    const r: Request_ = {
      index: requests.length,
      key: request.headers.get("idempotency-key") ?? "",
      numberId: (JSON.parse(body) as { channelNumberId: string }).channelNumberId,
      body,
      startedAt,
      arrivedAt: 0,
      answeredAt: null,
      status: "aborted",
    };
    requests.push(r);
    const [toServer, back] = latency(r.index);
    await pause(toServer, request.signal);
    r.arrivedAt = Date.now();
    const answer = decide(r);
    await pause(back, request.signal);
    r.answeredAt = Date.now();
    if (answer === "lose") {
      r.status = "lost";
      throw new TypeError("fetch failed: the connection was reset (simulated)");
    }
    r.status = answer.status;
    return answer;
  };
  return { fetch, requests, accepted };
}

const client = (fetch: (r: Request) => Promise<Response>, retry = {}) =>
  new MessagingClient({
    apiKey: "msg_live_test",
    baseUrl: "http://127.0.0.1:1",
    fetch,
    retry: { initialDelayMs: 200, maxDelayMs: 1_000, ...retry },
  });

/** Runs the test clock until `work` settles: timers fire in order, real I/O (reading a body) gets its turns. */
async function onTestClock<T>(work: Promise<T>): Promise<T> {
  let settled = false;
  void work.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let steps = 0; !settled; steps++) {
    if (steps > 200_000) throw new Error("the work did not settle on the test clock");
    // What is under way without a timer (a body being read) finishes before the clock moves.
    await new Promise((resolve) => setImmediate(resolve));
    if (!settled && vi.getTimerCount() > 0) await vi.advanceTimersToNextTimerAsync();
  }
  return work;
}

/** Each message's body → its requests, in order. */
const byMessage = (requests: Request_[]) => {
  const groups = new Map<string, Request_[]>();
  for (const r of requests) groups.set(r.body, [...(groups.get(r.body) ?? []), r]);
  return groups;
};

describe("client.v2.messages.sendPaced on the test clock", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"], now: Date.parse("2026-11-27T09:00:00Z") });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("paces each number at 2 a second: no 429, each message accepted once, in list order per number", async () => {
    const net = fakeGateway();
    // 3 numbers, 8 messages each, interleaved in the list.
    const messages = Array.from({ length: 24 }, (_, i) => message(i, NUMBERS[i % 3]));
    const progress: PacedProgress[] = [];
    const started = Date.now();
    const result = await onTestClock(
      client(net.fetch).v2.messages.sendPaced(messages, { onProgress: (p) => progress.push(p) }),
    );

    expect(net.requests.map((r) => r.status).filter((s) => s !== 201)).toEqual([]);
    expect(result).toMatchObject({ accepted: 24, failed: 0, notSent: 0 });
    expect(result.outcomes.map((o) => o.index)).toEqual(messages.map((_, i) => i));
    expect(result.outcomes.every((o) => o.outcome === "accepted" && o.status === "created" && o.attempts === 1)).toBe(
      true,
    );
    expect(new Set(net.accepted.map((a) => a.key)).size).toBe(24);
    for (const o of result.outcomes)
      expect(net.accepted[net.accepted.findIndex((a) => a.key === o.idempotencyKey)]!.body).toBe(
        JSON.stringify(messages[o.index]),
      );
    for (const number of NUMBERS) {
      const order = net.accepted.filter((a) => a.numberId === number).map((a) => a.body);
      expect(order).toEqual(messages.filter((m) => m.channelNumberId === number).map((m) => JSON.stringify(m)));
    }
    // At the limit, not far below it: 8 messages of one number in 4 windows of a second, plus the answers' time.
    expect(Date.now() - started).toBeLessThan(6_000);
    expect(progress).toHaveLength(24);
    expect(progress.map((p) => p.accepted)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    expect(progress.at(-1)).toMatchObject({ total: 24, accepted: 24, failed: 0, notSent: 0 });
  });

  it("paces the workspace at 1200 a minute across numbers: the 1201st waits for the first to leave the window", async () => {
    const net = fakeGateway({ latency: () => [5, 5] });
    // 1,250 messages, two per number: the numbers' limits never bind, the workspace's does.
    const messages = Array.from({ length: 1_250 }, (_, i) => message(i, `num-${Math.floor(i / 2)}`));
    const result = await onTestClock(client(net.fetch).v2.messages.sendPaced(messages));

    expect(result.accepted).toBe(1_250);
    expect(net.requests.filter((r) => r.status !== 201)).toEqual([]);
    const at = net.accepted.map((a) => a.at).sort((a, b) => a - b);
    expect(at[1_200]! - at[0]!).toBeGreaterThanOrEqual(60_000);
    expect(at[1_199]! - at[0]!).toBeLessThan(10_000);
  });

  it("waits out Retry-After when someone else uses a number's capacity, each message accepted once under one key", async () => {
    // The gateway admits one a second on this number (another process sends too): the helper meets 429s.
    const net = fakeGateway({ perNumber: { count: 1, windowMs: 1_000 } });
    const messages = Array.from({ length: 6 }, (_, i) => message(i));
    const result = await onTestClock(client(net.fetch).v2.messages.sendPaced(messages));

    expect(result).toMatchObject({ accepted: 6, failed: 0, notSent: 0 });
    const refused = net.requests.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const [body, requests] of byMessage(net.requests)) {
      expect(new Set(requests.map((r) => r.key)).size, body).toBe(1);
      expect(
        requests.filter((r) => r.status === 201),
        body,
      ).toHaveLength(1);
    }
    expect(net.accepted).toHaveLength(6);
    // After a 429 the number's next request waits the Retry-After, from the moment the answer came.
    for (const r of refused) {
      const next = net.requests.find((n) => n.index > r.index && n.numberId === r.numberId)!;
      expect(next.startedAt - r.answeredAt!).toBeGreaterThanOrEqual(r.retryAfter! * 1000);
      expect(next.key).toBe(r.key);
    }
  });

  it("a 429 of the workspace's limit holds every number until its Retry-After", async () => {
    // Another sender uses most of the workspace's minute: the gateway admits 3 in any 2 seconds.
    const net = fakeGateway({ perWorkspace: { count: 3, windowMs: 2_000 } });
    const messages = Array.from({ length: 9 }, (_, i) => message(i, NUMBERS[i % 3]));
    const result = await onTestClock(client(net.fetch).v2.messages.sendPaced(messages));

    expect(result.accepted).toBe(9);
    expect(net.accepted).toHaveLength(9);
    const refused = net.requests.filter((r) => r.scope === "workspace");
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      const until = r.answeredAt! + r.retryAfter! * 1000;
      const during = net.requests.filter((n) => n.startedAt > r.answeredAt! && n.startedAt < until);
      expect(during.map((n) => `${n.body} at ${n.startedAt - r.answeredAt!} ms`)).toEqual([]);
    }
  });

  it("an answer lost on the way back is retried under the same key: the replay is its outcome, nothing sent twice", async () => {
    const net = fakeGateway({ script: (i) => (i === 1 ? "lose" : undefined) });
    const messages = Array.from({ length: 3 }, (_, i) => message(i));
    const result = await onTestClock(client(net.fetch).v2.messages.sendPaced(messages));

    expect(net.requests.map((r) => r.status)).toEqual([201, "lost", 200, 201]);
    expect(net.requests[2]!.key).toBe(net.requests[1]!.key);
    expect(net.accepted).toHaveLength(3);
    expect(result.outcomes[1]).toMatchObject({
      outcome: "accepted",
      status: "duplicado_identico",
      jobId: net.accepted[1]!.jobId,
      attempts: 2,
    });
    expect(result.accepted).toBe(3);
  });

  it("retries a 5xx with back-off under the same key; a 400 fails only its message, the others go on", async () => {
    const net = fakeGateway({
      script: (i, body) =>
        body.includes('"m1"')
          ? envelope(400, "invalid_request")
          : body.includes('"m2"') && i === 2
            ? envelope(503, "internal_error")
            : undefined,
    });
    const messages = Array.from({ length: 4 }, (_, i) => message(i));
    const result = await onTestClock(client(net.fetch).v2.messages.sendPaced(messages));

    expect(result).toMatchObject({ accepted: 3, failed: 1, notSent: 0 });
    expect(result.outcomes[1]).toMatchObject({ outcome: "failed", attempts: 1 });
    const invalid = result.outcomes[1]!.outcome === "failed" ? result.outcomes[1]!.error : null;
    expect(invalid).toBeInstanceOf(ApiError);
    expect(invalid).toMatchObject({ status: 400, code: "invalid_request" });
    expect(result.outcomes[2]).toMatchObject({ outcome: "accepted", status: "created", attempts: 2 });
    const m2 = byMessage(net.requests).get(JSON.stringify(messages[2]))!;
    expect(m2.map((r) => r.status)).toEqual([503, 201]);
    expect(m2[1]!.key).toBe(m2[0]!.key);
    expect(m2[1]!.startedAt - m2[0]!.answeredAt!).toBeGreaterThanOrEqual(100);
    expect(net.accepted.map((a) => a.body)).toEqual([0, 2, 3].map((i) => JSON.stringify(messages[i])));
  });

  it("a 5xx that outlasts the retries fails its message with the last error; a network error with a ConnectionError", async () => {
    const net = fakeGateway({
      script: (_, body) => (body.includes('"m0"') ? envelope(503, "internal_error") : undefined),
    });
    const failing = async (request: Request) =>
      (await request.clone().text()).includes('"m1"')
        ? Promise.reject(new TypeError("fetch failed"))
        : net.fetch(request);
    const result = await onTestClock(
      client(failing, { maxRetries: 2 }).v2.messages.sendPaced([message(0), message(1), message(2)]),
    );
    expect(result).toMatchObject({ accepted: 1, failed: 2 });
    expect(result.outcomes[0]).toMatchObject({ outcome: "failed", attempts: 3, error: { status: 503 } });
    expect(result.outcomes[1]).toMatchObject({ outcome: "failed", attempts: 3 });
    expect(result.outcomes[1]!.outcome === "failed" && result.outcomes[1]!.error).toBeInstanceOf(ConnectionError);
  });

  it("the monthly quota (a 429 without Retry-After) stops the batch: nothing more is sent", async () => {
    const net = fakeGateway({ quota: 3 });
    const messages = Array.from({ length: 6 }, (_, i) => message(i));
    const result = await onTestClock(client(net.fetch).v2.messages.sendPaced(messages));

    expect(net.requests.map((r) => r.status)).toEqual([201, 201, 201, 429]);
    expect(result).toMatchObject({ accepted: 3, failed: 1, notSent: 2 });
    expect(result.outcomes[3]).toMatchObject({
      outcome: "failed",
      error: { status: 429, code: "monthly_message_limit_exceeded" },
    });
    expect(result.outcomes.slice(4)).toMatchObject([
      { outcome: "not_sent", attempts: 0, error: { code: "monthly_message_limit_exceeded" } },
      { outcome: "not_sent", attempts: 0, error: { code: "monthly_message_limit_exceeded" } },
    ]);
  });

  it("cancelling stops it: the request on the way is aborted, the rest are not sent, and it resolves with what went", async () => {
    const net = fakeGateway({ latency: () => [300, 300] });
    const stop = new AbortController();
    const messages = Array.from({ length: 6 }, (_, i) => message(i));
    const run = client(net.fetch).v2.messages.sendPaced(messages, {
      signal: stop.signal,
      // Cancelled while the third request is on its way.
      onProgress: (p) => p.accepted === 2 && setTimeout(() => stop.abort(new Error("the operator went home")), 800),
    });
    const result = await onTestClock(run);

    expect(net.requests.map((r) => r.status)).toEqual([201, 201, "aborted"]);
    expect(result).toMatchObject({ accepted: 2, failed: 1, notSent: 3 });
    expect(result.outcomes[2]).toMatchObject({
      outcome: "failed",
      attempts: 1,
      error: { message: "the operator went home" },
    });
    expect(result.outcomes.slice(3).map((o) => o.outcome)).toEqual(["not_sent", "not_sent", "not_sent"]);
    // Every outcome names its key: a second run with the same keys sends only what did not go.
    expect(new Set(result.outcomes.map((o) => o.idempotencyKey)).size).toBe(6);
  });

  it("uses the caller's keys on every attempt, and a batch run again is answered as replays", async () => {
    const net = fakeGateway({ script: (i) => (i === 0 ? envelope(503, "internal_error") : undefined) });
    const messages = Array.from({ length: 3 }, (_, i) => message(i));
    const keyOf = (_: SendMessageInputV2, i: number) => `order-1042-${i}`;
    const first = await onTestClock(client(net.fetch).v2.messages.sendPaced(messages, { idempotencyKey: keyOf }));
    const again = await onTestClock(client(net.fetch).v2.messages.sendPaced(messages, { idempotencyKey: keyOf }));

    expect(net.requests.map((r) => r.key)).toEqual([
      "order-1042-0",
      "order-1042-0",
      "order-1042-1",
      "order-1042-2",
      "order-1042-0",
      "order-1042-1",
      "order-1042-2",
    ]);
    expect(first.outcomes.map((o) => o.outcome === "accepted" && o.status)).toEqual(["created", "created", "created"]);
    expect(again.outcomes.map((o) => o.outcome === "accepted" && o.status)).toEqual([
      "duplicado_identico",
      "duplicado_identico",
      "duplicado_identico",
    ]);
    expect(again.outcomes.map((o) => o.outcome === "accepted" && o.jobId)).toEqual(
      first.outcomes.map((o) => o.outcome === "accepted" && o.jobId),
    );
    expect(net.accepted).toHaveLength(3);
  });

  it("refuses a list in which two messages share a key, or limits that admit nothing, before sending anything", async () => {
    const net = fakeGateway();
    const run = client(net.fetch).v2.messages.sendPaced([message(0), message(1)], { idempotencyKey: () => "same" });
    await expect(run).rejects.toThrow(/messages 0 and 1 have the same idempotencyKey/);
    const never = client(net.fetch).v2.messages.sendPaced([message(0)], {
      limits: { perNumber: { count: 0, windowMs: 1_000 } },
    });
    await expect(never).rejects.toThrow(/limits.perNumber needs a whole count of at least 1/);
    expect(net.requests).toEqual([]);
  });
});

describe("client.v2.messages.sendPaced against the Worker", () => {
  it("sends a batch over two numbers without a single 429, each message once", async () => {
    const t = await createTenant();
    const second = await t.addNumber();
    const net = recordingFetch();
    const client = t.client({ fetch: net.fetch });
    const messages = [
      ...Array.from({ length: 5 }, (_, i) => message(i, t.numberId)),
      ...Array.from({ length: 2 }, (_, i) => message(5 + i, second)),
    ];
    const result = await client.v2.messages.sendPaced(messages);

    expect(net.seen.map((s) => s.status)).toEqual(messages.map(() => 201));
    expect(result).toMatchObject({ accepted: 7, failed: 0, notSent: 0 });
    const listed = await client.v2.messages.list({ direction: "outbound" }).toArray();
    expect(listed.map((m) => m.id).sort()).toEqual(
      result.outcomes.map((o) => (o.outcome === "accepted" ? o.jobId : "")).sort(),
    );
    // One number's messages in list order (the list is newest first).
    expect(
      listed
        .filter((m) => m.channelNumberId === t.numberId)
        .map((m) => m.text?.body)
        .reverse(),
    ).toEqual(["m0", "m1", "m2", "m3", "m4"]);
  });
});
