import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeClockPerTest } from "../helpers/clock";
import { admin, api, expectError, json } from "../helpers/http";
import { createKey, createWorkspace } from "../helpers/fixtures";
import { accepted, liveConnectBody, fakeOperatorAccount, mockOperator, operatorError } from "../helpers/operator";
import { postOperator, seconds, statusPayload } from "../helpers/operator-webhook";
import { apiV2, fakeTemplates, positionalTemplate, sendV2 } from "../helpers/operator-templates";
import { channelNumberStub } from "../../src/durable-objects/stubs";
import { eventsOfMessage } from "../helpers/events";

// Template messages on a live number: its account's templates synced when it is
// connected, a template sent to someone who never wrote (outside the window) and delivered,
// the operator's own refusals of a template (paused or deleted since our sync) failing that
// message only. The operator is faked at the network edge; its webhooks are signed.

const clock = fakeClockPerTest(Date.UTC(2044, 0, 1), (t) => t + 24 * 3_600_000);
afterEach(() => {
  vi.restoreAllMocks();
});

const NOBODY = "5511944443333";
const drain = (numberId: string) => runDurableObjectAlarm(channelNumberStub(env, numberId));

const TEMPLATES = [
  positionalTemplate("order_update", {
    components: [
      { type: "HEADER", format: "IMAGE", example: { header_handle: ["https://example.com/h.png"] } },
      { type: "BODY", text: "Hi {{1}}, your order {{2}} has shipped." },
      { type: "BUTTONS", buttons: [{ type: "QUICK_REPLY", text: "Thanks" }] },
    ],
  }),
  {
    name: "reservation",
    language: "en_US",
    status: "APPROVED",
    category: "UTILITY",
    parameter_format: "NAMED" as const,
    components: [{ type: "BODY", text: "See you on {{day}}, {{guest}}!" }],
  },
  positionalTemplate("flash_sale", { category: "MARKETING", components: [{ type: "BODY", text: "{{1}} off today." }] }),
];

/** A send of `order_update` (image header, two body values, a quick-reply payload) to someone who never wrote. */
const orderUpdate = (channelNumberId: string) => ({
  channelNumberId,
  to: NOBODY,
  type: "template",
  template: {
    name: "order_update",
    language: "en_US",
    parameters: {
      header: { link: "https://cdn.example.com/parcel.png" },
      body: ["Ana", "#1042"],
      buttons: [{ index: 0, value: "THANKS-1042" }],
    },
  },
});

/** A workspace with a live number connected through the public API; its account lists `templates`. */
async function liveTenant(templates = TEMPLATES) {
  const workspaceId = await createWorkspace({ plan: "pro" });
  const { key } = await createKey(workspaceId);
  const account = fakeOperatorAccount();
  const listed = fakeTemplates(account, templates);
  const res = await api("/channel-numbers", key, { method: "POST", json: { upstream: liveConnectBody(account) } });
  expect(res.status, await res.clone().text()).toBe(201);
  listed.restore();
  account.restore();
  return { workspaceId, key, account, listed, numberId: (await json<{ id: string }>(res)).id };
}

interface View {
  status: string;
  type: string;
  text: { body: string };
  template?: Record<string, string>;
  error: { code: string; upstreamCode: string | null } | null;
  deliveredAt: string | null;
}

describe("a live number's templates", () => {
  it("are synced when the number is connected and listed with their sync age", async () => {
    const t = await liveTenant();
    expect(t.listed.pages).toHaveLength(1);
    expect(t.listed.pages[0]!.get("fields")).toContain("components");
    const syncedAt = clock.now();
    clock.advance(90_000);
    const list = await json<{ data: Record<string, unknown>[] }>(await apiV2("/templates", t.key));
    expect(list.data.map((x) => x.name)).toEqual(["flash_sale", "order_update", "reservation"]);
    expect(list.data[1]).toMatchObject({
      channelNumberIds: [t.numberId],
      language: "en_US",
      category: "UTILITY",
      status: "APPROVED",
      parameterFormat: "POSITIONAL",
      header: { format: "IMAGE", text: null, parameters: [] },
      body: { text: "Hi {{1}}, your order {{2}} has shipped.", parameters: ["1", "2"] },
      buttons: [{ index: 0, type: "QUICK_REPLY", text: "Thanks", parameters: [] }],
      source: "operator",
      sync: { syncedAt: new Date(syncedAt).toISOString(), ageSeconds: 90, lastError: null, lastErrorAt: null },
    });
    const marketing = await json<{ data: { name: string }[] }>(await apiV2("/templates?category=MARKETING", t.key));
    expect(marketing.data.map((x) => x.name)).toEqual(["flash_sale"]);
    // Keyset pages over the stored rows.
    const first = await json<{ data: { name: string }[]; nextCursor: string }>(
      await apiV2("/templates?limit=2", t.key),
    );
    expect(first.data.map((x) => x.name)).toEqual(["flash_sale", "order_update"]);
    const rest = await json<{ data: { name: string }[]; nextCursor: string | null }>(
      await apiV2(`/templates?limit=2&cursor=${first.nextCursor}`, t.key),
    );
    expect(rest).toEqual({ data: [expect.objectContaining({ name: "reservation" })], nextCursor: null });
  });

  it("a disconnected number's account is no longer listed, though its templates stay stored", async () => {
    const t = await liveTenant();
    const names = async () =>
      (await json<{ data: { name: string }[] }>(await apiV2("/templates", t.key))).data.map((x) => x.name);
    expect(await names()).toEqual(["flash_sale", "order_update", "reservation"]);
    expect((await api(`/channel-numbers/${t.numberId}`, t.key, { method: "DELETE" })).status).toBe(204);
    expect(await names()).toEqual([]);
    const stored = await env.DB.prepare("SELECT COUNT(*) AS n FROM message_templates WHERE waba_id = ?")
      .bind(t.account.wabaId)
      .first<{ n: number }>();
    expect(stored!.n).toBe(3);
  });

  it("a template sent to someone who never wrote reaches the operator in its shape and is delivered", async () => {
    const t = await liveTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const res = await sendV2(t.key, orderUpdate(t.numberId));
    expect(res.status, await res.clone().text()).toBe(201);
    const { jobId } = await json<{ jobId: string }>(res);
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.auth).toBe(`Bearer ${t.account.token}`);
    expect(calls[0]!.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: `+${NOBODY}`,
      type: "template",
      template: {
        name: "order_update",
        language: { code: "en_US" },
        components: [
          { type: "header", parameters: [{ type: "image", image: { link: "https://cdn.example.com/parcel.png" } }] },
          {
            type: "body",
            parameters: [
              { type: "text", text: "Ana" },
              { type: "text", text: "#1042" },
            ],
          },
          {
            type: "button",
            sub_type: "quick_reply",
            index: "0",
            parameters: [{ type: "payload", payload: "THANKS-1042" }],
          },
        ],
      },
      biz_opaque_callback_data: jobId,
    });
    const delivered = statusPayload(t.account.phoneNumberId, [
      {
        id: `wamid.${jobId}`,
        status: "delivered",
        timestamp: seconds(clock.now() + 2_000),
        biz_opaque_callback_data: jobId,
      },
    ]);
    expect((await postOperator(delivered)).status).toBe(200);
    await vi.waitFor(
      async () =>
        expect(await json<View>(await apiV2(`/messages/${jobId}`, t.key))).toMatchObject({
          status: "delivered",
          type: "template",
          deliveredAt: expect.any(String),
          text: { body: "Hi Ana, your order #1042 has shipped." },
          template: { name: "order_update", language: "en_US", category: "UTILITY", parameterFormat: "POSITIONAL" },
        }),
      { timeout: 10_000, interval: 50 },
    );
    // Every message.status event of it says what was sent.
    const events = await eventsOfMessage(t.workspaceId, jobId);
    expect(events.map((e) => (e.type === "message.status" ? e.data.status : e.type))).toEqual([
      "processing",
      "sent",
      "sent",
    ]);
    for (const e of events)
      expect(e.data).toMatchObject({
        type: "template",
        template: { name: "order_update", language: "en_US", category: "UTILITY" },
        text: { body: "Hi Ana, your order #1042 has shipped." },
      });
  });

  it("a media header's link is an https URL of a public host: any other is refused 400 naming header.link, and nothing reaches the operator", async () => {
    const t = await liveTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const refused = [
      "javascript:alert(document.domain)",
      "file:///etc/passwd",
      "data:image/png;base64,iVBORw0KGgo=",
      "http://cdn.example.com/parcel.png",
      "https://169.254.169.254/latest/meta-data/",
      "https://metadata.google.internal/computeMetadata/v1/",
      "https://10.0.0.8/parcel.png",
      "https://[::1]/parcel.png",
      "https://localhost/parcel.png",
      "https://user:secret@cdn.example.com/parcel.png",
      "not a url",
    ];
    for (const link of refused) {
      const body = orderUpdate(t.numberId);
      body.template.parameters.header = { link };
      const err = await expectError(await sendV2(t.key, body), 400, "invalid_request");
      expect(err.error.details, link).toEqual([
        expect.objectContaining({
          path: "template.parameters.header.link",
          message: expect.stringMatching(/^header\.link must be an https URL of a public host: /),
        }),
      ]);
    }
    await drain(t.numberId);
    expect(calls).toHaveLength(0);
    const list = await json<{ data: unknown[] }>(await api(`/messages?channelNumberId=${t.numberId}`, t.key));
    expect(list.data).toHaveLength(0);
  });

  it("a named template's parameters go with their names; toUserId works", async () => {
    const t = await liveTenant();
    const calls = mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const res = await sendV2(t.key, {
      channelNumberId: t.numberId,
      toUserId: "US.13491208655302741918",
      type: "template",
      template: { name: "reservation", language: "en_US", parameters: { body: { guest: "Ana", day: "Friday" } } },
    });
    expect(res.status).toBe(201);
    await drain(t.numberId);
    expect(calls[0]!.body).toMatchObject({
      recipient: "US.13491208655302741918",
      type: "template",
      template: {
        components: [
          {
            type: "body",
            parameters: [
              { type: "text", text: "Friday", parameter_name: "day" },
              { type: "text", text: "Ana", parameter_name: "guest" },
            ],
          },
        ],
      },
    });
  });

  const refusals: [string, number, string][] = [
    ["paused", 132015, "template_paused"],
    ["deleted", 132001, "template_not_found"],
    ["disabled", 132016, "template_disabled"],
    ["changed (parameter count)", 132000, "template_parameters_mismatch"],
  ];
  for (const [what, code, ours] of refusals) {
    it(`a template ${what} at the operator since our sync fails that message with ${ours}; the number keeps sending`, async () => {
      const t = await liveTenant();
      const calls = mockOperator((c, i) =>
        i === 0 ? operatorError(400, code, `(#${code}) refused`) : accepted(`wamid.${c.body.biz_opaque_callback_data}`),
      );
      const template = await sendV2(t.key, {
        channelNumberId: t.numberId,
        to: NOBODY,
        type: "template",
        template: { name: "flash_sale", language: "en_US", parameters: { body: ["20%"] } },
      });
      expect(template.status).toBe(201);
      const { jobId } = await json<{ jobId: string }>(template);
      await drain(t.numberId);
      expect(await json<View>(await apiV2(`/messages/${jobId}`, t.key))).toMatchObject({
        status: "failed",
        error: { code: ours, upstreamCode: String(code) },
      });
      // Not a pause: the next message leaves at once.
      clock.advance(2_000);
      const next = await sendV2(t.key, { channelNumberId: t.numberId, to: NOBODY, text: { body: "Still here" } });
      expect(next.status).toBe(201);
      await drain(t.numberId);
      expect(calls).toHaveLength(2);
      expect(calls[1]!.body.text).toEqual({ body: "Still here" });
      const number = await json<{ health: { state: string } }>(await api(`/channel-numbers/${t.numberId}`, t.key));
      expect(number.health.state).toBe("active");
    });
  }

  it("a live number connected without its account id has no templates: 400 naming it, nothing queued", async () => {
    const workspaceId = await createWorkspace({ plan: "pro" });
    const { key } = await createKey(workspaceId);
    const { connectLiveNumber } = await import("../helpers/operator");
    const { numberId } = await connectLiveNumber(workspaceId);
    const err = await expectError(
      await sendV2(key, {
        channelNumberId: numberId,
        to: NOBODY,
        type: "template",
        template: { name: "order_update", language: "en_US" },
      }),
      400,
      "template_not_found",
    );
    expect(err.error.details).toEqual([expect.objectContaining({ path: "channelNumberId", rule: "no_account" })]);
    expect((await json<{ data: unknown[] }>(await apiV2("/messages", key))).data).toEqual([]);
  });

  it("the admin API gives such a number its account (credentials with wabaId): confirmed, synced, and it sends templates", async () => {
    const workspaceId = await createWorkspace({ plan: "pro" });
    const { key } = await createKey(workspaceId);
    const { connectLiveNumber } = await import("../helpers/operator");
    const { numberId, phoneNumberId, token } = await connectLiveNumber(workspaceId);
    // The account at the operator that holds that number, with its templates.
    const account = fakeOperatorAccount();
    account.phoneNumberId = phoneNumberId;
    account.token = token;
    const listed = fakeTemplates(account, TEMPLATES);
    const credentials = (wabaId: string) =>
      admin(`/channel-numbers/${numberId}/credentials`, { method: "PUT", json: { accessToken: token, wabaId } });
    const template = orderUpdate(numberId);

    // An account the number is not in: refused naming the field, nothing changed.
    const wrong = await expectError(await credentials("999000111222"), 400, "invalid_request");
    expect(wrong.error.details).toEqual([expect.objectContaining({ path: "wabaId", rule: "upstream_verification" })]);
    await expectError(await sendV2(key, template), 400, "template_not_found");

    const res = await credentials(account.wabaId);
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await json(res)).toMatchObject({ upstream: { type: "cloud", phoneNumberId, wabaId: account.wabaId } });
    expect(account.calls.slice(-3)).toEqual([
      `GET ${phoneNumberId}`,
      `GET ${account.wabaId}/phone_numbers`,
      `POST ${account.wabaId}/subscribed_apps`,
    ]);
    expect(listed.pages.length).toBeGreaterThan(0);
    const names = (await json<{ data: { name: string }[] }>(await apiV2("/templates", key))).data.map((t) => t.name);
    expect(names).toContain("order_update");
    // Sends read a number's templates through a 5-second cache (src/features/templates/number-templates.ts), which
    // still holds the refusal above.
    clock.advance(5_000);
    const sent = await sendV2(key, template);
    expect(sent.status, await sent.clone().text()).toBe(201);
  });
});
