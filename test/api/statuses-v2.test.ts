import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeClockPerTest } from "../helpers/clock";
import { api, expectError, json } from "../helpers/http";
import { accepted, liveNumberTenant, mockOperator } from "../helpers/operator";
import { apiV2, sendV2 } from "../helpers/operator-templates";
import { queuedEvents, statusEventsOf } from "../helpers/events";
import { postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { ndjsonText } from "../helpers/ndjson";
import { DAY_MS } from "../../src/lib/job-id";
import { envelopeOf, type WebhookEvent } from "../../src/messages/events";
import { PACE_WINDOW_MS } from "../../src/durable-objects/channel-number/delivery-policy";

// API v2's statuses: the operator's delivery and read reports (its status webhooks) move a v2
// message on from `sent` to `delivered` and `read`, in its views, its list filter and the events a
// v2 webhook receives; v1 keeps `sent` with `deliveredAt` and `readAt`, as it always did.

const clock = fakeClockPerTest(Date.UTC(2045, 0, 1), (t) => t + 24 * 3_600_000);
afterEach(() => {
  vi.restoreAllMocks();
});

type Tenant = Awaited<ReturnType<typeof liveNumberTenant>>;

const drain = async (numberId: string) => {
  await runDurableObjectAlarm(channelNumberStub(env, numberId));
  clock.advance(PACE_WINDOW_MS);
};

/** Sends a text through v2 to its own recipient, and has the operator accept it as `wamid.<to>`. */
async function sentMessage(t: Tenant, to: string): Promise<string> {
  const res = await sendV2(t.key, { channelNumberId: t.numberId, to, text: { body: "Your order shipped" } });
  expect(res.status).toBe(201);
  const { jobId } = await json<{ jobId: string }>(res);
  await drain(t.numberId);
  return jobId;
}

/** The operator's status webhook about the message sent to `to`, dated now + `afterMs`. */
const report = (t: Tenant, jobId: string, to: string, status: string, afterMs = 0, extra = {}) =>
  postOperator(
    statusPayload(t.phoneNumberId, [
      {
        id: `wamid.${to}`,
        status,
        timestamp: seconds(clock.now() + afterMs),
        recipient_id: to,
        biz_opaque_callback_data: jobId,
        ...extra,
      },
    ]),
  ).then((res) => expect(res.status).toBe(200));

type View = Record<string, unknown> & { status: string; deliveredAt: string | null; readAt: string | null };
const viewV1 = async (t: Tenant, id: string) => json<View>(await api(`/messages/${id}`, t.key));
const viewV2 = async (t: Tenant, id: string) => json<View>(await apiV2(`/messages/${id}`, t.key));

/** What each version's webhook receives of the message's status events: status, previousStatus and the two times. */
const shapes = (events: WebhookEvent[], id: string, version: 1 | 2) =>
  statusEventsOf(events, id).map((e) => {
    const { status, previousStatus, deliveredAt, readAt } = envelopeOf(e, version).data as View;
    return { status, previousStatus, deliveredAt, readAt };
  });

const whole = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString();

describe("a v2 message's statuses follow the operator's reports", () => {
  it("sent → delivered → read: the v2 view and events name each status and its predecessor; v1's stay sent", async () => {
    const t = await liveNumberTenant();
    mockOperator((call) => accepted(`wamid.${call.body.to.slice(1)}`));
    const queued = queuedEvents();
    const jobId = await sentMessage(t, "5511900000001");
    expect(await viewV2(t, jobId)).toMatchObject({ status: "sent", deliveredAt: null, readAt: null });

    const deliveredAt = whole(clock.now() + 1_000);
    await report(t, jobId, "5511900000001", "delivered", 1_000);
    expect(await viewV2(t, jobId)).toMatchObject({ status: "delivered", deliveredAt, readAt: null });
    expect(await viewV1(t, jobId)).toMatchObject({ status: "sent", deliveredAt, readAt: null });

    const readAt = whole(clock.now() + 3_000);
    await report(t, jobId, "5511900000001", "read", 3_000);
    expect(await viewV2(t, jobId)).toMatchObject({ status: "read", deliveredAt, readAt });
    expect(await viewV1(t, jobId)).toMatchObject({ status: "sent", deliveredAt, readAt });

    expect(shapes(queued(), jobId, 2)).toEqual([
      { status: "processing", previousStatus: "queued", deliveredAt: null, readAt: null },
      { status: "sent", previousStatus: "processing", deliveredAt: null, readAt: null },
      { status: "delivered", previousStatus: "sent", deliveredAt, readAt: null },
      { status: "read", previousStatus: "delivered", deliveredAt, readAt },
    ]);
    // v1's events are as they always were: a delivery and a read leave the status as it was.
    expect(shapes(queued(), jobId, 1)).toEqual([
      { status: "processing", previousStatus: "queued", deliveredAt: null, readAt: null },
      { status: "sent", previousStatus: "processing", deliveredAt: null, readAt: null },
      { status: "sent", previousStatus: "sent", deliveredAt, readAt: null },
      { status: "sent", previousStatus: "sent", deliveredAt, readAt },
    ]);
  });

  it("a read reported before the delivery: sent → read with deliveredAt set; the late delivery changes no status", async () => {
    const t = await liveNumberTenant();
    mockOperator((call) => accepted(`wamid.${call.body.to.slice(1)}`));
    const queued = queuedEvents();
    const jobId = await sentMessage(t, "5511900000002");

    const readAt = whole(clock.now() + 4_000);
    await report(t, jobId, "5511900000002", "read", 4_000);
    // A read message was delivered: v2 says so with the read's time until the operator's own delivery time comes.
    expect(await viewV2(t, jobId)).toMatchObject({ status: "read", deliveredAt: readAt, readAt });
    expect(await viewV1(t, jobId)).toMatchObject({ status: "sent", deliveredAt: null, readAt });

    const deliveredAt = whole(clock.now() + 2_000);
    await report(t, jobId, "5511900000002", "delivered", 2_000);
    expect(await viewV2(t, jobId)).toMatchObject({ status: "read", deliveredAt, readAt });

    expect(shapes(queued(), jobId, 2)).toEqual([
      { status: "processing", previousStatus: "queued", deliveredAt: null, readAt: null },
      { status: "sent", previousStatus: "processing", deliveredAt: null, readAt: null },
      { status: "read", previousStatus: "sent", deliveredAt: readAt, readAt },
      { status: "read", previousStatus: "read", deliveredAt, readAt },
    ]);
    expect(shapes(queued(), jobId, 1).slice(2)).toEqual([
      { status: "sent", previousStatus: "sent", deliveredAt: null, readAt },
      { status: "sent", previousStatus: "sent", deliveredAt, readAt: null },
    ]);
  });

  it("a delivery reported after a failure is recorded: the status stays failed in both versions", async () => {
    const t = await liveNumberTenant();
    mockOperator((call) => accepted(`wamid.${call.body.to.slice(1)}`));
    const queued = queuedEvents();
    const jobId = await sentMessage(t, "5511900000003");
    await report(t, jobId, "5511900000003", "failed", 0, {
      errors: [{ code: 131026, title: "Message undeliverable.", error_data: { details: "Undeliverable." } }],
    });
    const deliveredAt = whole(clock.now() + 2_000);
    await report(t, jobId, "5511900000003", "delivered", 2_000);

    expect(await viewV2(t, jobId)).toMatchObject({
      status: "failed",
      error: expect.objectContaining({ code: "recipient_unreachable" }),
      deliveredAt,
    });
    expect(shapes(queued(), jobId, 2).slice(2)).toEqual([
      { status: "failed", previousStatus: "sent", deliveredAt: null, readAt: null },
      { status: "failed", previousStatus: "failed", deliveredAt, readAt: null },
    ]);
    expect(shapes(queued(), jobId, 1)).toEqual(shapes(queued(), jobId, 2));
  });
});

describe("GET /api/v2/messages?status=", () => {
  it("delivered, read and sent each list only the messages the operator's reports left there; v1 keeps its four statuses", async () => {
    const t = await liveNumberTenant();
    mockOperator((call) => accepted(`wamid.${call.body.to.slice(1)}`));
    const justSent = await sentMessage(t, "5511900000011");
    const delivered = await sentMessage(t, "5511900000012");
    const read = await sentMessage(t, "5511900000013");
    const readFirst = await sentMessage(t, "5511900000014");
    const failed = await sentMessage(t, "5511900000015");
    await report(t, delivered, "5511900000012", "delivered");
    await report(t, read, "5511900000013", "delivered");
    await report(t, read, "5511900000013", "read", 1_000);
    await report(t, readFirst, "5511900000014", "read");
    await report(t, failed, "5511900000015", "failed", 0, {
      errors: [{ code: 131026, title: "Message undeliverable." }],
    });
    await report(t, failed, "5511900000015", "delivered", 1_000);

    const listed = async (query: string) => {
      const res = await apiV2(`/messages?${query}`, t.key);
      expect(res.status).toBe(200);
      const page = await json<{ data: { id: string; status: string }[]; nextCursor: string | null }>(res);
      expect(page.nextCursor).toBeNull();
      return page.data.map((m) => [m.id, m.status]);
    };
    expect(await listed("status=delivered")).toEqual([[delivered, "delivered"]]);
    expect(await listed("status=read")).toEqual([
      [readFirst, "read"],
      [read, "read"],
    ]);
    expect(await listed("status=sent")).toEqual([[justSent, "sent"]]);
    expect(await listed("status=failed")).toEqual([[failed, "failed"]]);
    expect(await listed("direction=outbound")).toEqual([
      [failed, "failed"],
      [readFirst, "read"],
      [read, "read"],
      [delivered, "delivered"],
      [justSent, "sent"],
    ]);

    // v1: `sent` is every message the operator accepted, and delivered or read is refused as before.
    const v1 = await json<{ data: { id: string; status: string }[] }>(await api("/messages?status=sent", t.key));
    expect(v1.data.map((m) => [m.id, m.status])).toEqual([
      [readFirst, "sent"],
      [read, "sent"],
      [delivered, "sent"],
      [justSent, "sent"],
    ]);
    const refused = await expectError(await api("/messages?status=delivered", t.key), 400, "invalid_request");
    expect(refused.error.details?.[0]).toMatchObject({ path: "query.status" });
  });

  it("refuses a status that is not one, naming the rule", async () => {
    const t = await liveNumberTenant();
    const body = await expectError(await apiV2("/messages?status=seen", t.key), 400, "invalid_request");
    expect(body.error.details).toEqual([
      expect.objectContaining({ path: "query.status", rule: "enum", message: expect.stringContaining("delivered") }),
    ]);
  });
});

describe("an archived day", () => {
  it("reads v2's statuses through /api/v2 and v1's through /api/v1, from the same archive", async () => {
    const t = await liveNumberTenant();
    mockOperator((call) => accepted(`wamid.${call.body.to.slice(1)}`));
    const justSent = await sentMessage(t, "5511900000031");
    const read = await sentMessage(t, "5511900000032");
    await report(t, read, "5511900000032", "read");
    const day = (await viewV1(t, read)).createdAt as string;

    // Past the plan's 30 days, the day is written to the archive and leaves the list.
    clock.advance(32 * DAY_MS);
    for (let i = 0; i < 10; i++) await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    const lines = async (res: Response) => {
      expect(res.status).toBe(200);
      return (await ndjsonText(res))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as View & { id: string });
    };
    const v2 = await lines(await apiV2(`/message-archives/${day.slice(0, 10)}`, t.key));
    const v1 = await lines(await api(`/message-archives/${day.slice(0, 10)}`, t.key));
    expect(v2.map((m) => [m.id, m.status, m.deliveredAt === m.readAt])).toEqual([
      [justSent, "sent", true],
      [read, "read", true],
    ]);
    expect(v1.map((m) => [m.id, m.status, m.deliveredAt])).toEqual([
      [justSent, "sent", null],
      [read, "sent", null],
    ]);
    // Everything else of a line is v1's, field for field.
    expect(v2.map((m, i) => ({ ...m, status: v1[i]!.status, deliveredAt: v1[i]!.deliveredAt }))).toEqual(v1);
  });
});
