import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { api, json } from "./helpers/http";
import { createKey, createWorkspace } from "./helpers/fixtures";
import { ndjsonText } from "./helpers/ndjson";
import { answerAtEdge } from "./helpers/edge";
import { testNumber, testShard, testWorkspace } from "./helpers/objects";
import { connectCloudNumber, operatorCallOf, type OperatorCall } from "./helpers/operator";
import { send, textMessage } from "./helpers/send";
import { channelNumberStub, workspaceStub } from "../src/durable-objects/stubs";
import { historyStub } from "../src/durable-objects/history/history";
import { manifestKey, partKey } from "../src/durable-objects/history/archive-keys";
import { WORKSPACE_SCHEMA } from "../src/durable-objects/workspace/schema";
import { CHANNEL_NUMBER_SCHEMA } from "../src/durable-objects/channel-number/schema";
import { HISTORY_SCHEMA } from "../src/durable-objects/history/schema";
import { toMessageView, type MessageRow } from "../src/durable-objects/workspace/record";
import { UNKNOWN_OUTCOME_WINDOW_MS } from "../src/durable-objects/workspace/unknown-outcomes";
import { RETENTION_SLACK_MS } from "../src/durable-objects/shared/scheduler";
import { canonicalJson, SendMessageRequest } from "../src/domain/send-request";
import { sha256Hex } from "../src/lib/crypto";
import { DAY_MS, newJobId, utcDay } from "../src/domain/job-id";
import { eventsOf, type WebhookEvent, type WebhookQueueMessage } from "../src/domain/events";
import { inboundExtrasOf } from "../src/domain/inbound-details";
import { BEFORE_VERSIONS, V1, writeEarlierStorage, type Layout } from "./fixtures/earlier-layouts";
import { fakeClockPerTest } from "./helpers/clock";

// Objects already in production hold the storage layout of the release that created or last
// upgraded them. These tests build exactly such a layout (the release's own sqlite_master, kept
// in test/fixtures), fill it with data in every state that release could leave, and then let the
// current code start on it: nothing may be lost, changed, sent twice or left unsent. How the
// layouts were captured, and how their rows are written: test/fixtures/earlier-layouts.ts.

// A fresh stretch of time for each test, at 09:00 UTC (far from midnight: every message of the
// scenario is on one UTC day).
const clock = fakeClockPerTest(Date.UTC(2049, 0, 1, 9), (t) => utcDay(t) * DAY_MS + 60 * DAY_MS + 9 * 3_600_000);
afterEach(() => vi.restoreAllMocks());

const latest = (schema: { steps: readonly { version: number }[] }) => schema.steps[schema.steps.length - 1]!.version;

const eventId = () => `evt_${crypto.randomUUID().replaceAll("-", "")}`;

/**
 * The network edge of these tests: the operator's Cloud API (every call recorded; accepted unless
 * `answer` says otherwise) and the DNS-over-HTTPS resolver (configuring a webhook resolves its host).
 */
function mockEdge(answer: (call: OperatorCall, index: number) => Response | undefined = () => undefined) {
  const calls: OperatorCall[] = [];
  const resolver = new URL(env.DOH_RESOLVER_URL);
  answerAtEdge(async (input, init) => {
    const req = new Request(input, init);
    const url = new URL(req.url);
    if (req.url.startsWith(`${env.UPSTREAM_CLOUD_API_BASE_URL}/`)) {
      const call = await operatorCallOf(req);
      calls.push(call);
      return (
        answer(call, calls.length - 1) ??
        Response.json({
          messaging_product: "whatsapp",
          messages: [{ id: `wamid.${call.body.biz_opaque_callback_data}` }],
        })
      );
    }
    if (url.origin === resolver.origin && url.pathname === resolver.pathname) {
      const name = url.searchParams.get("name") ?? "";
      const answers =
        url.searchParams.get("type") === "AAAA" ? [] : [{ name, type: 1, TTL: 60, data: "93.184.216.34" }];
      return Response.json({ Status: 0, Answer: answers }, { headers: { "content-type": "application/dns-json" } });
    }
    throw new Error(`unexpected outbound request: ${req.url}`);
  });
  return { calls };
}

/** Every event the Worker handed to the webhook queue from now on (packed or not), by id. */
function publishedEvents(): () => string[] {
  const sent = vi.spyOn(env.WEBHOOK_QUEUE, "send");
  const batches = vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch");
  return () =>
    [
      ...sent.mock.calls.flatMap(([body]) => eventsOf(body as WebhookQueueMessage)),
      ...batches.mock.calls.flatMap(([items]) => [...items].flatMap((i) => eventsOf(i.body as WebhookQueueMessage))),
    ].map((e) => e.id);
}

const fingerprintOf = async (numberId: string, text: string, to: string) =>
  sha256Hex(canonicalJson(SendMessageRequest.parse(textMessage(numberId, text, to))));

/** A message record as both releases stored it (every column of `messages`). */
function record(
  id: string,
  numberId: string,
  to: string,
  text: string,
  at: number,
  change: Partial<MessageRow> = {},
): MessageRow {
  return {
    id,
    direction: "outbound",
    channel_number_id: numberId,
    recipient: to,
    type: "text",
    body: text,
    content: null,
    status: "queued",
    upstream_message_id: null,
    error_code: null,
    error_message: null,
    error_retriable: null,
    upstream_error_code: null,
    created_at: at,
    updated_at: at,
    processing_at: null,
    sent_at: null,
    failed_at: null,
    delivered_at: null,
    read_at: null,
    outcome_unknown_since: null,
    received_at: null,
    version: 1,
    copy_pending: 0,
    ...change,
  } as MessageRow;
}

const REFUSED = {
  code: "recipient_unreachable",
  message: "Message undeliverable.",
  retriable: false,
  upstreamCode: "131026",
};

type Name = "a" | "b" | "c" | "d" | "e" | "f" | "g" | "h" | "i" | "held";

/**
 * A workspace with two live numbers (N sends, P is paused by the operator), a webhook on N, and
 * the storage their objects had under `layout`: the workspace's records in every state, its event
 * log (some events published, some not), idempotency keys, delivery log, daily counts, a day in
 * its history shard and a day archived; N's outbox in every state with an owed change; P's paused
 * hold and its waiting message. Times are within the last hour (the records are hot, the keys live).
 */
async function upgradeScenario(layout: Layout, answer?: Parameters<typeof mockEdge>[0]) {
  const workspaceId = await createWorkspace();
  const { key } = await createKey(workspaceId);
  const webhookHost = `hooks-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
  const edge = mockEdge(answer);
  const N = (await connectCloudNumber(workspaceId)).numberId;
  const P = (await connectCloudNumber(workspaceId)).numberId;
  const hook = await api("/webhooks", key, {
    method: "POST",
    json: { channelNumberId: N, url: `https://${webhookHost}/hook` },
  });
  expect(hook.status).toBe(201);
  const webhookId = (await json<{ id: string }>(hook)).id;
  // Disabled: the consumer does not deliver the events these tests publish (its delivery log is what they read).
  await env.DB.prepare("UPDATE webhooks SET status = 'disabled', disabled_at = ? WHERE id = ?")
    .bind(new Date(clock.now()).toISOString(), webhookId)
    .run();

  const T = clock.now();
  const D = utcDay(T);
  const ago = (ms: number) => T - ms;
  const min = 60_000;
  // That release's jobIds: a UUIDv7 whose time is the start of the day of acceptance.
  const v1JobId = (day: number) => newJobId(day * DAY_MS);
  const to = (i: number) => `55119000000${String(i).padStart(2, "0")}`;

  const ids = {} as Record<Name, string>;
  for (const n of ["a", "b", "c", "d", "e", "f", "g", "h", "i", "held"] as const) ids[n] = v1JobId(D);
  const R: Record<Name, MessageRow> = {
    // Outcome unknown: called, the answer lost; the number marked it, the workspace knows.
    d: record(ids.d, N, to(4), "unknown", ago(60 * min), {
      status: "processing",
      processing_at: ago(60 * min) + 1_000,
      outcome_unknown_since: ago(60 * min) + 5_000,
      updated_at: ago(60 * min) + 5_000,
      version: 3,
    }),
    e: record(ids.e, N, to(5), "sent", ago(55 * min), {
      status: "sent",
      processing_at: ago(55 * min) + 1_000,
      sent_at: ago(55 * min) + 2_000,
      upstream_message_id: "wamid.e",
      updated_at: ago(55 * min) + 2_000,
      version: 3,
    }),
    f: record(ids.f, N, to(6), "delivered", ago(50 * min), {
      status: "sent",
      processing_at: ago(50 * min) + 1_000,
      sent_at: ago(50 * min) + 2_000,
      delivered_at: ago(49 * min),
      upstream_message_id: "wamid.f",
      updated_at: ago(49 * min),
      version: 4,
    }),
    g: record(ids.g, N, to(7), "failed", ago(45 * min), {
      status: "failed",
      processing_at: ago(45 * min) + 1_000,
      failed_at: ago(45 * min) + 2_000,
      error_code: REFUSED.code,
      error_message: REFUSED.message,
      error_retriable: 0,
      upstream_error_code: REFUSED.upstreamCode,
      updated_at: ago(45 * min) + 2_000,
      version: 3,
    }),
    // Retrying: called once, a temporary error; the outbox has it queued again, due in 30 s.
    b: record(ids.b, N, to(2), "retrying", ago(40 * min), {
      status: "processing",
      processing_at: ago(40 * min) + 1_000,
      updated_at: ago(40 * min) + 1_000,
      version: 2,
    }),
    // Sent, but the change is still owed to the workspace (a row of the number's relay table).
    h: record(ids.h, N, to(8), "owed", ago(30 * min), {
      status: "processing",
      processing_at: ago(30 * min) + 1_000,
      updated_at: ago(30 * min) + 1_000,
      version: 2,
    }),
    // Failed after the relay's checkpoint: the change may not have reached the workspace.
    i: record(ids.i, N, to(9), "after the checkpoint", ago(20 * min), {
      status: "processing",
      processing_at: ago(20 * min) + 1_000,
      updated_at: ago(20 * min) + 1_000,
      version: 2,
    }),
    // Cut short: claimed, its call started (`sending`) when the release changed.
    c: record(ids.c, N, to(3), "cut short", ago(15 * min), {
      status: "processing",
      processing_at: ago(12_000),
      updated_at: ago(12_000),
      version: 2,
    }),
    // P's message: claimed, then the operator refused the account (nothing sent): P paused, it waits.
    held: record(ids.held, P, to(10), "held", ago(4 * min), {
      status: "processing",
      processing_at: ago(4 * min) + 1_000,
      updated_at: ago(4 * min) + 1_000,
      version: 2,
    }),
    // Queued, never called.
    a: record(ids.a, N, to(1), "queued", ago(50_000)),
  };
  const inbound: MessageRow = {
    ...record(newJobId(ago(5 * min)), N, "5511977770001", "hi there", ago(5 * min)),
    direction: "inbound",
    status: "received",
    upstream_message_id: "wamid.IN1",
    received_at: ago(5 * min) - 800,
  } as MessageRow;
  // Two records of three days ago, in that day's history shard.
  const oldDay = D - 3;
  const moved = [10, 11].map((h, n) =>
    record(v1JobId(oldDay), N, to(20 + n), `moved ${n}`, oldDay * DAY_MS + h * 3_600_000, {
      status: "sent",
      processing_at: oldDay * DAY_MS + h * 3_600_000 + 1_000,
      sent_at: oldDay * DAY_MS + h * 3_600_000 + 2_000,
      upstream_message_id: `wamid.moved${n}`,
      updated_at: oldDay * DAY_MS + h * 3_600_000 + 2_000,
      version: 3,
    }),
  );
  // A day archived by that release (its manifest and its part in R2).
  const archivedDay = D - 40;
  const archivedViews = [0, 1, 2].map((n) =>
    toMessageView(
      record(v1JobId(archivedDay), N, to(30), `archived ${n}`, archivedDay * DAY_MS + n * 60_000, {
        status: "sent",
        sent_at: archivedDay * DAY_MS + n * 60_000 + 1_000,
        processing_at: archivedDay * DAY_MS + n * 60_000 + 500,
      }),
    ),
  );
  const part = await new Response(
    new Blob([`${archivedViews.map((v) => JSON.stringify(v)).join("\n")}\n`])
      .stream()
      .pipeThrough(new CompressionStream("gzip")),
  ).arrayBuffer();
  await env.ARCHIVE.put(partKey(workspaceId, archivedDay, 0), part);
  await env.ARCHIVE.put(
    manifestKey(workspaceId, archivedDay),
    JSON.stringify({ day: "", parts: 1, messages: 3, archivedAt: new Date(ago(9 * DAY_MS)).toISOString() }),
  );

  // The event log: four events published, two not yet (the cursor is at 4).
  const statusEvent = (r: MessageRow, previous: string | null, at: number): WebhookEvent => {
    const view = toMessageView(r);
    if (view.direction !== "outbound") throw new Error("outbound only");
    return {
      id: eventId(),
      type: "message.status",
      workspaceId,
      channelNumberId: r.channel_number_id,
      createdAt: new Date(at).toISOString(),
      data: {
        messageId: r.id,
        channelNumberId: r.channel_number_id,
        to: r.recipient,
        toUserId: null,
        status: view.status,
        previousStatus: previous as "queued",
        upstreamMessageId: view.upstreamMessageId,
        error: view.error,
        deliveredAt: view.deliveredAt,
        readAt: view.readAt,
        updatedAt: view.updatedAt,
      },
    };
  };
  const events: { event: WebhookEvent; subject: string; at: number }[] = [
    { event: statusEvent({ ...R.e, status: "processing" }, "queued", R.e.processing_at!), subject: ids.e, at: 0 },
    { event: statusEvent(R.e, "processing", R.e.sent_at!), subject: ids.e, at: 0 },
    { event: statusEvent(R.g, "processing", R.g.failed_at!), subject: ids.g, at: 0 },
    { event: statusEvent({ ...R.f, delivered_at: null }, "processing", R.f.sent_at!), subject: ids.f, at: 0 },
    { event: statusEvent(R.f, "sent", R.f.delivered_at!), subject: ids.f, at: 0 },
    {
      event: {
        id: eventId(),
        type: "message.received",
        workspaceId,
        channelNumberId: N,
        createdAt: new Date(inbound.created_at).toISOString(),
        data: {
          messageId: inbound.id,
          channelNumberId: N,
          ...inboundExtrasOf(inbound.recipient, null),
          type: "text",
          text: { body: inbound.body },
          content: null,
          upstreamMessageId: "wamid.IN1",
          receivedAt: new Date(inbound.received_at!).toISOString(),
          media: null,
        },
      },
      subject: inbound.id,
      at: 0,
    },
  ];
  const published = events.slice(0, 4).map((e) => e.event.id);
  const unpublished = events.slice(4).map((e) => e.event.id);

  const outbound = Object.values(R);
  const keyed = (layout.objects.workspace.find((e) => e.name === "event_attempts")?.sql ?? "").includes(
    "WITHOUT ROWID",
  );
  // The delivery log: the published events delivered to the webhook (one after a failed attempt).
  const attempts = [0, 1, 2, 2, 3].map((n, k) => ({
    seq: keyed ? ago(40 * min) + k * 1_000 : k + 1,
    event_id: events[n]!.event.id,
    event_type: "message.status",
    subject: events[n]!.subject,
    webhook_id: webhookId,
    attempt: k === 3 ? 2 : 1,
    attempted_at: ago(40 * min) + k * 1_000,
    outcome: k === 2 ? "failed" : "delivered",
    status_code: k === 2 ? 500 : 204,
    latency_ms: 40 + k,
    error: k === 2 ? "HTTP 500" : null,
    next_retry_at: k === 2 ? ago(40 * min) + 3_000 : null,
  }));

  const workspace = workspaceStub(env, workspaceId);
  await writeEarlierStorage(workspace, layout.objects.workspace, layout.version, async (w) => {
    for (const r of [...outbound, inbound]) w.insert("messages", r);
    for (const r of outbound) {
      const n = (Object.keys(R) as Name[]).find((k) => R[k] === r)!;
      w.insert("idempotency_keys", {
        key: `key-${n}`,
        fingerprint: await fingerprintOf(r.channel_number_id, r.body, r.recipient),
        job_id: r.id,
        created_at: r.created_at,
      });
    }
    events.forEach((e, k) =>
      w.insert("events", {
        rowid: k + 1,
        id: e.event.id,
        type: e.event.type,
        subject: e.subject,
        body: JSON.stringify(e.event),
        created_at: Date.parse(e.event.createdAt),
        published_at: k < 4 ? Date.parse(e.event.createdAt) + 1_000 : null,
        channel_number_id: N,
        delivery: k < 4 ? "delivered" : "pending",
        attempts: k < 4 ? 1 : 0,
        delivered_at: k < 4 ? Date.parse(e.event.createdAt) + 2_000 : null,
        first_report_by: Date.parse(e.event.createdAt) + 60_000,
      }),
    );
    w.setMeta("events_published_through", "4");
    w.setMeta("events_first_report_from", "5");
    for (const a of attempts) w.insert("event_attempts", a);
    const counts = (day: number, n: string, c: [number, number, number, number]) =>
      w.insert("daily_counts", {
        day,
        channel_number_id: n,
        accepted: c[0],
        sent: c[1],
        failed: c[2],
        received: c[3],
        dirty: 0,
      });
    counts(D, N, [9, 2, 1, 1]);
    counts(D, P, [1, 0, 0, 0]);
    counts(oldDay, N, [2, 2, 0, 0]);
    counts(archivedDay, N, [3, 3, 0, 0]);
    w.insert("history_days", { day: oldDay, messages: 2 });
    w.setMeta("history_boundary", JSON.stringify({ createdAt: moved[1]!.created_at, id: moved[1]!.id }));
    w.insert("archived_days", { day: archivedDay, messages: 3, parts: 1, archived_at: ago(9 * DAY_MS) });
    w.setMeta("workspace_id", workspaceId);
    w.setMeta("history_days", "30");
  });

  // N's outbox, one entry per message, in each state its drain left it.
  const relayAfter = ago(60_000);
  const outboxOf = (r: MessageRow, seq: number, entry: Record<string, SqlStorageValue>) => ({
    seq,
    job_id: r.id,
    workspace_id: workspaceId,
    channel_number_id: r.channel_number_id,
    recipient: r.recipient,
    body: r.body,
    accepted_at: r.created_at,
    state: "queued",
    attempts: 0,
    next_attempt_at: r.created_at,
    updated_at: r.created_at,
    is_head: 0,
    ...entry,
  });
  const number = channelNumberStub(env, N);
  let owedRows = 0;
  await writeEarlierStorage(number, layout.objects.number, layout.version, (w) => {
    const hasErrorColumn = w.columns("outbox").includes("error");
    const rows = [
      outboxOf(R.d, 1, {
        state: "unknown",
        attempts: 1,
        unknown_since: R.d.outcome_unknown_since,
        first_attempt_at: R.d.processing_at,
        updated_at: R.d.outcome_unknown_since,
      }),
      outboxOf(R.e, 2, {
        state: "sent",
        attempts: 1,
        upstream_message_id: "wamid.e",
        first_attempt_at: R.e.processing_at,
        updated_at: R.e.sent_at,
      }),
      outboxOf(R.f, 3, {
        state: "sent",
        attempts: 1,
        upstream_message_id: "wamid.f",
        first_attempt_at: R.f.processing_at,
        updated_at: R.f.sent_at,
      }),
      outboxOf(R.g, 4, {
        state: "failed",
        attempts: 1,
        error: JSON.stringify(REFUSED),
        first_attempt_at: R.g.processing_at,
        updated_at: R.g.failed_at,
      }),
      outboxOf(R.b, 5, {
        state: "queued",
        attempts: 1,
        is_head: 1,
        next_attempt_at: T + 30_000,
        first_attempt_at: R.b.processing_at,
        updated_at: R.b.processing_at,
      }),
      outboxOf(R.h, 6, {
        state: "sent",
        attempts: 1,
        upstream_message_id: "wamid.h",
        first_attempt_at: R.h.processing_at,
        updated_at: ago(29 * min),
      }),
      outboxOf(R.i, 7, {
        state: "failed",
        attempts: 1,
        error: JSON.stringify(REFUSED),
        first_attempt_at: R.i.processing_at,
        updated_at: ago(10_000),
      }),
      outboxOf(R.c, 8, {
        state: "sending",
        attempts: 1,
        is_head: 1,
        first_attempt_at: ago(12_000),
        updated_at: ago(12_000),
      }),
      outboxOf(R.a, 9, { state: "queued", attempts: 0, is_head: 1 }),
    ];
    for (const r of rows) w.insert("outbox", r);
    // Owed to the workspace: h's change (its relay could not hand it), and, for the release that
    // relayed every change through a row (no `error` column, no checkpoint), i's too.
    const owe = (u: Record<string, unknown>) => {
      owedRows++;
      w.insert("status_outbox", { workspace_id: workspaceId, body: JSON.stringify(u) });
    };
    owe({ jobId: ids.h, at: ago(29 * min), status: "sent", upstreamMessageId: "wamid.h" });
    if (!hasErrorColumn) owe({ jobId: ids.i, at: ago(10_000), status: "failed", error: REFUSED });
    // The pace's row: that release's call times, its relay checkpoint and the entries in flight
    // (the release before versions kept the call times alone and found `sending` entries by index).
    w.setMeta(
      "recent_calls",
      JSON.stringify(layout.version === null ? [ago(12_000)] : { calls: [ago(12_000)], relayAfter, sending: [8] }),
    );
  });
  const paused = channelNumberStub(env, P);
  const pause = {
    error: {
      code: "upstream_auth_failed",
      message: "Error validating access token",
      retriable: false,
      upstreamCode: "190",
    },
    since: ago(3 * min),
    probes: 1,
    nextProbeAt: T + 12 * min,
  };
  await writeEarlierStorage(paused, layout.objects.number, layout.version, (w) => {
    w.insert("outbox", outboxOf(R.held, 1, { state: "queued", attempts: 0, is_head: 1 }));
    w.setMeta("paused", JSON.stringify(pause));
    w.setMeta("recent_calls", JSON.stringify(layout.version === null ? [] : { calls: [], relayAfter, sending: [] }));
  });
  const shard = historyStub(env, workspaceId, oldDay);
  await writeEarlierStorage(shard, layout.objects.history, layout.version, (w) => {
    for (const r of moved) w.insert("messages", r);
    w.setMeta("workspace_id", workspaceId);
    w.setMeta("day", String(oldDay));
  });
  // A running instance must not go on over storage changed under it: each starts again on it.
  for (const stub of [workspace, number, paused, shard]) await evictDurableObject(stub);

  const views = new Map<string, Record<string, unknown>>(
    [...outbound, inbound, ...moved].map((r) => [r.id, toMessageView(r) as unknown as Record<string, unknown>]),
  );
  // Newest first: the hot day's records by (created_at, id), then the shard's day.
  const listOrder = [...outbound, inbound, ...moved].sort((x, y) => y.created_at - x.created_at).map((r) => r.id);
  return {
    workspaceId,
    key,
    N,
    P,
    webhookId,
    edge,
    T,
    D,
    ids,
    R,
    inbound,
    moved,
    oldDay,
    archivedDay,
    archivedViews,
    views,
    listOrder,
    published,
    unpublished,
    attempts,
    owedRows,
    pause,
  };
}

type Scenario = Awaited<ReturnType<typeof upgradeScenario>>;

const view = async (s: Scenario, id: string) => json<Record<string, unknown>>(await api(`/messages/${id}`, s.key));
const statusOf = async (s: Scenario, id: string) => (await view(s, id)).status;

/** Every page of GET /messages (`limit` per page), ids in order. */
async function listAll(s: Scenario, limit = 100): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | null = null;
  do {
    const page: { data: { id: string }[]; nextCursor: string | null } = await json(
      await api(`/messages?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, s.key),
    );
    out.push(...page.data.map((m) => m.id));
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

/** Runs a number's alarm `rounds` times, a little over the pace's second apart. */
async function drain(numberId: string, rounds = 4): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    clock.advance(1_100);
    await runDurableObjectAlarm(channelNumberStub(env, numberId));
  }
}

const workspaceAlarms = async (s: Scenario, rounds = 6) => {
  for (let i = 0; i < rounds; i++) await runDurableObjectAlarm(workspaceStub(env, s.workspaceId));
};

const called = (s: Scenario) => s.edge.calls.map((c) => c.body.biz_opaque_callback_data);

/**
 * What every upgrade must keep, whichever release the storage comes from: records read the same,
 * only the messages still to call are called (once each), a call cut short is never made again,
 * owed changes reach the records, unpublished events go out once, idempotency keys still bind.
 */
async function expectUpgradedInPlace(layout: Layout): Promise<Scenario> {
  const events = publishedEvents();
  const s = await upgradeScenario(layout);

  // Started on it: every record reads as that release showed it, the current schema underneath.
  for (const [id, expected] of s.views) expect(await view(s, id), id).toEqual(expected);
  expect(await testWorkspace(s.workspaceId).schemaVersion()).toBe(latest(WORKSPACE_SCHEMA));
  expect(await listAll(s)).toEqual(s.listOrder);

  // The number hands over what its outbox owed, then calls only the queued message; the retry
  // goes out when its back-off ends. The one cut short, and the unknown one, are never called.
  await drain(s.N, 3);
  expect(await testNumber(s.N).schemaVersion()).toBe(latest(CHANNEL_NUMBER_SCHEMA));
  expect(called(s)).toEqual([s.ids.a]);
  clock.set(s.T + 31_000);
  await drain(s.N, 6);
  await drain(s.P, 3);
  expect(called(s)).toEqual([s.ids.a, s.ids.b]);
  // Once handed over, the number keeps no outbox, relay table or pair pace rows.
  const left = await testNumber(s.N).tableNames();
  for (const gone of ["outbox", "status_outbox", "pair_pace"]) expect(left).not.toContain(gone);

  const after = Object.fromEntries(
    await Promise.all((Object.keys(s.ids) as Name[]).map(async (n) => [n, await view(s, s.ids[n])] as const)),
  );
  expect(Object.fromEntries(Object.entries(after).map(([n, v]) => [n, v.status]))).toEqual({
    a: "sent",
    b: "sent",
    c: "processing",
    d: "processing",
    e: "sent",
    f: "sent",
    g: "failed",
    h: "sent",
    i: "failed",
    held: "processing",
  });
  expect(after.a).toMatchObject({ upstreamMessageId: `wamid.${s.ids.a}` });
  expect(after.b).toMatchObject({
    upstreamMessageId: `wamid.${s.ids.b}`,
    processingAt: s.views.get(s.ids.b)!.processingAt,
  });
  expect(after.c).toMatchObject({ outcomeUnknownSince: expect.any(String) });
  expect(after.d).toEqual(s.views.get(s.ids.d));
  expect(after.h).toMatchObject({ upstreamMessageId: "wamid.h" });
  expect(after.i).toMatchObject({ error: REFUSED });
  for (const n of ["e", "f", "g"] as const) expect(after[n], n).toEqual(s.views.get(s.ids[n]));
  // P stays paused (the operator refused its account), its message waiting.
  expect((await channelNumberStub(env, s.P).sendingState()).paused).toMatchObject({ upstreamCode: "190" });
  expect((await testNumber(s.P).queued()).map((e) => e.jobId)).toEqual([s.ids.held]);

  // Events recorded before the upgrade and not yet published go out once; the published ones never again.
  clock.advance(1_000);
  await workspaceAlarms(s, 2);
  const out = events();
  for (const id of s.unpublished)
    expect(
      out.filter((o) => o === id),
      id,
    ).toHaveLength(1);
  for (const id of s.published) expect(out, id).not.toContain(id);

  // Idempotency keys bound before the upgrade still bind: an identical retry is the same message, another payload a conflict.
  const replay = await send(s.key, "key-e", textMessage(s.N, "sent", s.R.e.recipient));
  expect(replay.status).toBe(200);
  expect(await json(replay)).toEqual({ jobId: s.ids.e, status: "duplicado_identico" });
  const conflict = await send(s.key, "key-a", textMessage(s.N, "another text", s.R.a.recipient));
  expect(conflict.status).toBe(409);
  await drain(s.N, 3);
  expect(called(s)).toEqual([s.ids.a, s.ids.b]);
  return s;
}

describe("objects of earlier releases upgrade in place", () => {
  it("storage from before schema versions: nothing lost, nothing sent again, unpublished events published once", async () => {
    await expectUpgradedInPlace(BEFORE_VERSIONS);
  }, 60_000);

  it("v1 storage (the first versioned release): nothing lost, only the queued and the retrying message called, once each", async () => {
    const s = await expectUpgradedInPlace(V1);
    // The owed change was handed over from its relay row, which is gone with the outbox.
    expect(s.owedRows).toBe(1);
  }, 60_000);

  it("v1 storage: lists, the delivery log, daily counts, history days and archived days read as before", async () => {
    const s = await upgradeScenario(V1);
    expect(await listAll(s)).toEqual(s.listOrder);
    // Pages of one, across the hot records of that release and its shard: each listed once, in order.
    expect(await listAll(s, 1)).toEqual(s.listOrder);
    // Filters reach the same records.
    const failed = await json<{ data: { id: string }[] }>(await api("/messages?status=failed", s.key));
    expect(failed.data.map((m) => m.id)).toEqual([s.ids.g]);
    const inbound = await json<{ data: { id: string }[] }>(await api("/messages?direction=inbound", s.key));
    expect(inbound.data.map((m) => m.id)).toEqual([s.inbound.id]);

    // The delivery log of that release, newest first, and per message.
    const log = await json<{ data: { eventId: string; outcome: string; attempt: number }[] }>(
      await api(`/webhooks/${s.webhookId}/deliveries`, s.key),
    );
    expect(log.data.map((d) => [d.eventId, d.outcome, d.attempt])).toEqual(
      [...s.attempts].reverse().map((a) => [a.event_id, a.outcome, a.attempt]),
    );
    const aboutG = await json<{ deliveries: { eventId: string; outcome: string }[] }>(
      await api(`/messages/${s.ids.g}/events`, s.key),
    );
    expect(aboutG.deliveries.map((d) => d.outcome)).toEqual(["failed", "delivered"]);

    // Daily counts: the day's counts of that release, the shard's day, the archived day.
    const usage = await json<{
      daily: { day: string; accepted: number; sent: number; failed: number; received: number }[];
    }>(await api("/usage", s.key));
    const dayOf = (d: number) => usage.daily.find((u) => u.day === new Date(d * DAY_MS).toISOString().slice(0, 10));
    expect(dayOf(s.D)).toEqual({ day: expect.any(String), accepted: 10, sent: 2, failed: 1, received: 1 });
    expect(dayOf(s.oldDay)).toMatchObject({ accepted: 2, sent: 2 });
    // Sends then count on top of them: the monthly quota still sees that release's sends.
    await drain(s.N, 3);
    clock.set(s.T + 31_000);
    await drain(s.N, 3);
    const later = await json<{ daily: { day: string; accepted: number; sent: number; failed: number }[] }>(
      await api("/usage", s.key),
    );
    // a and b sent, h sent (owed), i failed (after the checkpoint).
    expect(later.daily.find((u) => u.day === dayOf(s.D)!.day)).toMatchObject({ accepted: 10, sent: 5, failed: 2 });

    // The archived day is listed and downloads as it was written.
    const archives = await json<{ data: { day: string; messages: number }[] }>(await api("/message-archives", s.key));
    const archivedName = new Date(s.archivedDay * DAY_MS).toISOString().slice(0, 10);
    expect(archives.data).toEqual([{ day: archivedName, messages: 3, archivedAt: expect.any(String) }]);
    const download = await api(`/message-archives/${archivedName}`, s.key);
    expect(download.status).toBe(200);
    expect(
      (await ndjsonText(download))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual(s.archivedViews);

    // The shard of that release was upgraded when first read.
    expect(await testShard(s.workspaceId, s.oldDay).schemaVersion()).toBe(latest(HISTORY_SCHEMA));
  }, 60_000);

  it("v1 storage: a paused number's waiting message is sent when the pause ends, also after the number restarted", async () => {
    const s = await upgradeScenario(V1);
    await drain(s.P, 2);
    expect(called(s)).toEqual([]);
    // Idle while paused: the runtime evicts it; its queue is rebuilt from the workspace's records.
    await evictDurableObject(testNumber(s.P));
    clock.set(s.pause.nextProbeAt + 1_000);
    await drain(s.P, 3);
    expect(called(s)).toEqual([s.ids.held]);
    expect(await statusOf(s, s.ids.held)).toBe("sent");
  }, 60_000);

  it("v1 storage: a retry due after the number restarted is still sent, once", async () => {
    const s = await upgradeScenario(V1);
    await drain(s.N, 2);
    expect(called(s)).toEqual([s.ids.a]);
    // (The eviction waits for the call's 15-second timeout timer, still pending: this test takes ~15 s.)
    await evictDurableObject(testNumber(s.N));
    clock.set(s.T + 31_000);
    await drain(s.N, 4);
    expect(called(s)).toEqual([s.ids.a, s.ids.b]);
    expect(await statusOf(s, s.ids.b)).toBe("sent");
  }, 60_000);

  it("v1 storage: a message of that release the operator answers with a temporary error is retried, then sent once", async () => {
    const s = await upgradeScenario(V1, (call, index) =>
      index === 0
        ? Response.json({ error: { code: 2, message: "Service temporarily unavailable" } }, { status: 503 })
        : undefined,
    );
    await drain(s.N, 1);
    expect(called(s)).toEqual([s.ids.a]);
    expect(await view(s, s.ids.a)).toMatchObject({ status: "processing", outcomeUnknownSince: null });
    // Past its back-off (and b's): called again, accepted.
    clock.advance(5 * 60_000);
    await drain(s.N, 6);
    expect(called(s).filter((id) => id === s.ids.a)).toHaveLength(2);
    expect(await view(s, s.ids.a)).toMatchObject({ status: "sent", outcomeUnknownSince: null });
  }, 60_000);

  it("v1 storage: outcomes unknown at the upgrade fail when the operator's window ends, like those unknown since", async () => {
    const s = await upgradeScenario(V1);
    await drain(s.N, 2);
    expect(await view(s, s.ids.c)).toMatchObject({ status: "processing", outcomeUnknownSince: expect.any(String) });
    clock.set(s.T + UNKNOWN_OUTCOME_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(s, 8);
    for (const n of ["c", "d"] as const)
      expect(await view(s, s.ids[n]), n).toMatchObject({
        status: "failed",
        error: { code: "upstream_outcome_unknown" },
      });
  }, 60_000);

  it("v1 storage: its records move to history and are archived with their day, each once; its tables go once emptied", async () => {
    const s = await upgradeScenario(V1);
    await drain(s.N, 3);
    clock.set(s.T + 31_000);
    await drain(s.N, 3);
    await workspaceAlarms(s, 2);
    const before = new Map(await Promise.all(s.listOrder.map(async (id) => [id, await view(s, id)] as const)));

    // Two days on, that release's hot records are in their day's shard: read and listed the same.
    clock.set(s.T + 2 * DAY_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(s, 6);
    expect(await testWorkspace(s.workspaceId).tableNames()).not.toContain("messages");
    for (const [id, v] of before) expect(await view(s, id), id).toEqual(v);
    expect(await listAll(s)).toEqual(s.listOrder);
    expect(await listAll(s, 3)).toEqual(s.listOrder);

    // A week on, the outcomes still unknown have failed (upstream_outcome_unknown): the records as archived.
    clock.set(s.T + UNKNOWN_OUTCOME_WINDOW_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(s, 6);
    for (const id of s.listOrder) before.set(id, await view(s, id));
    expect(before.get(s.ids.d)).toMatchObject({ status: "failed", error: { code: "upstream_outcome_unknown" } });

    // Past the plan's window (30 days), each day is archived from its shard, then the shard is dropped.
    clock.set((s.D + 32) * DAY_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(s, 12);
    const archives = await json<{ data: { day: string; messages: number }[] }>(await api("/message-archives", s.key));
    const name = (d: number) => new Date(d * DAY_MS).toISOString().slice(0, 10);
    const hot = s.listOrder.filter((id) => !s.moved.some((m) => m.id === id));
    expect(archives.data.map((a) => [a.day, a.messages])).toEqual([
      [name(s.D), hot.length],
      [name(s.oldDay), 2],
      [name(s.archivedDay), 3],
    ]);
    const lines = async (d: number) =>
      (await ndjsonText(await api(`/message-archives/${name(d)}`, s.key)))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { id: string });
    // (That release's records are archived in id order, which for its ids is not their time order.)
    const oldLines = await lines(s.oldDay);
    expect(oldLines.map((l) => l.id).sort()).toEqual(s.moved.map((m) => m.id).sort());
    for (const l of oldLines) expect(l, l.id).toEqual(before.get(l.id));
    const dayLines = await lines(s.D);
    expect(dayLines.map((l) => l.id).sort()).toEqual([...hot].sort());
    for (const l of dayLines) expect(l, l.id).toEqual(before.get(l.id));
    for (const id of s.listOrder) expect((await api(`/messages/${id}`, s.key)).status).toBe(404);
    expect(await testShard(s.workspaceId, s.oldDay).tableNames()).toEqual([]);
    expect(await testShard(s.workspaceId, s.D).tableNames()).toEqual([]);
    // That release's tables are gone: keys after their 24 hours, events and delivery log after their 3 days.
    const left = await testWorkspace(s.workspaceId).tableNames();
    for (const gone of [
      "messages",
      "idempotency_keys",
      "events",
      "event_attempts",
      "daily_counts",
      "history_days",
      "archived_days",
    ])
      expect(left, gone).not.toContain(gone);
  }, 120_000);

  it("v1 storage: its idempotency keys bind for their 24 hours, then a key may be used again", async () => {
    const s = await upgradeScenario(V1);
    const replay = await send(s.key, "key-f", textMessage(s.N, "delivered", s.R.f.recipient));
    expect(await json(replay)).toEqual({ jobId: s.ids.f, status: "duplicado_identico" });
    clock.set(s.R.f.created_at + DAY_MS + RETENTION_SLACK_MS + 60_000);
    await workspaceAlarms(s, 3);
    const fresh = await send(s.key, "key-f", textMessage(s.N, "delivered", s.R.f.recipient));
    expect(fresh.status).toBe(201);
    expect((await json<{ jobId: string }>(fresh)).jobId).not.toBe(s.ids.f);
  }, 60_000);

  it("a history shard holding a day upgrades from either layout; an empty or dropped one stays without tables", async () => {
    for (const layout of [BEFORE_VERSIONS, V1]) {
      const workspaceId = crypto.randomUUID();
      const shard = historyStub(env, workspaceId, 20_000);
      const empty = testShard(workspaceId, 20_001);
      // Nothing was ever moved to `empty`: reading it creates nothing.
      expect(await empty.get(crypto.randomUUID())).toBeNull();
      expect(await empty.tableNames()).toEqual([]);

      const id = newJobId(20_000 * DAY_MS);
      const kept = record(id, crypto.randomUUID(), "5511900000001", "kept", 20_000 * DAY_MS + 1, { status: "sent" });
      await writeEarlierStorage(shard, layout.objects.history, layout.version, (w) => {
        w.insert("messages", kept);
        w.setMeta("workspace_id", workspaceId);
        w.setMeta("day", "20000");
      });
      await evictDurableObject(shard);
      expect(await shard.get(id), layout.name).toMatchObject({ body: "kept", status: "sent" });
      expect(await testShard(workspaceId, 20_000).schemaVersion()).toBe(latest(HISTORY_SCHEMA));
      expect((await shard.list("legacy", {}, null, 10, 100)).rows.map((r) => r.id)).toEqual([id]);

      await shard.drop();
      expect(await shard.get(id)).toBeNull();
      await evictDurableObject(shard);
      expect(await shard.list("legacy", {}, null, 10, 100)).toEqual({ rows: [], next: null, scanned: 0 });
      expect(await testShard(workspaceId, 20_000).tableNames()).toEqual([]);
    }
  });
});
