import { createExecutionContext, createMessageBatch, getQueueResult, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { api, json } from "../helpers/http";
import { createTenant, type Tenant } from "../helpers/fixtures";
import { send, textMessage } from "../helpers/send";
import { deliveryLogOf, eventsOfMessage, statusEvent, type DeliveryView } from "../helpers/events";
import { testNumber, testWorkspace } from "../helpers/objects";
import { signedInMember } from "../helpers/dashboard";
import { mockNetworkPerTest, type Receiver } from "../helpers/webhook-net";
import { eventIdOf, eventsOf, type WebhookEvent, type WebhookQueueMessage } from "../../src/messages/events";
import { KEEP_DELIVERIES_MS } from "../../src/durable-objects/workspace/delivery-log";
import { DAY_MS } from "../../src/lib/job-id";
import { RETENTION_SLACK_MS } from "../../src/durable-objects/shared/scheduler";
import { fakeClockPerTest } from "../helpers/clock";

// The delivery log as customers read it: the API's lists and the dashboard. Events are those of
// real messages, held at the queue (accepted, not delivered) and handed to the Worker's consumer by
// the test, so that each attempt happens when the test says.

const clock = fakeClockPerTest(Date.UTC(2052, 2, 1, 12), (t) => t + 10 * DAY_MS);
const net = mockNetworkPerTest();
afterEach(() => vi.restoreAllMocks());

/** The webhook queue accepts what is published and keeps it until the test hands it on (`take`). */
function holdQueue() {
  const held: WebhookQueueMessage[] = [];
  vi.spyOn(env.WEBHOOK_QUEUE, "send").mockImplementation(async (body) => {
    held.push(body as WebhookQueueMessage);
    return {} as QueueSendResponse;
  });
  vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockImplementation(async (messages) => {
    for (const m of messages) held.push(m.body as WebhookQueueMessage);
    return {} as QueueSendBatchResponse;
  });
  return { take: (): WebhookQueueMessage[] => held.splice(0) };
}

/** Runs the Worker's queue handler on these messages, each delivered for the `attempts`-th time. */
async function consume(messages: { body: WebhookQueueMessage; attempts: number }[]) {
  const batch = createMessageBatch<WebhookQueueMessage>(
    "webhook-deliveries",
    messages.map(({ body, attempts }, i) => ({
      id: `m${i}-${crypto.randomUUID()}`,
      timestamp: new Date(),
      attempts,
      body,
    })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  const result = await getQueueResult(batch, ctx);
  return batch.messages.map((m) => (result.retryMessages.some((r) => r.msgId === m.id) ? "retry" : "ack"));
}

/** A webhook for the tenant's number, to a receiver `reply` answers. */
async function webhookOf(t: Tenant, reply: Receiver) {
  const host = `log-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
  net.dns.set(host, ["93.184.216.34"]);
  const url = `https://${host}/hook`;
  net.receivers.set(url, reply);
  const res = await api("/webhooks", t.key, { method: "POST", json: { channelNumberId: t.numberId, url } });
  expect(res.status).toBe(201);
  return (await json<{ id: string }>(res)).id;
}

/** A send the number then makes (the sandbox accepts it): its processing and sent events are published. */
async function sentMessage(t: Tenant, body: string): Promise<string> {
  clock.advance(1_000);
  const { jobId } = await json<{ jobId: string }>(
    await send(t.key, crypto.randomUUID(), textMessage(t.numberId, body)),
  );
  await runDurableObjectAlarm(testNumber(t.numberId));
  return jobId;
}

const row = (d: DeliveryView) => [d.eventId, d.attempt, d.outcome, d.statusCode];

describe("a message's deliveries", () => {
  it("GET /messages/{id}/events lists the attempts of each of its events, oldest first: delivered, and failed then retried and delivered", async () => {
    const t = await createTenant();
    let failSent: string | null = null;
    await webhookOf(t, (req) => {
      if (req.headers["webhook-id"] === failSent) {
        failSent = null;
        return new Response(null, { status: 500 });
      }
      return new Response(null, { status: 204 });
    });
    const queue = holdQueue();
    const jobId = await sentMessage(t, "Your order shipped");
    const [processingId, sentId] = [eventIdOf(jobId, "processing"), eventIdOf(jobId, "sent")];
    const published = queue.take();
    expect(published.flatMap(eventsOf).map((e) => e.id)).toEqual([processingId, sentId]);

    // First delivery: processing goes through, sent gets a 500 and is retried.
    failSent = sentId;
    clock.advance(1_000);
    expect(await consume(published.map((body) => ({ body, attempts: 1 })))).toEqual(["ack", "retry"]);
    // The queue's retry, a little later.
    clock.advance(5_000);
    expect(await consume([{ body: published[1]!, attempts: 2 }])).toEqual(["ack"]);
    // Another message of the number, delivered meanwhile (not among this one's), and the sandbox's
    // reports of this one (delivered, read), whose events are delivered at the first attempt.
    const other = await sentMessage(t, "another");
    const more = queue.take();
    expect(await consume(more.map((body) => ({ body, attempts: 1 })))).toEqual(more.map(() => "ack"));
    const later = (await eventsOfMessage(t.workspaceId, jobId)).slice(2);
    expect(later.map((e) => e.id)).toContain(eventIdOf(jobId, "delivered"));

    const res = await api(`/messages/${jobId}/events`, t.key);
    expect(res.status).toBe(200);
    const body = await json<{ messageId: string; deliveries: DeliveryView[] }>(res);
    expect(body.messageId).toBe(jobId);
    expect(body.deliveries.map(row)).toEqual([
      [processingId, 1, "delivered", 204],
      [sentId, 1, "failed", 500],
      [sentId, 2, "delivered", 204],
      ...later.map((e) => [e.id, 1, "delivered", 204]),
    ]);
    expect(body.deliveries[1]!.nextRetryAt).not.toBeNull();
    expect(body.deliveries.map((d) => Date.parse(d.attemptedAt))).toEqual(
      [...body.deliveries.map((d) => Date.parse(d.attemptedAt))].sort((a, b) => a - b),
    );
    const others = await json<{ deliveries: DeliveryView[] }>(await api(`/messages/${other}/events`, t.key));
    expect(others.deliveries.map(row)).toEqual([
      [eventIdOf(other, "processing"), 1, "delivered", 204],
      [eventIdOf(other, "sent"), 1, "delivered", 204],
    ]);
  });
});

describe("events that waited behind a failure", () => {
  it("are not logged until tried (a failing endpoint logs its failures, not the 49 of a pack behind each), and their attempts are found after", async () => {
    const t = await createTenant();
    let failing = true;
    await webhookOf(t, () => new Response(null, { status: failing ? 500 : 204 }));
    const queue = holdQueue();
    const first = await sentMessage(t, "first");
    const second = await sentMessage(t, "second");
    const packed = { events: queue.take().flatMap(eventsOf) } satisfies WebhookQueueMessage;
    expect(packed.events).toHaveLength(4);

    // One run: the first event fails, the three behind it are not tried.
    clock.advance(1_000);
    const [outcome] = await consume([{ body: packed, attempts: 1 }]);
    // What comes back: the pack itself (the queue's retry) or its undelivered events re-queued.
    const retried = outcome === "retry" ? [packed] : queue.take();
    expect(retried.flatMap(eventsOf).map((e) => e.id)).toEqual(packed.events.map((e) => e.id));
    const logged = () => testWorkspace(t.workspaceId).deliveryLogOutcomes();
    expect(await logged()).toEqual(["failed"]);

    // The endpoint recovers; the retry delivers all four.
    failing = false;
    clock.advance(60_000);
    for (const body of retried) expect(await consume([{ body, attempts: 2 }])).toEqual(["ack"]);
    expect(queue.take()).toEqual([]);
    expect((await logged()).sort()).toEqual(["delivered", "delivered", "delivered", "delivered", "failed"]);
    const of = async (id: string) =>
      (await json<{ deliveries: DeliveryView[] }>(await api(`/messages/${id}/events`, t.key))).deliveries.map((d) => [
        d.eventId,
        d.outcome,
      ]);
    expect(await of(second)).toEqual([
      [eventIdOf(second, "processing"), "delivered"],
      [eventIdOf(second, "sent"), "delivered"],
    ]);
    expect((await of(first)).map(([, o]) => o)).toEqual(["failed", "delivered", "delivered"]);
  });
});

describe("a webhook's deliveries", () => {
  it("GET /webhooks/{id}/deliveries pages newest first across the log's days, with cursors; a day leaves after 3 days", async () => {
    const t = await createTenant();
    const answers = [500, 204, 204, 404, 204];
    const webhookId = await webhookOf(t, () => new Response(null, { status: answers.shift() ?? 599 }));
    const midnight = (Math.floor(clock.now() / DAY_MS) + 1) * DAY_MS;
    clock.set(midnight - 120_000);
    const a = statusEvent(t.workspaceId, t.numberId);
    const b = statusEvent(t.workspaceId, t.numberId);
    const c = statusEvent(t.workspaceId, t.numberId);
    // Two attempts before midnight, three after: two tables of the log.
    const steps: [WebhookEvent, number, number][] = [
      [a, 1, midnight - 60_000],
      [a, 2, midnight - 30_000],
      [b, 1, midnight + 30_000],
      [c, 1, midnight + 60_000],
      [c, 2, midnight + 90_000],
    ];
    for (const [event, attempts, at] of steps) {
      clock.set(at);
      await consume([{ body: { events: [event] }, attempts }]);
    }
    const day = Math.floor(midnight / DAY_MS);
    expect(await testWorkspace(t.workspaceId).tableNames()).toEqual(
      expect.arrayContaining([`d_${day - 1}`, `d_${day}`]),
    );

    const pages: DeliveryView[][] = [];
    let cursor: string | null = null;
    do {
      const page: { data: DeliveryView[]; nextCursor: string | null } = await deliveryLogOf(
        t.key,
        webhookId,
        `?limit=2${cursor ? `&cursor=${cursor}` : ""}`,
      );
      pages.push(page.data);
      cursor = page.nextCursor;
    } while (cursor);
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
    expect(pages.flat().map(row)).toEqual([
      [c.id, 2, "delivered", 204],
      [c.id, 1, "failed", 404],
      [b.id, 1, "delivered", 204],
      [a.id, 2, "delivered", 204],
      [a.id, 1, "failed", 500],
    ]);
    expect(pages.flat().map((d) => Date.parse(d.attemptedAt))).toEqual(steps.map((s) => s[2]).reverse());

    // The log keeps 3 days: once the first day is past them, its attempts are gone (its table dropped).
    // The purge rides on whatever alarm the object runs next (here: one the test sets).
    clock.set(midnight + KEEP_DELIVERIES_MS + RETENTION_SLACK_MS + 60_000);
    await testWorkspace(t.workspaceId).armAlarm();
    expect(await runDurableObjectAlarm(testWorkspace(t.workspaceId))).toBe(true);
    expect(await testWorkspace(t.workspaceId).tableNames()).not.toContain(`d_${day - 1}`);
    expect((await deliveryLogOf(t.key, webhookId, "?limit=10")).data.map(row)).toEqual(
      pages.flat().slice(0, 3).map(row),
    );
  });
});

describe("the log's rows", () => {
  it("keep an attempt's event type, derived from its id or, for an id that names nothing, stored", async () => {
    const t = await createTenant();
    const webhookId = await webhookOf(t, () => new Response(null, { status: 204 }));
    const ours = statusEvent(t.workspaceId, t.numberId);
    // An event whose id is random, with no kind digit: type and subject stored as given.
    const earlier: WebhookEvent = {
      ...statusEvent(t.workspaceId, t.numberId),
      id: "evt_0123456789ab8def0123456789abcdef",
    };
    clock.advance(1_000);
    await consume([{ body: { events: [ours, earlier] }, attempts: 1 }]);
    const logged = (await deliveryLogOf(t.key, webhookId, "?limit=10")).data;
    expect(logged.map((d) => [d.eventId, d.eventType, d.outcome])).toEqual([
      [earlier.id, "message.status", "delivered"],
      [ours.id, "message.status", "delivered"],
    ]);
  });
});

describe("a workspace over its size guard", () => {
  it("keeps its delivery log 1 day instead of 3 (a day's table goes a day after it ends); one under it keeps 3", async () => {
    const busy = await createTenant();
    const quiet = await createTenant();
    const hooks = [busy, quiet].map((t) => webhookOf(t, () => new Response(null, { status: 204 })));
    await Promise.all(hooks);
    await testWorkspace(busy.workspaceId).setHotBytesBudget(1);
    const midnight = (Math.floor(clock.now() / DAY_MS) + 1) * DAY_MS;
    clock.set(midnight - 60_000);
    for (const t of [busy, quiet])
      await consume([{ body: { events: [statusEvent(t.workspaceId, t.numberId)] }, attempts: 1 }]);
    const day = Math.floor(midnight / DAY_MS) - 1;
    // A day after the day ended (and the purge's slack): gone over the guard, kept under it.
    clock.set(midnight + DAY_MS + RETENTION_SLACK_MS + 60_000);
    for (const t of [busy, quiet]) {
      await testWorkspace(t.workspaceId).armAlarm();
      await runDurableObjectAlarm(testWorkspace(t.workspaceId));
    }
    expect(await testWorkspace(busy.workspaceId).tableNames()).not.toContain(`d_${day}`);
    expect(await testWorkspace(quiet.workspaceId).tableNames()).toContain(`d_${day}`);
    // Just before 3 days: still there; after: gone.
    clock.set(midnight + KEEP_DELIVERIES_MS - 60_000);
    await testWorkspace(quiet.workspaceId).armAlarm();
    await runDurableObjectAlarm(testWorkspace(quiet.workspaceId));
    expect(await testWorkspace(quiet.workspaceId).tableNames()).toContain(`d_${day}`);
  });
});

describe("the dashboard's webhook page", () => {
  it("shows the last failure while the webhook fails (not an event that only waited behind it), and none once it delivers again", async () => {
    const t = await createTenant();
    let status = 500;
    await webhookOf(t, () => new Response(null, { status }));
    const dev = await signedInMember(t.workspaceId, "developer");
    const page = `/dashboard/webhooks/${t.numberId}`;
    const queue = holdQueue();
    const jobId = await sentMessage(t, "Your order shipped");
    const published = queue.take();

    // processing gets a 500; sent, behind it in the same run, is not tried (deferred) and comes back on its own.
    expect(await consume(published.map((body) => ({ body, attempts: 1 })))).toEqual(["retry", "ack"]);
    const requeued = queue.take();
    expect(requeued.flatMap(eventsOf).map((e) => e.id)).toEqual([eventIdOf(jobId, "sent")]);
    const failing = await (await dev.browser.get(page)).text();
    expect(failing).toContain("Last error: <span>HTTP 500: the endpoint did not answer with a 2xx.</span>");
    expect(failing).toContain(eventIdOf(jobId, "processing"));
    expect(failing).not.toContain(eventIdOf(jobId, "sent"));

    status = 204;
    clock.advance(5_000);
    expect(
      await consume([
        { body: published[0]!, attempts: 2 },
        { body: requeued[0]!, attempts: 1 },
      ]),
    ).toEqual(["ack", "ack"]);
    const healthy = await (await dev.browser.get(page)).text();
    expect(healthy).not.toContain("Last error");
    expect(healthy).toContain(eventIdOf(jobId, "sent"));
  });
});
