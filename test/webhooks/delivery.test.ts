import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import { describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import type { WebhookEvent, WebhookQueueMessage } from "../../src/messages/events";
import { api, expectError, json } from "../helpers/http";
import { connectSandboxNumber, createTenant, type Tenant } from "../helpers/fixtures";
import { answers, hangs, mockNetworkPerTest, type Seen } from "../helpers/webhook-net";
import {
  deliveryLogOf,
  deliveryState,
  eventOfMessage,
  statusEvent as eventAbout,
  type DeliveryView,
} from "../helpers/events";
import { fakeClock } from "../helpers/clock";

const SCHEDULE = [0, 5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];
const HOUR = 3_600_000;
const PUBLIC_V4 = "93.184.216.34";

const net = mockNetworkPerTest();
let hostSeq = 0;

/** A fresh public host name, resolved by the mocked DoH resolver. */
function newHost(): string {
  const host = `r${++hostSeq}-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
  net.dns.set(host, [PUBLIC_V4]);
  return host;
}

interface Configured {
  tenant: Tenant;
  webhookId: string;
  secret: string;
  url: string;
}

async function configure(
  tenant: Tenant,
  numberId = tenant.numberId,
  url = `https://${newHost()}/hook`,
): Promise<Configured> {
  const res = await api("/webhooks", tenant.key, { method: "POST", json: { channelNumberId: numberId, url } });
  if (res.status !== 201) throw new Error(`configure: ${res.status} ${await res.text()}`);
  const body = await json<{ id: string; secret: string; url: string }>(res);
  return { tenant, webhookId: body.id, secret: body.secret, url: body.url };
}

async function setUp(): Promise<Configured> {
  return configure(await createTenant());
}

/** A `message.status` event of the tenant's number, as the publisher queues it (the consumer needs nothing stored). */
function statusEvent(tenant: Tenant, numberId = tenant.numberId): WebhookEvent {
  return eventAbout(tenant.workspaceId, numberId);
}

/**
 * Runs the Worker's real queue handler on one batch, as the Queues runtime
 * would, and returns what it acked and retried. The plugin's queue result does
 * not keep `delaySeconds`, so each message's `retry` is observed (and still runs).
 */
async function runQueue(queue: string, items: { event: WebhookEvent; attempts?: number }[], workerEnv: Env = env) {
  const batch = createMessageBatch<WebhookQueueMessage>(
    queue,
    items.map(({ event, attempts = 1 }, i) => ({
      id: `msg-${i}-${event.id}`,
      timestamp: new Date(),
      attempts,
      body: { events: [event] },
    })),
  );
  const retries = batch.messages.map((m) => vi.spyOn(m, "retry"));
  const ctx = createExecutionContext();
  await worker.queue(batch, workerEnv, ctx);
  const result = await getQueueResult(batch, ctx);
  const acked = (i: number) => result.ackAll || result.explicitAcks.includes(batch.messages[i]!.id);
  const delayOf = (i: number): number | undefined => {
    const call = retries[i]!.mock.calls[0];
    return call ? (call[0]?.delaySeconds ?? 0) : undefined;
  };
  return {
    result,
    acked,
    delayOf,
    retried: (i: number) => result.retryMessages.some((r) => r.msgId === batch.messages[i]!.id),
  };
}

/** Runs one message through the consumer with `attempts` as the queue would count it. */
const deliver = (event: WebhookEvent, attempts = 1, workerEnv: Env = env) =>
  runQueue("webhook-deliveries", [{ event, attempts }], workerEnv);

const deliveryLog = (c: Configured, query = ""): Promise<{ data: DeliveryView[]; nextCursor: string | null }> =>
  deliveryLogOf(c.tenant.key, c.webhookId, query);

/** Where the event's delivery stands, from its latest attempt in the webhook's log. */
const eventState = (c: Configured, id: string) => deliveryState(c.tenant.key, c.webhookId, id);

async function webhookView(c: Configured) {
  const list = await json<{
    data: { id: string; status: string; failingSince: string | null; disabledAt: string | null }[];
  }>(await api("/webhooks", c.tenant.key));
  return list.data.find((w) => w.id === c.webhookId)!;
}

/** What a customer does with each request: verify it with a Standard Webhooks library. */
const verify = (secret: string, seen: Seen) => new Webhook(secret).verify(seen.body, seen.headers);

const envelope = (event: WebhookEvent) => ({ type: event.type, timestamp: event.createdAt, data: event.data });

describe("webhook delivery", () => {
  it("a 200 is one signed delivery that a Standard Webhooks library verifies", async () => {
    const c = await setUp();
    net.receivers.set(c.url, answers(200));
    const event = statusEvent(c.tenant);

    const run = await deliver(event);
    expect(run.acked(0)).toBe(true);
    expect(run.retried(0)).toBe(false);

    expect(net.seen).toHaveLength(1);
    const req = net.seen[0]!;
    expect(req).toMatchObject({ method: "POST", url: c.url, redirect: "manual" });
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["webhook-id"]).toBe(event.id);
    expect(Number(req.headers["webhook-timestamp"])).toBeCloseTo(Date.now() / 1000, -1);
    expect(req.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(verify(c.secret, req)).toEqual(envelope(event));
    expect(JSON.parse(req.body)).toEqual(envelope(event));

    const log = await deliveryLog(c);
    expect(log.data).toHaveLength(1);
    expect(log.data[0]).toMatchObject({
      eventId: event.id,
      eventType: "message.status",
      attempt: 1,
      statusCode: 200,
      error: null,
      outcome: "delivered",
    });
    expect(log.data[0]!.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it("500, 500, 200: three attempts with the same webhook-id, retried at once then after 5 s, then delivered", async () => {
    const start = Date.UTC(2036, 0, 1, 12);
    const clock = fakeClock(start);
    const c = await setUp();
    net.receivers.set(c.url, answers(500, 500, 200));
    const event = statusEvent(c.tenant);

    const first = await deliver(event, 1);
    expect(first.retried(0)).toBe(true);
    expect(first.delayOf(0)).toBe(0);
    expect(await eventState(c, event.id)).toBe("retrying");

    clock.set(start + 1_000);
    const second = await deliver(event, 2);
    expect(second.retried(0)).toBe(true);
    expect(second.delayOf(0)).toBe(5);

    clock.set(start + 7_000);
    const third = await deliver(event, 3);
    expect(third.acked(0)).toBe(true);
    expect(third.retried(0)).toBe(false);

    expect(net.seen.map((s) => s.headers["webhook-id"])).toEqual([event.id, event.id, event.id]);
    // Each attempt is signed for its own time.
    expect(net.seen.map((s) => s.headers["webhook-timestamp"])).toEqual(
      [start, start + 1_000, start + 7_000].map((ms) => String(Math.floor(ms / 1000))),
    );
    for (const seen of net.seen) expect(verify(c.secret, seen)).toEqual(envelope(event));

    const log = await deliveryLog(c);
    expect(log.data.map((d) => [d.attempt, d.outcome, d.statusCode])).toEqual([
      [3, "delivered", 200],
      [2, "failed", 500],
      [1, "failed", 500],
    ]);
    expect(log.data[1]!.error).toMatch(/HTTP 500/);
    expect(await eventState(c, event.id)).toBe("delivered");
    // The success ended the failure streak.
    expect((await webhookView(c)).failingSince).toBeNull();
  });

  it("a receiver that never answers times out (WEBHOOK_TIMEOUT_MS) and is retried", async () => {
    const c = await setUp();
    net.receivers.set(c.url, hangs);
    const event = statusEvent(c.tenant);

    const started = performance.now();
    const run = await deliver(event, 1, { ...env, WEBHOOK_TIMEOUT_MS: "50" });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(run.retried(0)).toBe(true);
    expect(run.delayOf(0)).toBe(0);

    const [row] = (await deliveryLog(c)).data;
    expect(row).toMatchObject({ attempt: 1, outcome: "failed", statusCode: null, error: "Timed out after 50 ms." });
  });

  it.each([
    ["dns", new TypeError("DNS lookup failed for internal-db.corp.example: NXDOMAIN")],
    ["connect", new TypeError("connect ECONNREFUSED 10.0.0.12:6379")],
    [
      "tls",
      new TypeError("TLS peer's certificate is not trusted; reason = self signed certificate (CN=vault.internal)"),
    ],
    ["reset", new TypeError("Network connection lost.")],
    ["network", new Error("kj/async-io.c++:1234: internal error; something about 172.16.4.4")],
  ])("a %s failure is logged as its category, never as the runtime's message", async (category, error) => {
    const c = await setUp();
    net.receivers.set(c.url, () => {
      throw error;
    });
    const run = await deliver(statusEvent(c.tenant));
    expect(run.retried(0)).toBe(true);
    const [row] = (await deliveryLog(c)).data;
    expect(row).toMatchObject({ outcome: "failed", statusCode: null });
    expect(row!.error).toMatch(new RegExp(`^Network error \\(${category}\\): `));
    expect(row!.error).not.toContain(error.message);
    expect(row!.error).not.toMatch(/10\.0\.0\.12|6379|vault|172\.16|internal-db|kj\//);
  });

  it("a 301 to the metadata address is a failure and the redirect is not followed", async () => {
    const c = await setUp();
    net.receivers.set(
      c.url,
      () => new Response(null, { status: 301, headers: { location: "http://169.254.169.254/latest/meta-data/" } }),
    );
    const event = statusEvent(c.tenant);

    const run = await deliver(event);
    expect(run.retried(0)).toBe(true);
    // Exactly one request, made with redirect "manual"; nothing went to the Location.
    expect(net.seen).toHaveLength(1);
    expect(net.seen[0]!.redirect).toBe("manual");

    const [row] = (await deliveryLog(c)).data;
    expect(row).toMatchObject({ outcome: "failed", statusCode: 301 });
    expect(row!.error).toMatch(
      /Redirect \(HTTP 301 to http:\/\/169\.254\.169\.254\/latest\/meta-data\/\) not followed/,
    );
  });

  it("always 500: retries follow the schedule for attempts 1..8, and the dead-letter consumer marks the event dead", async () => {
    const start = Date.UTC(2036, 1, 1, 12);
    const clock = fakeClock(start);
    const c = await setUp();
    net.receivers.set(c.url, answers(500));
    const event = statusEvent(c.tenant);

    const delays: (number | undefined)[] = [];
    let at = start;
    for (let attempts = 1; attempts <= 9; attempts++) {
      clock.set(at);
      const run = await deliver(event, attempts);
      expect(run.acked(0)).toBe(false);
      expect(run.retried(0)).toBe(true);
      delays.push(run.delayOf(0));
      at += (run.delayOf(0) ?? 0) * 1000 + 1_000;
    }
    expect(delays.slice(0, 8)).toEqual(SCHEDULE);
    // The ninth failure is retried too: max_retries = 8 makes the queue dead-letter it.
    expect(delays[8]).toBeDefined();
    expect(net.seen).toHaveLength(9);
    expect(new Set(net.seen.map((s) => s.headers["webhook-id"]))).toEqual(new Set([event.id]));
    expect(await eventState(c, event.id)).toBe("retrying");

    clock.set(at);
    const dead = await runQueue("webhook-deliveries-dlq", [{ event }]);
    expect(dead.result.ackAll).toBe(true);
    expect(await eventState(c, event.id)).toBe("dead");

    const log = await deliveryLog(c, "?limit=100");
    expect(log.data).toHaveLength(10);
    expect(log.data[0]).toMatchObject({ eventId: event.id, attempt: 9, outcome: "dead", statusCode: null });
    expect(log.data[0]!.error).toMatch(/Retries exhausted/);
    expect(log.data.slice(1).map((d) => d.attempt)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1]);
    // About 28 hours of failures: not yet the 3 days that disable a webhook.
    expect(await webhookView(c)).toMatchObject({ status: "enabled", failingSince: new Date(start).toISOString() });
  });

  it("a host that turned private after configuration is refused at delivery, recorded, and retried; the receiver is never called", async () => {
    const c = await setUp();
    const host = new URL(c.url).hostname;
    net.receivers.set(c.url, answers(200));
    net.dns.set(host, [PUBLIC_V4, "192.168.1.20"]);
    const event = statusEvent(c.tenant);

    const run = await deliver(event);
    expect(run.retried(0)).toBe(true);
    expect(run.delayOf(0)).toBe(0);
    expect(net.seen).toEqual([]);

    const [row] = (await deliveryLog(c)).data;
    expect(row).toMatchObject({ outcome: "refused", statusCode: null, latencyMs: null });
    expect(row!.error).toBe("URL refused: The host resolves to a non-public address: 192.168.1.20 (private network).");
    expect((await webhookView(c)).failingSince).not.toBeNull();
  });

  it.each([
    ["a non-ICANN suffix", "https://orders.default.svc/hook", /ICANN/],
    ["an internal service port", "https://hooks.acme-shop.com:6379/hook", /Port 6379 \(Redis\)/],
    ["a cloud-internal address", "https://168.63.129.16/hook", /Azure WireServer/],
  ])(
    "a URL stored before today's rules with %s is refused at delivery, and nothing is sent",
    async (_, url, reason) => {
      const c = await setUp();
      // As if configured before the rule existed: the row holds the URL as it was accepted then.
      await env.DB.prepare("UPDATE webhooks SET url = ? WHERE id = ?").bind(url, c.webhookId).run();
      const run = await deliver(statusEvent(c.tenant));
      expect(run.retried(0)).toBe(true);
      expect(net.seen).toEqual([]);
      const [row] = (await deliveryLog(c)).data;
      expect(row).toMatchObject({ outcome: "refused", statusCode: null });
      expect(row!.error).toMatch(reason);
    },
  );

  it("after a replace, events go to the new URL signed with the new secret only", async () => {
    const tenant = await createTenant();
    const old = await configure(tenant);
    const replaced = await configure(tenant);
    expect(replaced.webhookId).toBe(old.webhookId);
    net.receivers.set(old.url, answers(200));
    net.receivers.set(replaced.url, answers(200));
    const event = statusEvent(tenant);

    await deliver(event);
    expect(net.seen.map((s) => s.url)).toEqual([replaced.url]);
    expect(verify(replaced.secret, net.seen[0]!)).toEqual(envelope(event));
    expect(() => verify(old.secret, net.seen[0]!)).toThrow(WebhookVerificationError);
  });

  // Nothing is kept for it (events are rebuilt from their record: a webhook configured later can
  // replay it, see webhooks/replays.test.ts); the queue message is done with.
  it("an event for a number without a webhook is acked, and nothing is sent", async () => {
    const tenant = await createTenant();
    const event = statusEvent(tenant);
    const run = await deliver(event);
    expect(run.acked(0)).toBe(true);
    expect(run.retried(0)).toBe(false);
    expect(net.seen).toEqual([]);
  });

  it("a mixed batch is handled message by message; D1 is written once, for the one webhook whose health changed", async () => {
    const ok = await setUp();
    const failing = await setUp();
    const bare = await createTenant();
    net.receivers.set(ok.url, answers(200));
    net.receivers.set(failing.url, answers(503));
    const events = [statusEvent(ok.tenant), statusEvent(failing.tenant), statusEvent(bare)];

    const batchSpy = vi.spyOn(env.DB, "batch");
    try {
      const run = await runQueue(
        "webhook-deliveries",
        events.map((event) => ({ event, attempts: 3 })),
      );
      expect(run.acked(0)).toBe(true);
      expect(run.retried(1)).toBe(true);
      expect(run.delayOf(1)).toBe(300);
      expect(run.acked(2)).toBe(true);
      expect(batchSpy).toHaveBeenCalledTimes(1);
    } finally {
      batchSpy.mockRestore();
    }
    expect([await eventState(ok, events[0]!.id), await eventState(failing, events[1]!.id)]).toEqual([
      "delivered",
      "retrying",
    ]);
    // The number without a webhook: nothing was sent for its event.
    expect(net.seen.map((s) => s.url)).toEqual([ok.url, failing.url]);
  });

  it("one number's events go out one at a time, in queue order", async () => {
    const c = await setUp();
    let inFlight = 0;
    let maxInFlight = 0;
    net.receivers.set(c.url, async () => {
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      await new Promise((r) => setTimeout(r, 20));
      inFlight--;
      return new Response(null, { status: 200 });
    });
    const events = [statusEvent(c.tenant), statusEvent(c.tenant), statusEvent(c.tenant)];

    const run = await runQueue(
      "webhook-deliveries",
      events.map((event) => ({ event })),
    );
    expect([0, 1, 2].map(run.acked)).toEqual([true, true, true]);
    expect(net.seen.map((s) => s.headers["webhook-id"])).toEqual(events.map((e) => e.id));
    expect(maxInFlight).toBe(1);
  });

  it("events of another workspace are never delivered to this webhook", async () => {
    const c = await setUp();
    const intruder = await createTenant();
    net.receivers.set(c.url, answers(200));
    // A producer bug: the event claims this number but another workspace.
    const event: WebhookEvent = { ...statusEvent(c.tenant), workspaceId: intruder.workspaceId };
    const run = await deliver(event);
    expect(run.acked(0)).toBe(true);
    expect(net.seen).toEqual([]);
  });
});

/** Runs one queue message carrying a pack of events (as the publisher sends them), `attempts` as the queue counts it. */
async function runPack(events: WebhookEvent[], { tried, attempts = 1 }: { tried?: number[]; attempts?: number } = {}) {
  const body: WebhookQueueMessage = tried === undefined ? { events } : { events, tried };
  const batch = createMessageBatch<WebhookQueueMessage>("webhook-deliveries", [
    { id: `pack-${events[0]!.id}`, timestamp: new Date(), attempts, body },
  ]);
  const retry = vi.spyOn(batch.messages[0]!, "retry");
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  const result = await getQueueResult(batch, ctx);
  return {
    acked: result.ackAll || result.explicitAcks.includes(batch.messages[0]!.id),
    retried: retry.mock.calls.length > 0,
  };
}

const attemptsOf = async (c: Configured, eventId: string) =>
  (await deliveryLog(c, "?limit=100")).data
    .filter((d) => d.eventId === eventId)
    .map((d) => `${d.attempt}:${d.outcome}`)
    .reverse();

describe("packs: several events in one queue message", () => {
  it("a pack partly delivered is acked; the failed event and those behind it come back as a pack of their own, the delivered one never again", async () => {
    const c = await setUp();
    net.receivers.set(c.url, answers(200, 500, 200));
    const events = [statusEvent(c.tenant), statusEvent(c.tenant), statusEvent(c.tenant)];
    const requeue = vi.spyOn(env.WEBHOOK_QUEUE, "send");
    try {
      const run = await runPack(events);
      expect(run).toEqual({ acked: true, retried: false });
      // The endpoint failed on the second: the third was not tried behind it (it would overtake it).
      expect(net.seen.map((s) => s.headers["webhook-id"])).toEqual([events[0]!.id, events[1]!.id]);
      expect(requeue).toHaveBeenCalledTimes(1);
      // Only real attempts count: the third keeps all of its attempts.
      expect(requeue.mock.calls[0]![0]).toEqual({ events: [events[1], events[2]], tried: [1, 0] });
      expect(requeue.mock.calls[0]![1]).toMatchObject({ delaySeconds: SCHEDULE[0] });
      // The queue brings the re-queued pack back (first retry: at once); it is delivered in order.
      await vi.waitFor(() => expect(net.seen).toHaveLength(4), { timeout: 10_000 });
    } finally {
      requeue.mockRestore();
    }
    expect(net.seen.map((s) => s.headers["webhook-id"])).toEqual([
      events[0]!.id,
      events[1]!.id,
      events[1]!.id,
      events[2]!.id,
    ]);
    await vi.waitFor(async () => expect(await eventState(c, events[2]!.id)).toBe("delivered"), { timeout: 10_000 });
    expect(await Promise.all(events.map((e) => eventState(c, e.id)))).toEqual(["delivered", "delivered", "delivered"]);
    // The delivery log shows real attempts only.
    expect(await attemptsOf(c, events[0]!.id)).toEqual(["1:delivered"]);
    expect(await attemptsOf(c, events[1]!.id)).toEqual(["1:failed", "2:delivered"]);
    expect(await attemptsOf(c, events[2]!.id)).toEqual(["1:delivered"]);
  });

  it("a pack whose events were all tried and failed is retried as it is, on the schedule of their attempt", async () => {
    const a = await setUp();
    const b = await setUp();
    net.receivers.set(a.url, answers(503));
    net.receivers.set(b.url, answers(503));
    const events = [statusEvent(a.tenant), statusEvent(b.tenant)];
    const run = await runPack(events, { tried: [3, 3], attempts: 2 });
    expect(run).toEqual({ acked: false, retried: true });
    expect(net.seen).toHaveLength(2);
    // 3 tried before it was queued, and this message's second delivery: attempt 5.
    expect(await attemptsOf(a, events[0]!.id)).toEqual(["5:failed"]);
    expect(await attemptsOf(b, events[1]!.id)).toEqual(["5:failed"]);
  });

  it("an event whose ninth real attempt fails is dead at once; one that waited behind it keeps its last attempt", async () => {
    const c = await setUp();
    net.receivers.set(c.url, answers(500));
    const events = [statusEvent(c.tenant), statusEvent(c.tenant)];
    const requeue = vi.spyOn(env.WEBHOOK_QUEUE, "send");
    try {
      const run = await runPack(events, { tried: [8, 8] });
      expect(run).toEqual({ acked: true, retried: false });
      expect(requeue.mock.calls.map(([body]) => body)).toEqual([{ events: [events[1]], tried: [8] }]);
    } finally {
      requeue.mockRestore();
    }
    expect(await attemptsOf(c, events[0]!.id)).toEqual(["9:failed", "9:dead"]);
    // The second waited behind it (deferred, never listed): it goes on with its own attempts.
    expect(await attemptsOf(c, events[1]!.id)).toEqual([]);
    expect(await eventState(c, events[0]!.id)).toBe("dead");
  });
});

describe("disabling a webhook that keeps failing", () => {
  it("failures lasting more than 72 hours disable it; GET /webhooks shows it; later events are not sent", async () => {
    const t0 = Date.UTC(2036, 2, 1, 0);
    const clock = fakeClock(t0);
    const c = await setUp();
    net.receivers.set(c.url, answers(500));

    await deliver(statusEvent(c.tenant));
    expect(await webhookView(c)).toMatchObject({
      status: "enabled",
      failingSince: new Date(t0).toISOString(),
      disabledAt: null,
    });

    clock.set(t0 + 72 * HOUR);
    await deliver(statusEvent(c.tenant));
    expect((await webhookView(c)).status).toBe("enabled");

    const disabledAt = t0 + 72 * HOUR + 1;
    clock.set(disabledAt);
    await deliver(statusEvent(c.tenant));
    expect(await webhookView(c)).toMatchObject({
      status: "disabled",
      failingSince: new Date(t0).toISOString(),
      disabledAt: new Date(disabledAt).toISOString(),
    });

    clock.set(disabledAt + HOUR);
    const later = statusEvent(c.tenant);
    const run = await deliver(later);
    expect(run.acked(0)).toBe(true);
    expect(net.seen).toHaveLength(3);
    // Not attempted: the log shows no attempt of it.
    expect(await eventState(c, later.id)).toBeUndefined();

    // Test events and replays are refused while it is disabled.
    const err = await expectError(
      await api(`/webhooks/${c.webhookId}/test`, c.tenant.key, { method: "POST" }),
      400,
      "invalid_request",
    );
    expect(err.error.details?.[0]?.rule).toBe("webhook_disabled");

    // Configuring it again re-enables it with a clean record.
    const again = await configure(c.tenant, c.tenant.numberId, c.url);
    expect(again.webhookId).toBe(c.webhookId);
    expect(await webhookView(c)).toMatchObject({ status: "enabled", failingSince: null, disabledAt: null });
  });

  it("any success resets the failure streak", async () => {
    const t0 = Date.UTC(2036, 3, 1, 0);
    const clock = fakeClock(t0);
    const c = await setUp();
    net.receivers.set(c.url, answers(500, 200, 500));

    await deliver(statusEvent(c.tenant));
    clock.set(t0 + 48 * HOUR);
    await deliver(statusEvent(c.tenant));
    expect((await webhookView(c)).failingSince).toBeNull();

    clock.set(t0 + 80 * HOUR);
    await deliver(statusEvent(c.tenant));
    expect(await webhookView(c)).toMatchObject({
      status: "enabled",
      failingSince: new Date(t0 + 80 * HOUR).toISOString(),
    });
  });
});

describe("delivery log, replay and test events", () => {
  it("lists attempts newest first, with cursor pagination", async () => {
    const start = Date.UTC(2036, 4, 1, 0);
    const clock = fakeClock(start);
    const c = await setUp();
    net.receivers.set(c.url, answers(500, 500, 200, 404, 200));
    const a = statusEvent(c.tenant);
    const b = statusEvent(c.tenant);
    const steps: [WebhookEvent, number][] = [
      [a, 1],
      [a, 2],
      [a, 3],
      [b, 1],
      [b, 2],
    ];
    for (const [i, [event, attempts]] of steps.entries()) {
      clock.set(start + i * 60_000);
      await deliver(event, attempts);
    }

    const pages: DeliveryView[][] = [];
    let cursor: string | null = null;
    do {
      const page: { data: DeliveryView[]; nextCursor: string | null } = await deliveryLog(
        c,
        `?limit=2${cursor ? `&cursor=${cursor}` : ""}`,
      );
      pages.push(page.data);
      cursor = page.nextCursor;
    } while (cursor);

    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
    const all = pages.flat();
    expect(all.map((d) => [d.eventId, d.attempt, d.outcome, d.statusCode])).toEqual([
      [b.id, 2, "delivered", 200],
      [b.id, 1, "failed", 404],
      [a.id, 3, "delivered", 200],
      [a.id, 2, "failed", 500],
      [a.id, 1, "failed", 500],
    ]);
    expect(all.map((d) => d.attemptedAt)).toEqual(
      [4, 3, 2, 1, 0].map((i) => new Date(start + i * 60_000).toISOString()),
    );

    await expectError(
      await api(`/webhooks/${c.webhookId}/deliveries?cursor=garbage`, c.tenant.key),
      400,
      "invalid_request",
    );
    await expectError(await api(`/webhooks/${c.webhookId}/deliveries?limit=0`, c.tenant.key), 400, "invalid_request");
  });

  it("replay re-delivers a message's event through the queue with the same webhook-id and the same bytes", async () => {
    const c = await setUp();
    net.receivers.set(c.url, answers(200));
    // A real message (the sandbox's inbound injection): its event goes out through the real queue.
    const injected = await api("/sandbox/inbound", c.tenant.key, {
      method: "POST",
      json: { channelNumberId: c.tenant.numberId, from: "5511977776666", text: { body: "Oi" } },
    });
    expect(injected.status).toBe(202);
    const { messageId } = await json<{ messageId: string }>(injected);
    await vi.waitFor(() => expect(net.seen).toHaveLength(1), { timeout: 15_000, interval: 100 });
    const event = await eventOfMessage(c.tenant.workspaceId, messageId, "received");
    expect(net.seen[0]!.headers["webhook-id"]).toBe(event.id);
    await vi.waitFor(async () => expect(await eventState(c, event.id)).toBe("delivered"), {
      timeout: 5_000,
      interval: 100,
    });

    const res = await api(`/webhooks/${c.webhookId}/deliveries/${event.id}/replay`, c.tenant.key, { method: "POST" });
    expect(res.status).toBe(202);
    expect(await json(res)).toEqual({ eventId: event.id, status: "queued" });

    // The real queue hands the message to the Worker's consumer.
    await vi.waitFor(() => expect(net.seen).toHaveLength(2), { timeout: 15_000, interval: 100 });
    const replayed = net.seen[1]!;
    expect(replayed.headers["webhook-id"]).toBe(event.id);
    expect(replayed.body).toBe(net.seen[0]!.body);
    expect(verify(c.secret, replayed)).toEqual(envelope(event));
    await vi.waitFor(async () => expect((await deliveryLog(c)).data).toHaveLength(2), {
      timeout: 5_000,
      interval: 100,
    });
  });

  it("a test event arrives signed, with the returned event id as webhook-id", async () => {
    const c = await setUp();
    net.receivers.set(c.url, answers(204));

    const res = await api(`/webhooks/${c.webhookId}/test`, c.tenant.key, { method: "POST" });
    expect(res.status).toBe(202);
    const { eventId } = await json<{ eventId: string }>(res);

    await vi.waitFor(() => expect(net.seen).toHaveLength(1), { timeout: 15_000, interval: 100 });
    const seen = net.seen[0]!;
    expect(eventId).toMatch(/^evt_[0-9a-f]{32}$/);
    expect(seen.headers["webhook-id"]).toBe(eventId);
    const payload = verify(c.secret, seen) as { type: string; timestamp: string; data: { message: string } };
    expect(payload.type).toBe("webhook.test");
    expect(payload.data.message).toMatch(/test event/);
    expect(Date.parse(payload.timestamp)).not.toBeNaN();

    await vi.waitFor(
      async () =>
        expect((await deliveryLog(c)).data[0]).toMatchObject({
          eventId,
          eventType: "webhook.test",
          outcome: "delivered",
          statusCode: 204,
        }),
      { timeout: 5_000, interval: 100 },
    );
  });

  it("a second number's webhook has its own log", async () => {
    const tenant = await createTenant();
    const first = await configure(tenant);
    const second = await configure(tenant, await connectSandboxNumber(tenant.workspaceId, "15550003001"));
    net.receivers.set(first.url, answers(200));
    await deliver(statusEvent(tenant));
    expect((await deliveryLog(first)).data).toHaveLength(1);
    expect((await deliveryLog(second)).data).toEqual([]);
  });
});
