import { runDurableObjectAlarm } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { ApiError, MessagingClient, verifyWebhook, verifyWebhookV2, type Message } from "../../sdk/src/index";
import { SCAN_BUDGET } from "../../src/durable-objects/workspace/message-queries";
import { channelNumberStub, workspaceStub } from "../../src/durable-objects/stubs";
import { DAY_MS } from "../../src/lib/job-id";
import { hmacSha256, toHex } from "../../src/lib/crypto";
import { BASE, call } from "../helpers/http";
import { createTenant, TEST_CONTACT } from "../helpers/fixtures";
import { apiV2 } from "../helpers/operator-templates";
import { liveConnectBody, connectLiveNumber, fakeOperatorAccount } from "../helpers/operator";
import { mockNetwork } from "../helpers/webhook-net";
import { mediaFile, serveOperatorMedia } from "../helpers/operator-media";
import { inboundPayload, postOperator } from "../helpers/operator-webhook";
import { fakeClock } from "../helpers/clock";

// The SDK uses web APIs only, so it runs in a Worker: here, inside workerd, against this
// Worker's own fetch handler.
const clientFor = (apiKey: string) =>
  new MessagingClient({
    apiKey,
    baseUrl: BASE,
    fetch: (request) => exports.default.fetch(request),
    retry: { maxRetries: 0 },
  });

/** The operator's webhook delivering `count` inbound messages to a live number in one signed post, as it batches them. */
async function operatorDelivers(phoneNumberId: string, count: number): Promise<void> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const messages = Array.from({ length: count }, (_, i) => ({
    from: "5511977776666",
    id: `wamid.IN${i}`,
    timestamp,
    type: "text",
    text: { body: `in ${i}` },
  }));
  const raw = JSON.stringify({
    object: "whatsapp_business_account",
    entry: [
      {
        id: "WABA",
        changes: [
          {
            field: "messages",
            value: { metadata: { phone_number_id: phoneNumberId }, contacts: [{ wa_id: "5511977776666" }], messages },
          },
        ],
      },
    ],
  });
  const signature = `sha256=${toHex(await hmacSha256(env.UPSTREAM_APP_SECRET, raw))}`;
  const res = await call("/upstream/cloud/webhook", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Hub-Signature-256": signature },
    body: raw,
  });
  expect(res.status).toBe(200);
}

describe("the SDK inside the Workers runtime", () => {
  it("connects, re-keys and disconnects numbers (the operator faked at the network edge)", async () => {
    const t = await createTenant();
    const client = clientFor(t.key);
    const sandbox = await client.channelNumbers.connect({
      displayPhoneNumber: "+15550004444",
      upstream: { type: "sandbox" },
    });
    expect(sandbox).toMatchObject({ upstream: "sandbox", health: { state: "active" } });
    const account = fakeOperatorAccount();
    try {
      const live = await client.channelNumbers.connect({ upstream: liveConnectBody(account) });
      expect(live.health).toMatchObject({
        verifiedName: "Acme Shop",
        qualityRating: "GREEN",
        messagingLimitTier: "TIER_1K",
      });
      expect((await client.channelNumbers.replaceToken(live.id, account.token)).id).toBe(live.id);
      const refused = await client.channelNumbers
        .connect({ upstream: { ...liveConnectBody(account), accessToken: "EAAG-not-the-token-000000" } })
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ApiError);
    } finally {
      account.restore();
    }
    await client.channelNumbers.disconnect(sandbox.id);
    expect(
      await client.channelNumbers.get(sandbox.id).catch((e: unknown) => (e instanceof ApiError ? e.status : e)),
    ).toBe(404);
  });

  it("marks, lists and unmarks a sandbox number's test contacts", async () => {
    const t = await createTenant();
    const client = clientFor(t.key);
    const before = (await client.sandbox.testContacts.list(t.numberId)).data.map((c) => c.phone);
    expect((await client.sandbox.testContacts.add(t.numberId, "5511955554444")).phone).toBe("5511955554444");
    // Adding it again changes nothing.
    await client.sandbox.testContacts.add(t.numberId, "5511955554444");
    expect((await client.sandbox.testContacts.list(t.numberId)).data.map((c) => c.phone)).toEqual([
      ...before,
      "5511955554444",
    ]);
    await client.sandbox.testContacts.remove(t.numberId, "5511955554444");
    expect((await client.sandbox.testContacts.list(t.numberId)).data.map((c) => c.phone)).toEqual(before);
    const refused = await client.sandbox.testContacts.add(t.numberId, "+5511955554444").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(400);
  });

  it("sends, reads, pages and raises typed errors", async () => {
    const t = await createTenant();
    const client = clientFor(t.key);
    const sent = await client.messages.send({
      channelNumberId: t.numberId,
      to: "5511999998888",
      text: { body: "from a Worker" },
    });
    expect(sent.status).toBe("created");
    expect(await client.messages.get(sent.jobId)).toMatchObject({
      direction: "outbound",
      text: { body: "from a Worker" },
    });
    expect((await client.channelNumbers.list({ limit: 1 }).toArray()).map((n) => n.id)).toEqual([t.numberId]);
    const err = await client.messages.get(crypto.randomUUID()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 404, code: "not_found" });
  });

  it("lists messages over pages that come back short, or empty, while more exist", async () => {
    const clock = fakeClock(Date.UTC(2047, 2, 1, 9));
    const t = await createTenant();
    const client = clientFor(t.key);
    const sent: string[] = [];
    for (const body of ["oldest", "middle", "newest"]) {
      clock.set(Date.now() + 1_000);
      sent.unshift(
        (await client.messages.send({ channelNumberId: t.numberId, to: "5511999998888", text: { body } })).jobId,
      );
    }
    // Newer than the sends: as many inbound messages as one page may read, so that the first
    // page of outbound messages reads only these and comes back empty, with a cursor.
    clock.set(Date.now() + 1_000);
    const live = await connectLiveNumber(t.workspaceId);
    await operatorDelivers(live.phoneNumberId, SCAN_BUDGET);
    await vi.waitFor(
      async () =>
        expect(await client.messages.list({ direction: "inbound", limit: 100 }).toArray()).toHaveLength(SCAN_BUDGET),
      {
        timeout: 15_000,
        interval: 100,
      },
    );

    const outbound = client.messages.list({ direction: "outbound", limit: 2 });
    const listed: Message[] = [];
    for await (const m of outbound) listed.push(m);
    expect(listed.map((m) => m.id)).toEqual(sent);
    expect(listed.map((m) => (m.direction === "outbound" ? m.text.body : m.from))).toEqual([
      "newest",
      "middle",
      "oldest",
    ]);
    // Why: the first page was empty and not the last, the second full, the third short and the last.
    const pages = [];
    for await (const page of outbound.pages()) pages.push(page);
    expect(pages.map((p) => [p.data.length, p.nextCursor !== null])).toEqual([
      [0, true],
      [2, true],
      [1, false],
    ]);
  });

  it("downloads an archived day, message by message, as GET /messages/{id} showed them", async () => {
    const clock = fakeClock(Date.UTC(2047, 5, 1, 9));
    const t = await createTenant(); // pro: 30 days of history
    const client = clientFor(t.key);
    const ids = [];
    for (const body of ["first", "second"]) {
      clock.set(Date.now() + 1_000);
      ids.push(
        (await client.messages.send({ channelNumberId: t.numberId, to: "5511999998888", text: { body } })).jobId,
      );
    }
    clock.set(Date.now() + 1_000);
    ids.push(
      (
        await client.sandbox.injectInbound({
          channelNumberId: t.numberId,
          from: "5511977776666",
          text: { body: "Olá 👋" },
        })
      ).messageId,
    );
    // The sandbox number sends them (one pass per alarm here) and reports them sent.
    for (let i = 0; i < 4; i++) {
      await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
      clock.set(Date.now() + 1_100);
    }
    const records = await Promise.all(ids.map((id) => client.messages.get(id)));
    expect(records.map((r) => r.status)).toEqual(["sent", "sent", "received"]);
    const day = records[0]!.createdAt.slice(0, 10);

    // A month later the day is archived (the workspace's alarm re-arms until it is done).
    clock.set(Date.now() + 31 * DAY_MS);
    for (let i = 0; i < 20; i++) await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    expect(await client.messageArchives.list().toArray()).toEqual([
      { day, messages: 3, archivedAt: expect.any(String) },
    ]);

    const archived: Message[] = [];
    for await (const m of client.messageArchives.download(day)) archived.push(m);
    expect(archived).toEqual(records);
    const err = await client.messages.get(ids[0]!).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 404, code: "not_found" });
  });

  it("client.v2 downloads an archived day as v2 read it: a rich message's type and fields, v2's statuses", async () => {
    const clock = fakeClock(Date.UTC(2047, 7, 1, 9));
    const t = await createTenant();
    const client = clientFor(t.key);
    clock.set(Date.now() + 1_000);
    const image = await client.v2.messages.send({
      channelNumberId: t.numberId,
      to: TEST_CONTACT,
      type: "image",
      image: { link: "https://cdn.example.com/parcel.png", caption: "Your parcel" },
    });
    clock.set(Date.now() + 1_000);
    const text = await client.v2.messages.send({ channelNumberId: t.numberId, to: TEST_CONTACT, text: { body: "hi" } });
    for (let i = 0; i < 4; i++) {
      await runDurableObjectAlarm(channelNumberStub(env, t.numberId));
      clock.set(Date.now() + 1_100);
    }
    const records = await Promise.all([image, text].map((s) => client.v2.messages.get(s.jobId)));
    expect(records.map((r) => r.type)).toEqual(["image", "text"]);
    const day = records[0]!.createdAt.slice(0, 10);

    clock.set(Date.now() + 31 * DAY_MS);
    for (let i = 0; i < 20; i++) await runDurableObjectAlarm(workspaceStub(env, t.workspaceId));
    expect(await client.v2.messageArchives.list().toArray()).toEqual([
      { day, messages: 2, archivedAt: expect.any(String) },
    ]);
    const archived = [];
    for await (const m of client.v2.messageArchives.download(day)) archived.push(m);
    expect(archived).toEqual(records);
    // v1's download of the same day reads the image as v1 does: a text summary.
    const v1: Message[] = [];
    for await (const m of client.messageArchives.download(day)) v1.push(m);
    expect(v1.map((m) => m.type)).toEqual(["text", "text"]);
  });

  it("downloads an inbound message's media as a stream, with its type, size and file name", async () => {
    const net = mockNetwork();
    try {
      const t = await createTenant();
      const number = await connectLiveNumber(t.workspaceId);
      const client = clientFor(t.key);
      const file = mediaFile(20_000, "application/pdf");
      serveOperatorMedia(net, number.token, file);
      const raw = JSON.stringify(
        inboundPayload(number.phoneNumberId, [
          {
            from: "5511977775555",
            id: "wamid.DOC1",
            timestamp: String(Math.floor(Date.now() / 1000)),
            type: "document",
            document: { id: file.id, mime_type: file.mimeType, filename: "Relatório.pdf" },
          },
        ]),
      );
      expect((await postOperator(null, { raw })).status).toBe(200);
      const [received] = await client.messages.list({ direction: "inbound", from: "5511977775555" }).toArray();
      const id = received!.id;
      await vi.waitFor(
        async () => {
          const m = await client.messages.get(id);
          if (m.direction !== "inbound" || !m.media?.available) throw new Error("not copied yet");
        },
        { timeout: 15_000, interval: 50 },
      );
      const media = await client.messages.media(id);
      expect(media).toMatchObject({ contentType: "application/pdf", size: 20_000, filename: "Relatório.pdf" });
      expect(media.body).toBeInstanceOf(ReadableStream);
      expect(new Uint8Array(await new Response(media.body).arrayBuffer())).toEqual(file.bytes);
      const none = await client.messages.media(crypto.randomUUID()).catch((e: unknown) => e);
      expect(none).toMatchObject({ status: 404, code: "not_found" });
      expect(net.unhandled).toEqual([]);
    } finally {
      net.restore();
    }
  });

  it("verifies a signed delivery with verifyWebhook", async () => {
    const net = mockNetwork();
    try {
      const t = await createTenant();
      const client = clientFor(t.key);
      net.dns.set("hooks.example.com", ["93.184.216.34"]);
      const received: { headers: Record<string, string>; body: string }[] = [];
      net.receivers.set("https://hooks.example.com/in", (req) => {
        received.push({ headers: req.headers, body: req.body });
        return new Response(null, { status: 204 });
      });
      const webhook = await client.webhooks.configure({
        channelNumberId: t.numberId,
        url: "https://hooks.example.com/in",
      });
      const { eventId } = await client.webhooks.test(webhook.id);
      // The real queue delivers it to the mocked receiver.
      await vi.waitFor(() => expect(received).toHaveLength(1), { timeout: 10_000, interval: 50 });
      expect(received[0]!.headers["webhook-id"]).toBe(eventId);
      const event = verifyWebhook(received[0]!.body, received[0]!.headers, webhook.secret);
      expect(event.type).toBe("webhook.test");
      expect(net.unhandled).toEqual([]);
    } finally {
      net.restore();
    }
  });

  it("verifies a v2 webhook's delivery with verifyWebhookV2: delivered is a status", async () => {
    const net = mockNetwork();
    try {
      const t = await createTenant();
      const client = clientFor(t.key);
      net.dns.set("hooks-v2.example.com", ["93.184.216.34"]);
      const received: { headers: Record<string, string>; body: string }[] = [];
      net.receivers.set("https://hooks-v2.example.com/in", (req) => {
        received.push({ headers: req.headers, body: req.body });
        return new Response(null, { status: 204 });
      });
      const configured = await apiV2("/webhooks", t.key, {
        method: "POST",
        json: { channelNumberId: t.numberId, url: "https://hooks-v2.example.com/in" },
      });
      expect(configured.status).toBe(201);
      const { secret } = (await configured.json()) as { secret: string };
      const { jobId } = await client.v2.messages.send({
        channelNumberId: t.numberId,
        to: TEST_CONTACT,
        text: { body: "Hi" },
      });
      // The sandbox reports the delivery about 2 s after the send; the real queue delivers its event.
      const statuses = () =>
        received
          .map((r) => verifyWebhookV2(r.body, r.headers, secret))
          .flatMap((e) => (e.type === "message.status" && e.data.messageId === jobId ? [e.data] : []));
      await vi.waitFor(() => expect(statuses().map((d) => d.status)).toContain("delivered"), {
        timeout: 10_000,
        interval: 50,
      });
      expect(statuses().find((d) => d.status === "delivered")).toMatchObject({ previousStatus: "sent" });
      expect(net.unhandled).toEqual([]);
    } finally {
      net.restore();
    }
  });
});
