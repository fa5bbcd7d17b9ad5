import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { api, json } from "../../test/helpers/http";
import { createKey, createWorkspace } from "../../test/helpers/fixtures";
import { connectLiveNumber, operatorMessagesUrl, type OperatorCall } from "../../test/helpers/operator";
import { inboundPayload, postOperator, seconds, statusPayload } from "../../test/helpers/operator-webhook";
import { send, textMessage } from "../../test/helpers/send";
import { apiV2, positionalTemplate, sendV2 } from "../../test/helpers/operator-templates";
import { mockNetwork, type Receiver } from "../../test/helpers/webhook-net";
import { upsertTemplates } from "../../src/features/templates/store";
import { normalizeTemplate, OperatorTemplate } from "../../src/domain/template";
import { Meter, type Usage } from "./meter";

// One message's whole life, and 100 of them, through the real Worker, Durable Objects, queues, D1 and
// R2; only the operator and the customer's webhook receiver (with its DNS) are answered, at the network
// edge. The clock is vitest's fake Date, far in the future so that no alarm fires on its own: the driver
// below runs each object's alarm when it is due, in time order, and waits for the queues to drain.

const DAY = 86_400_000;
const RECEIVER_URL = "https://hooks.acme-shop.com/hook";
type Kind = "text" | "template" | "image";
/** Each scenario: its description (cost.md's heading), messages, numbers, recipients, kind. */
const SCENARIOS: Array<[string, number, number, number, Kind]> = [
  ["1 message: 1 workspace, 1 number, 1 recipient", 1, 1, 1, "text"],
  ["1 template message (API v2): 1 workspace, 1 number, 1 recipient", 1, 1, 1, "template"],
  ["100 messages: 1 workspace, 1 number, 10 recipients", 100, 1, 10, "text"],
  ["100 template messages (API v2): 1 workspace, 1 number, 10 recipients", 100, 1, 10, "template"],
  ["100 messages: 1 workspace, 10 numbers, 100 recipients", 100, 10, 100, "text"],
  ["1 image message from the media store (API v2): 1 workspace, 1 number, 1 recipient", 1, 1, 1, "image"],
  ["100 image messages naming one stored image (API v2): 1 workspace, 1 number, 10 recipients", 100, 1, 10, "image"],
];

const meter = new Meter();
const results: Array<{ description: string; messages: number; usage: Usage }> = [];
let net: ReturnType<typeof mockNetwork>;
/** Outbound requests seen since the scenario's setup, by the end of their URL. */
const seen = (urlEnd: string) => net.seen.filter((s) => s.url.endsWith(urlEnd)).length;
let clock = Date.UTC(2047, 4, 1, 9);
/** Moves the clock forward only (vi.waitFor advances fake time while it polls, so `clock` may be behind Date.now()). */
const setClock = (ms: number) => {
  clock = Math.max(ms, Date.now());
  vi.setSystemTime(clock);
};
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The operator accepts every message, and knows the recipient under the number we sent to (no alias to remember). */
const operatorAccepts: Receiver = (req) => {
  const { to, biz_opaque_callback_data: id } = JSON.parse(req.body) as OperatorCall["body"];
  const contacts = [{ input: to, wa_id: to.replace(/^\+/, "") }];
  return Response.json({ messaging_product: "whatsapp", contacts, messages: [{ id: `wamid.${id}` }] });
};
const mediaAccepted: Receiver = () => Response.json({ id: "1013859600285441" });

/** A pro workspace with a key and live numbers, each with the customer's webhook (setup, not metered). */
async function createTenant(numbers: number) {
  const workspaceId = await createWorkspace({ plan: "pro" });
  const { key } = await createKey(workspaceId);
  const list: Array<{ numberId: string; phoneNumberId: string }> = [];
  for (let i = 0; i < numbers; i++) {
    const { numberId, phoneNumberId } = await connectLiveNumber(workspaceId);
    list.push({ numberId, phoneNumberId });
    net.receivers.set(operatorMessagesUrl(phoneNumberId), operatorAccepts);
    net.receivers.set(operatorMessagesUrl(phoneNumberId).replace(/messages$/, "media"), mediaAccepted);
    const hook = await api("/webhooks", key, {
      method: "POST",
      json: { channelNumberId: numberId, url: RECEIVER_URL },
    });
    if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${await hook.text()}`);
  }
  return { key, numbers: list };
}
type Tenant = Awaited<ReturnType<typeof createTenant>>;

/** A business account's template, stored as a sync would, for the numbers of the template scenarios. */
async function giveTemplates(numberIds: string[]): Promise<void> {
  const wabaId = `waba-${crypto.randomUUID()}`;
  const components = [{ type: "BODY", text: "Your order {{1}} has shipped and will arrive {{2}}." }];
  const raw = positionalTemplate("order_update", { components });
  await upsertTemplates(env.DB, wabaId, [normalizeTemplate(OperatorTemplate.parse(raw))!], new Date().toISOString());
  for (const id of numberIds)
    await env.DB.prepare("UPDATE channel_numbers SET waba_id = ? WHERE id = ?").bind(wabaId, id).run();
}

/** Events owed by the workspaces seen so far (committed, not yet published: their in-memory timer runs in real time). */
async function owedEvents(): Promise<number> {
  let n = 0;
  for (const o of meter.objects.values()) {
    if (o.cls !== "Workspace") continue;
    n += await runInDurableObject(o.stub(), (_, state) => {
      // The driver's own look is not part of the cost (a synchronous statement: nothing else runs meanwhile).
      meter.counting = false;
      const owed = state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM owed_events").one().n;
      meter.counting = true;
      return owed;
    });
  }
  return n;
}

/** Waits until every queued message was consumed (the consumers call objects, which may arm alarms). */
const queuesIdle = () => vi.waitFor(() => expect(meter.queuesIdle()).toBe(true), { timeout: 20_000, interval: 20 });

/** Waits until the events owed are published (the publisher's timer runs in real time) and consumed. */
async function publishedAndConsumed(): Promise<void> {
  for (let guard = 0; guard < 200; guard++) {
    await queuesIdle();
    if ((await owedEvents()) === 0 && meter.queuesIdle()) return;
    await pause(50);
  }
  throw new Error("events stayed owed");
}

/** Runs due alarms in time order up to `until`, moving the clock to each, draining the queues between them. */
async function runUntil(until: number): Promise<void> {
  for (let guard = 0; guard < 5_000; guard++) {
    await queuesIdle();
    // The earliest armed alarm among the objects seen so far (read without counting).
    let next: { stub: DurableObjectStub; at: number } | null = null;
    for (const o of meter.objects.values()) {
      if (o.cls === "Throttle") continue;
      const stub = o.stub();
      const at = await runInDurableObject(stub, (_, state) => state.storage.getAlarm());
      if (at !== null && (next === null || at < next.at)) next = { stub, at };
    }
    if (!next || next.at > until) return setClock(until);
    setClock(next.at);
    if (await runDurableObjectAlarm(next.stub)) meter.add("alarms");
  }
  throw new Error("alarms kept re-arming");
}

const recipientAt = (i: number, recipients: number) => `55119${String(1000000 + (i % recipients)).padStart(7, "0")}`;

/** One image in the workspace's media store (`POST /api/v2/media`): a JPEG's first bytes, then filler; its id. */
async function storeImage(t: Tenant): Promise<string> {
  const head = [0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00];
  const body = Uint8Array.from({ length: 200_000 }, (_, i) => head[i] ?? (i * 31 + 7) & 0xff);
  const headers = { "Content-Type": "image/jpeg", "Content-Length": String(body.byteLength) };
  const res = await apiV2("/media", t.key, { method: "POST", headers, body });
  if (res.status !== 201) throw new Error(`media upload: ${res.status} ${await res.text()}`);
  return (await json<{ id: string }>(res)).id;
}

/** Each recipient writes first, so that a free-form kind (an image) may be sent within their 24-hour window (setup). */
async function openWindows(t: Tenant, recipients: number): Promise<void> {
  for (let i = 0; i < recipients; i++) {
    const from = recipientAt(i, recipients);
    const message = {
      from,
      id: `wamid.in-${crypto.randomUUID()}`,
      timestamp: seconds(Date.now()),
      type: "text",
      text: { body: "Hi" },
    };
    const phoneNumberId = t.numbers[i % t.numbers.length]!.phoneNumberId;
    const res = await postOperator(inboundPayload(phoneNumberId, [message], [{ wa_id: from }]));
    if (res.status !== 200) throw new Error(`inbound: ${res.status}`);
  }
}

/** Sends `count` messages round-robin over the tenant's numbers and recipients, each number at most 2 per second. */
async function sendAll(t: Tenant, count: number, recipients: number, kind: Kind, mediaId: string | null) {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const { numberId } = t.numbers[i % t.numbers.length]!;
    // 2 per second per number: the next round of numbers starts 510 ms later.
    if (i % t.numbers.length === 0 && i > 0) setClock(Date.now() + 510);
    const to = recipientAt(i, recipients);
    // A template message of the same rendered length as the text (API v2); an image from the store with a caption.
    const text = `Your order ${i} has shipped and will arrive tomorrow between 9 and 12.`;
    const parameters = { body: [`${i}`, "tomorrow between 9 and 12"] };
    const template = { name: "order_update", language: "en_US", parameters };
    const content = kind === "image" ? { image: { mediaId, caption: `Your order ${i} has shipped.` } } : { template };
    const res =
      kind === "text"
        ? await send(t.key, crypto.randomUUID(), textMessage(numberId, text, to))
        : await sendV2(t.key, { channelNumberId: numberId, to, type: kind, ...content });
    if (res.status !== 201) throw new Error(`send ${i}: ${res.status} ${await res.text()}`);
    ids.push((await json<{ jobId: string }>(res)).jobId);
    await runUntil(Date.now());
  }
  return ids;
}

/**
 * The operator's two status webhooks per message (sent, then delivered), one POST each, as the operator
 * sends them: independently, so those of one moment arrive together (here all of a round at one instant
 * of the simulated clock). Each POST is answered once its changes are committed; their events leave with
 * the publisher's pack (its timer, or the next call after a second on the clock).
 */
async function operatorReports(t: Tenant, ids: string[]): Promise<void> {
  for (const status of ["sent", "delivered"]) {
    setClock(Date.now() + 2_000);
    let settled = false;
    const item = (id: string) => ({
      id: `wamid.${id}`,
      status,
      timestamp: seconds(clock),
      biz_opaque_callback_data: id,
    });
    const posted = Promise.all(
      ids.map((id, i) => postOperator(statusPayload(t.numbers[i % t.numbers.length]!.phoneNumberId, [item(id)]))),
    ).finally(() => (settled = true));
    for (let guard = 0; !settled && guard < 200; guard++) {
      await pause(20);
      await runUntil(Date.now() + 1_000);
    }
    for (const res of await posted) expect(res.status).toBe(200);
    await runUntil(Date.now() + 5_000);
  }
}

async function scenario(description: string, messages: number, numbers: number, recipients: number, kind: Kind) {
  setClock(clock + 100 * DAY);
  const t = await createTenant(numbers);
  if (kind === "template") await giveTemplates(t.numbers.map((n) => n.numberId));
  if (kind === "image") await openWindows(t, recipients);
  await publishedAndConsumed();
  meter.harvest(); // setup (and the previous scenario's check) is not part of the life
  net.seen.length = 0;

  /** Each step of the life ends once its events are published and consumed. */
  const step = async <T>(work: () => Promise<T>): Promise<T> => {
    const done = await work();
    await publishedAndConsumed();
    return done;
  };
  const start = clock;
  // The image stored once (POST /api/v2/media: streamed to R2, its record in D1).
  const mediaId = kind === "image" ? await step(() => storeImage(t)) : null;
  // Accepted and sent: the POST, the hand-off, the drain, the operator call, events published and delivered.
  const ids = await step(async () => {
    const sent = await sendAll(t, messages, recipients, kind, mediaId);
    // The drain paces each number at 2 calls per 1,010 ms: let it finish.
    for (let guard = 0; seen("/messages") < messages && guard < 600; guard++) await runUntil(Date.now() + 1_000);
    await runUntil(Date.now() + 5_000);
    return sent;
  });
  expect(seen("/messages")).toBe(messages);
  // The stored image goes to the operator once per number, whatever the number of messages naming it.
  expect(seen("/media")).toBe(kind === "image" ? numbers : 0);
  // The operator's status webhooks (sent, delivered), and their events delivered.
  await step(() => operatorReports(t, ids));
  // Each message: processing, sent, delivered.
  expect(seen(RECEIVER_URL)).toBe(3 * messages);
  await step(() => runUntil(start + 3_600_000)); // the first hour: daily counts to D1
  await step(() => runUntil(start + 3 * DAY)); // nothing to purge: keys live in the records, events are not stored
  // Past the plan's window (30 days + 1) and every purge: the day archived to R2 from its slot tables, those
  // and the delivery log's day tables dropped.
  await step(() => runUntil(start + 45 * DAY));
  results.push({ description, messages, usage: meter.harvest() });

  const archives = await json<{ data: { messages: number }[] }>(await api("/message-archives", t.key));
  // The archive holds the recipients' first messages too, where the window was opened for them.
  expect(archives.data.reduce((n, a) => n + a.messages, 0)).toBe(messages + (kind === "image" ? recipients : 0));
}

beforeAll(async () => {
  vi.useFakeTimers({ toFake: ["Date"] });
  setClock(clock);
  await meter.install();
  net = mockNetwork();
  net.dns.set(new URL(RECEIVER_URL).hostname, ["93.184.216.34"]);
  net.receivers.set(RECEIVER_URL, () => new Response(null, { status: 200 }));
});

afterAll(async () => {
  vi.restoreAllMocks();
  vi.useRealTimers();
  const res = await env.COST_SINK.fetch("http://cost-sink/results", {
    method: "POST",
    body: JSON.stringify({ measuredAt: new Date().toISOString(), results }),
  });
  if (!res.ok) throw new Error(`cost sink: ${res.status}`);
});

for (const [description, messages, numbers, recipients, kind] of SCENARIOS)
  it(description, () => scenario(description, messages, numbers, recipients, kind), messages > 1 ? 600_000 : 120_000);
