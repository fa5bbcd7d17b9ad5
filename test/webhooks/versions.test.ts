import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeClockPerTest } from "../helpers/clock";
import { answerAtEdge } from "../helpers/edge";
import { api, expectError, json } from "../helpers/http";
import { accepted, liveNumberTenant, connectLiveNumber, operatorCallOf } from "../helpers/operator";
import { apiV2, sendV2 } from "../helpers/operator-templates";
import { postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { answers, mockNetworkPerTest } from "../helpers/webhook-net";
import { signedInMember } from "../helpers/dashboard";
import { connectSandboxNumber, createTenant } from "../helpers/fixtures";
import { channelNumberStub } from "../../src/durable-objects/stubs";
import { PACE_WINDOW_MS } from "../../src/durable-objects/channel-number/delivery-policy";

// Webhooks are versioned: one configured through `POST /api/v1/webhooks` receives v1's event
// shapes, one configured through `POST /api/v2/webhooks` v2's (delivered and read are statuses of
// their own). The version is in the webhook's record, its v2 view and the dashboard.

const clock = fakeClockPerTest(Date.UTC(2046, 0, 1), (t) => t + 24 * 3_600_000);
const net = mockNetworkPerTest();
afterEach(() => {
  vi.restoreAllMocks();
});

/** A receiver of our webhooks at a fresh public host (DNS answered at the edge). */
function receiver(tag: string): string {
  const host = `${tag}-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
  net.dns.set(host, ["93.184.216.34"]);
  const url = `https://${host}/hook`;
  net.receivers.set(url, answers(204));
  return url;
}

/** The operator's Cloud API on top of the webhook network: each send accepted as `wamid.<to digits>`. */
function operatorAccepts(): void {
  answerAtEdge(async (input, init) => {
    const req = new Request(input, init);
    if (!req.url.startsWith(`${env.UPSTREAM_CLOUD_API_BASE_URL}/`)) return undefined;
    const call = await operatorCallOf(req);
    return accepted(`wamid.${call.body.to.slice(1)}`);
  });
}

interface Configured {
  id: string;
  secret: string;
  apiVersion?: number;
}

const configure = async (version: 1 | 2, key: string, channelNumberId: string, url: string): Promise<Configured> => {
  const res = await (version === 1 ? api : apiV2)("/webhooks", key, {
    method: "POST",
    json: { channelNumberId, url },
  });
  expect(res.status).toBe(201);
  return json<Configured>(res);
};

interface Received {
  type: string;
  data: { messageId?: string; status?: string; previousStatus?: string | null; deliveredAt?: string | null };
}

/** What a receiver got, verified with the webhook's secret, in arrival order. */
const receivedAt = (url: string, secret: string): Received[] =>
  net.seen.filter((s) => s.url === url).map((s) => new Webhook(secret).verify(s.body, s.headers) as Received);

describe("versioned webhooks on one workspace", () => {
  it("a v1 webhook receives v1's status events and a v2 webhook v2's, for the same operator reports", async () => {
    const t = await liveNumberTenant();
    const second = await connectLiveNumber(t.workspaceId);
    operatorAccepts();
    const urlV1 = receiver("v1");
    const urlV2 = receiver("v2");
    const v1 = await configure(1, t.key, t.numberId, urlV1);
    const v2 = await configure(2, t.key, second.numberId, urlV2);
    expect(v1.apiVersion).toBeUndefined();
    expect(v2.apiVersion).toBe(2);

    const sendFrom = async (numberId: string, to: string) => {
      const res = await sendV2(t.key, { channelNumberId: numberId, to, text: { body: "Your order shipped" } });
      expect(res.status).toBe(201);
      const { jobId } = await json<{ jobId: string }>(res);
      await runDurableObjectAlarm(channelNumberStub(env, numberId));
      return jobId;
    };
    const onV1 = await sendFrom(t.numberId, "5511900000021");
    const onV2 = await sendFrom(second.numberId, "5511900000022");
    clock.advance(PACE_WINDOW_MS);
    const deliveredAt = new Date(Math.floor((clock.now() + 1_000) / 1000) * 1000).toISOString();
    for (const [phoneNumberId, jobId, to] of [
      [t.phoneNumberId, onV1, "5511900000021"],
      [second.phoneNumberId, onV2, "5511900000022"],
    ] as const) {
      for (const status of ["delivered", "read"]) {
        const res = await postOperator(
          statusPayload(phoneNumberId, [
            {
              id: `wamid.${to}`,
              status,
              timestamp: seconds(clock.now() + 1_000),
              recipient_id: to,
              biz_opaque_callback_data: jobId,
            },
          ]),
        );
        expect(res.status).toBe(200);
      }
    }

    // Each message's four events (processing, sent, delivered, read) reach its number's webhook.
    await vi.waitFor(
      () => {
        expect(receivedAt(urlV1, v1.secret)).toHaveLength(4);
        expect(receivedAt(urlV2, v2.secret)).toHaveLength(4);
      },
      { timeout: 15_000, interval: 100 },
    );
    const statuses = (got: Received[]) =>
      got.map((e) => [e.type, e.data.status, e.data.previousStatus, e.data.deliveredAt]);
    expect(receivedAt(urlV1, v1.secret).every((e) => e.data.messageId === onV1)).toBe(true);
    expect(statuses(receivedAt(urlV1, v1.secret))).toEqual([
      ["message.status", "processing", "queued", null],
      ["message.status", "sent", "processing", null],
      ["message.status", "sent", "sent", deliveredAt],
      ["message.status", "sent", "sent", deliveredAt],
    ]);
    expect(receivedAt(urlV2, v2.secret).every((e) => e.data.messageId === onV2)).toBe(true);
    expect(statuses(receivedAt(urlV2, v2.secret))).toEqual([
      ["message.status", "processing", "queued", null],
      ["message.status", "sent", "processing", null],
      ["message.status", "delivered", "sent", deliveredAt],
      ["message.status", "read", "delivered", deliveredAt],
    ]);

    // A replay is rebuilt from the record and rendered in the webhook's version again: the same id, the same bytes.
    const original = net.seen.filter((s) => s.url === urlV2)[2]!;
    const replayed = await apiV2(`/webhooks/${v2.id}/deliveries/${original.headers["webhook-id"]}/replay`, t.key, {
      method: "POST",
    });
    expect(replayed.status).toBe(202);
    await vi.waitFor(() => expect(receivedAt(urlV2, v2.secret)).toHaveLength(5), { timeout: 15_000, interval: 100 });
    const again = net.seen.filter((s) => s.url === urlV2)[4]!;
    expect(again.headers["webhook-id"]).toBe(original.headers["webhook-id"]);
    expect(again.body).toBe(original.body);
  });

  it("a v2 webhook's message.received carries a user's answer as typed fields; a v1 webhook's is as it always was", async () => {
    const t = await createTenant();
    const second = await connectSandboxNumber(t.workspaceId, "15550002222");
    const urlV1 = receiver("v1");
    const urlV2 = receiver("v2");
    const v1 = await configure(1, t.key, t.numberId, urlV1);
    const v2 = await configure(2, t.key, second, urlV2);
    const answer = { type: "list_reply", id: "express", title: "Express", description: "Next day" };
    for (const channelNumberId of [t.numberId, second]) {
      const res = await apiV2("/sandbox/inbound", t.key, {
        method: "POST",
        json: { channelNumberId, from: "5511977776666", answer },
      });
      expect(res.status).toBe(202);
    }
    await vi.waitFor(
      () => {
        expect(receivedAt(urlV1, v1.secret)).toHaveLength(1);
        expect(receivedAt(urlV2, v2.secret)).toHaveLength(1);
      },
      { timeout: 15_000, interval: 100 },
    );
    const [onV1] = receivedAt(urlV1, v1.secret) as unknown as { type: string; data: Record<string, unknown> }[];
    const [onV2] = receivedAt(urlV2, v2.secret) as unknown as { type: string; data: Record<string, unknown> }[];
    const content = { type: "list_reply", list_reply: { id: "express", title: "Express", description: "Next day" } };
    expect(onV1).toMatchObject({ type: "message.received", data: { type: "interactive", content } });
    expect(onV1!.data).not.toHaveProperty("answer");
    expect(onV2).toMatchObject({ type: "message.received", data: { type: "interactive", content } });
    expect(onV2!.data.answer).toEqual({ ...answer, flow: null });
  });

  it("the version is in the webhook's record: v2 lists show it, v1's views do not, and configuring again through v1 makes it v1's", async () => {
    const t = await liveNumberTenant();
    const url = receiver("flip");
    const v2 = await configure(2, t.key, t.numberId, url);
    const listV2 = await json<{ data: Record<string, unknown>[] }>(await apiV2("/webhooks", t.key));
    expect(listV2.data).toEqual([expect.objectContaining({ id: v2.id, apiVersion: 2 })]);
    const listV1 = await json<{ data: Record<string, unknown>[] }>(await api("/webhooks", t.key));
    expect(listV1.data).toHaveLength(1);
    expect(listV1.data[0]).not.toHaveProperty("apiVersion");
    expect(await env.DB.prepare("SELECT api_version FROM webhooks WHERE id = ?").bind(v2.id).first("api_version")).toBe(
      2,
    );

    // The same number's webhook, configured through v1: the same id, now v1's shapes.
    const again = await configure(1, t.key, t.numberId, url);
    expect(again.id).toBe(v2.id);
    expect((await json<{ data: Record<string, unknown>[] }>(await apiV2("/webhooks", t.key))).data).toEqual([
      expect.objectContaining({ id: v2.id, apiVersion: 1 }),
    ]);
  });

  it("a refused v2 configuration changes nothing, with the rule named", async () => {
    const t = await liveNumberTenant();
    const url = receiver("keep");
    await configure(1, t.key, t.numberId, url);
    const body = await expectError(
      await apiV2("/webhooks", t.key, {
        method: "POST",
        json: { channelNumberId: t.numberId, url: "https://10.0.0.7/hook" },
      }),
      400,
      "invalid_request",
    );
    expect(body.error.details).toEqual([expect.objectContaining({ path: "url", rule: "ssrf" })]);
    expect((await json<{ data: Record<string, unknown>[] }>(await apiV2("/webhooks", t.key))).data).toEqual([
      expect.objectContaining({ url, apiVersion: 1 }),
    ]);
  });

  it("the dashboard shows a webhook's version and configures either", async () => {
    const t = await liveNumberTenant();
    const dev = await signedInMember(t.workspaceId, "developer");
    const page = `/dashboard/webhooks/${t.numberId}`;
    const url = receiver("dash");
    expect((await dev.browser.post(page, { url, apiVersion: "2" })).status).toBe(303);
    const html = await (await dev.browser.get(page)).text();
    expect(html).toContain("<dt>Event shapes</dt><dd>API v2 (delivered and read as statuses)</dd>");
    expect((await json<{ data: Record<string, unknown>[] }>(await apiV2("/webhooks", t.key))).data).toEqual([
      expect.objectContaining({ apiVersion: 2 }),
    ]);
    // A form without the choice (as before it existed) keeps v1's shapes.
    expect((await dev.browser.post(page, { url })).status).toBe(303);
    expect(await (await dev.browser.get(page)).text()).toContain(
      "<dt>Event shapes</dt><dd>API v1 (sent, with deliveredAt and readAt)</dd>",
    );
  });
});
