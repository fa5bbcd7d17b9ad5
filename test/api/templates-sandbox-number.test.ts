import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { fakeClock } from "../helpers/clock";
import { api, expectError, json } from "../helpers/http";
import { createTenant, TEST_CONTACT } from "../helpers/fixtures";
import { send, textMessage, usedMessages } from "../helpers/send";
import { apiV2, sendV2 } from "../helpers/operator-templates";
import { PARAMETER_LIMITS } from "../../src/domain/template-send";
import { toBase64Url } from "../../src/lib/crypto";
import { eventsOfMessage } from "../helpers/events";

// API v2 on a sandbox number: its built-in templates, delivered outside the 24-hour window where
// text is refused; every way a template send can be wrong, refused before anything is queued;
// v1 unchanged beside it. Through the real fetch handler, the real objects and the sandbox adapter.

/** Nobody who wrote to the number, and not a test contact: outside the 24-hour window. */
const STRANGER = "5511955554444";

interface View {
  id: string;
  type: string;
  status: string;
  text: { body: string };
  template?: { name: string; language: string; category: string; parameterFormat: string };
  error: { code: string } | null;
  deliveredAt: string | null;
}

const orderUpdate = (numberId: string, to = STRANGER, parameters: Record<string, unknown> = {}) => ({
  channelNumberId: numberId,
  to,
  type: "template",
  template: {
    name: "order_update",
    language: "en_US",
    parameters: {
      header: "#1042",
      body: ["Ana", "#1042", "Friday"],
      buttons: [{ index: 0, value: "1042" }],
      ...parameters,
    },
  },
});

async function accepted(res: Response): Promise<string> {
  expect(res.status, await res.clone().text()).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

async function settled(key: string, jobId: string, until: (m: View) => boolean): Promise<View> {
  let last: View | undefined;
  await vi.waitFor(
    async () => {
      last = await json<View>(await apiV2(`/messages/${jobId}`, key));
      expect(until(last)).toBe(true);
    },
    { timeout: 12_000, interval: 200 },
  );
  return last!;
}

describe("template messages on a sandbox number", () => {
  it("are delivered outside the 24-hour window, where a text to the same recipient fails", async () => {
    const t = await createTenant();
    const templateJob = await accepted(await sendV2(t.key, orderUpdate(t.numberId)));
    const textJob = await accepted(
      await sendV2(t.key, { channelNumberId: t.numberId, to: STRANGER, text: { body: "Hi" } }),
    );
    const delivered = await settled(t.key, templateJob, (m) => m.deliveredAt !== null);
    // API v2: a delivery (or the read that follows it) is a status of its own.
    expect(["delivered", "read"]).toContain(delivered.status);
    expect(delivered).toMatchObject({
      type: "template",
      error: null,
      template: { name: "order_update", language: "en_US", category: "UTILITY", parameterFormat: "POSITIONAL" },
      text: {
        body: "Order #1042\n\nHi Ana, your order #1042 has shipped and arrives on Friday.\n\nSandbox",
      },
    });
    expect((await settled(t.key, textJob, (m) => m.status === "failed")).error).toMatchObject({
      code: "service_window_closed",
    });
  });

  it("fill named parameters and a second language", async () => {
    const t = await createTenant();
    const named = await accepted(
      await sendV2(t.key, {
        channelNumberId: t.numberId,
        to: STRANGER,
        type: "template",
        template: {
          name: "appointment_reminder",
          language: "en_US",
          parameters: { body: { time: "10:00", first_name: "Ana", date: "May 2" } },
        },
      }),
    );
    const portuguese = await accepted(
      await sendV2(t.key, {
        channelNumberId: t.numberId,
        toUserId: "BR.13491208655302741918",
        type: "template",
        template: { name: "order_update", language: "pt_BR", parameters: { body: ["Ana", "#7", "sexta"] } },
      }),
    );
    expect((await settled(t.key, named, (m) => m.deliveredAt !== null)).text.body).toBe(
      "Hello Ana, see you on May 2 at 10:00.",
    );
    expect(await settled(t.key, portuguese, (m) => m.deliveredAt !== null)).toMatchObject({
      toUserId: "BR.13491208655302741918",
      text: { body: "Olá Ana, seu pedido #7 foi enviado e chega em sexta." },
      template: { language: "pt_BR" },
    });
  });

  it("read D1 once per number and name for 5 seconds, however many are sent (a text send reads none)", async () => {
    const t = await createTenant();
    const clock = fakeClock();
    const start = clock.now();
    const reads = vi.spyOn(env.DB, "prepare");
    const templateReads = () => reads.mock.calls.filter(([q]) => q.includes("message_templates")).length;
    await accepted(await sendV2(t.key, orderUpdate(t.numberId)));
    clock.set(start + 2_000);
    await accepted(await sendV2(t.key, orderUpdate(t.numberId, TEST_CONTACT)));
    expect(templateReads()).toBe(1);
    reads.mockClear();
    clock.set(start + 4_000);
    await accepted(await sendV2(t.key, textMessage(t.numberId, "plain", TEST_CONTACT)));
    expect(templateReads()).toBe(0);
    clock.set(start + 5_500);
    await accepted(await sendV2(t.key, orderUpdate(t.numberId)));
    expect(templateReads()).toBe(1);
    reads.mockRestore();
  });

  it("are listed by type in v2; v1 reads the same record", async () => {
    const t = await createTenant();
    const templateJob = await accepted(await sendV2(t.key, orderUpdate(t.numberId)));
    await accepted(await sendV2(t.key, textMessage(t.numberId, "plain", TEST_CONTACT)));
    const templates = await json<{ data: View[] }>(await apiV2("/messages?type=template", t.key));
    expect(templates.data.map((m) => m.id)).toEqual([templateJob]);
    const texts = await json<{ data: View[] }>(await apiV2("/messages?type=text&direction=outbound", t.key));
    expect(texts.data.map((m) => m.type)).toEqual(["text"]);
    expect(await json<View>(await api(`/messages/${templateJob}`, t.key))).toMatchObject({ type: "template" });
  });
});

describe("a template send that does not fit is refused before anything is queued", () => {
  const cases: [string, (numberId: string) => unknown, string, { path: string; rule: string }[]][] = [
    [
      "an unknown name",
      (n) => ({ ...orderUpdate(n), template: { name: "no_such_template", language: "en_US" } }),
      "template_not_found",
      [{ path: "template.name", rule: "unknown" }],
    ],
    [
      "a language the template does not have",
      (n) => ({ ...orderUpdate(n), template: { ...orderUpdate(n).template, language: "fr_FR" } }),
      "template_language_not_found",
      [{ path: "template.language", rule: "unknown" }],
    ],
    [
      "a paused template",
      (n) => ({
        ...orderUpdate(n),
        template: { name: "spring_sale", language: "en_US", parameters: { body: ["20%"] } },
      }),
      "template_paused",
      [{ path: "template.name", rule: "paused" }],
    ],
    [
      "too few body values",
      (n) => orderUpdate(n, STRANGER, { body: ["Ana", "#1042"] }),
      "template_parameters_invalid",
      [{ path: "template.parameters.body", rule: "count" }],
    ],
    [
      "too many body values",
      (n) => orderUpdate(n, STRANGER, { body: ["Ana", "#1042", "Friday", "extra"] }),
      "template_parameters_invalid",
      [{ path: "template.parameters.body", rule: "count" }],
    ],
    [
      "an object for a positional template",
      (n) => orderUpdate(n, STRANGER, { body: { name: "Ana" } }),
      "template_parameters_invalid",
      [{ path: "template.parameters.body", rule: "format" }],
    ],
    [
      "a missing header and button value",
      (n) => ({
        ...orderUpdate(n),
        template: { name: "order_update", language: "en_US", parameters: { body: ["Ana", "#1042", "Friday"] } },
      }),
      "template_parameters_invalid",
      [
        { path: "template.parameters.header", rule: "missing" },
        { path: "template.parameters.buttons.0", rule: "missing" },
      ],
    ],
    [
      "a header value longer than the operator allows",
      (n) => orderUpdate(n, STRANGER, { header: "x".repeat(PARAMETER_LIMITS.header + 1) }),
      "template_parameters_invalid",
      [{ path: "template.parameters.header", rule: "max" }],
    ],
    [
      "a body value longer than the operator allows",
      (n) => orderUpdate(n, STRANGER, { body: ["Ana", "y".repeat(PARAMETER_LIMITS.body + 1), "Friday"] }),
      "template_parameters_invalid",
      [{ path: "template.parameters.body.1", rule: "max" }],
    ],
    [
      "a missing and an unknown name of a named template",
      (n) => ({
        channelNumberId: n,
        to: STRANGER,
        type: "template",
        template: {
          name: "appointment_reminder",
          language: "en_US",
          parameters: { body: { first_name: "Ana", date: "May 2", hour: "10:00" } },
        },
      }),
      "template_parameters_invalid",
      [
        { path: "template.parameters.body.time", rule: "missing" },
        { path: "template.parameters.body.hour", rule: "unknown" },
      ],
    ],
  ];

  for (const [what, body, code, details] of cases) {
    it(`${what}: 400 ${code} naming it; no record, no quota, and the key stays free`, async () => {
      const t = await createTenant();
      const key = crypto.randomUUID();
      const err = await expectError(await sendV2(t.key, body(t.numberId), key), 400, code);
      expect(err.error.details).toEqual(details.map((d) => expect.objectContaining(d)));
      expect((await json<{ data: unknown[] }>(await apiV2("/messages", t.key))).data).toEqual([]);
      expect(await usedMessages(t.key)).toBe(0);
      // Nothing bound the key: the corrected send goes through with it.
      await accepted(await sendV2(t.key, orderUpdate(t.numberId), key));
    });
  }

  it("a template body without type, or text with type template, is a 400 naming the field", async () => {
    const t = await createTenant();
    const { type: _type, ...untyped } = orderUpdate(t.numberId);
    const err = await expectError(await sendV2(t.key, untyped), 400, "invalid_request");
    expect(err.error.details).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: "text", rule: "required" }),
        expect.objectContaining({ path: "template", rule: "not_allowed" }),
      ]),
    );
    const mixed = { ...orderUpdate(t.numberId), text: { body: "x" } };
    expect((await expectError(await sendV2(t.key, mixed), 400, "invalid_request")).error.details).toEqual([
      expect.objectContaining({ path: "text", rule: "not_allowed" }),
    ]);
  });

  it("a number of another workspace is 403, as in v1", async () => {
    const [t, other] = await Promise.all([createTenant(), createTenant()]);
    await expectError(await sendV2(t.key, orderUpdate(other.numberId)), 403, "forbidden");
  });
});

describe("v1 beside v2", () => {
  it("keeps SPEC's 400 for type template, storing nothing", async () => {
    const t = await createTenant();
    const err = await expectError(
      await send(t.key, crypto.randomUUID(), orderUpdate(t.numberId)),
      400,
      "invalid_request",
    );
    expect(err.error.details).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: "type" }),
        expect.objectContaining({ path: "template" }),
      ]),
    );
    expect(await usedMessages(t.key)).toBe(0);
  });

  it("a text message reads as in v1 in v2 (but for v2's statuses), and its events carry no template field", async () => {
    const t = await createTenant();
    const jobId = await accepted(await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "Hi", TEST_CONTACT)));
    await settled(t.key, jobId, (m) => m.deliveredAt !== null);
    const v1 = await (await api(`/messages/${jobId}`, t.key)).text();
    const v2 = JSON.parse(await (await apiV2(`/messages/${jobId}`, t.key)).text()) as { status: string };
    expect(["delivered", "read"]).toContain(v2.status);
    expect(JSON.stringify(v2)).toBe(JSON.stringify({ ...(JSON.parse(v1) as object), status: v2.status }));
    expect(Object.keys(JSON.parse(v1) as object)).toEqual([
      "id",
      "direction",
      "channelNumberId",
      "to",
      "toUserId",
      "type",
      "text",
      "status",
      "upstreamMessageId",
      "error",
      "outcomeUnknownSince",
      "createdAt",
      "updatedAt",
      "processingAt",
      "sentAt",
      "failedAt",
      "deliveredAt",
      "readAt",
    ]);
    const events = await eventsOfMessage(t.workspaceId, jobId);
    expect(events.length).toBeGreaterThan(0);
    for (const e of events)
      expect(Object.keys(e.data)).toEqual([
        "messageId",
        "channelNumberId",
        "to",
        "toUserId",
        "status",
        "previousStatus",
        "upstreamMessageId",
        "error",
        "deliveredAt",
        "readAt",
        "updatedAt",
      ]);
  });

  it("a retried template send whose named parameters come in another key order is the same send (200); another value is a 409", async () => {
    const t = await createTenant();
    const key = crypto.randomUUID();
    const reminder = (body: Record<string, string>) => ({
      channelNumberId: t.numberId,
      to: STRANGER,
      type: "template",
      template: { name: "appointment_reminder", language: "en_US", parameters: { body } },
    });
    const jobId = await accepted(
      await sendV2(t.key, reminder({ time: "10:00", first_name: "Ana", date: "May 2" }), key),
    );
    // Keys nested in the parameters, not only the top level, are compared in one order.
    const again = await sendV2(t.key, reminder({ date: "May 2", first_name: "Ana", time: "10:00" }), key);
    expect(again.status).toBe(200);
    expect(await json(again)).toEqual({ jobId, status: "duplicado_identico" });
    await expectError(
      await sendV2(t.key, reminder({ date: "May 3", first_name: "Ana", time: "10:00" }), key),
      409,
      "idempotency_conflict",
    );
  });

  it("an identical text send through v1 and v2 is one message (the same payload binds the same key)", async () => {
    const t = await createTenant();
    const key = crypto.randomUUID();
    const first = await send(t.key, key, textMessage(t.numberId, "Hello", TEST_CONTACT));
    expect(first.status).toBe(201);
    const again = await sendV2(t.key, textMessage(t.numberId, "Hello", TEST_CONTACT), key);
    expect(again.status).toBe(200);
    expect(await json(again)).toEqual({
      jobId: (await json<{ jobId: string }>(first)).jobId,
      status: "duplicado_identico",
    });
  });
});

describe("GET /api/v2/templates on a sandbox number", () => {
  it("lists the built-in templates with filters and pages, and shows one by name", async () => {
    const t = await createTenant();
    const all = await json<{ data: { name: string; language: string; status: string }[]; nextCursor: string | null }>(
      await apiV2("/templates", t.key),
    );
    expect(all.data.map((x) => `${x.name}/${x.language}/${x.status}`)).toEqual([
      "appointment_reminder/en_US/APPROVED",
      "order_update/en_US/APPROVED",
      "order_update/pt_BR/APPROVED",
      "spring_sale/en_US/PAUSED",
    ]);
    const first = await json<{ data: { name: string }[]; nextCursor: string }>(
      await apiV2("/templates?limit=3", t.key),
    );
    expect(first.data).toHaveLength(3);
    const second = await json<{ data: { name: string }[]; nextCursor: string | null }>(
      await apiV2(`/templates?limit=3&cursor=${first.nextCursor}`, t.key),
    );
    expect(second).toEqual({ data: [expect.objectContaining({ name: "spring_sale" })], nextCursor: null });
    const paused = await json<{ data: { name: string }[] }>(
      await apiV2(`/templates?status=PAUSED&channelNumberId=${t.numberId}`, t.key),
    );
    expect(paused.data.map((x) => x.name)).toEqual(["spring_sale"]);
    const detail = await json(await apiV2("/templates/appointment_reminder", t.key));
    expect(detail).toEqual({
      name: "appointment_reminder",
      translations: [
        expect.objectContaining({
          channelNumberIds: [t.numberId],
          parameterFormat: "NAMED",
          body: {
            text: "Hello {{first_name}}, see you on {{date}} at {{time}}.",
            parameters: ["first_name", "date", "time"],
          },
          source: "sandbox",
          sync: null,
        }),
      ],
    });
    await expectError(await apiV2("/templates/nothing_like_it", t.key), 404, "not_found");
    await expectError(await apiV2("/templates?cursor=bogus", t.key), 400, "invalid_request");
    // A cursor that decodes, but whose sort key is not the [name, language] this API writes: the caller's input.
    const crafted = (sortKey: string) => toBase64Url(new TextEncoder().encode(JSON.stringify([sortKey, "sandbox"])));
    for (const sortKey of ["not json", "{", '{"name":"a"}', '["a"]', "[1, 2]"]) {
      const refused = await expectError(
        await apiV2(`/templates?cursor=${crafted(sortKey)}`, t.key),
        400,
        "invalid_request",
      );
      expect(refused.error.details?.[0]?.path, sortKey).toBe("cursor");
    }
    const other = await createTenant();
    await expectError(await apiV2(`/templates?channelNumberId=${other.numberId}`, t.key), 404, "not_found");
  });
});
