import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeClock } from "../helpers/clock";
import { putSyncState } from "../../src/features/templates/store";
import { toBase64Url } from "../../src/lib/crypto";
import { createKey, createTenant, createWorkspace, TEST_CONTACT } from "../helpers/fixtures";
import { signedInMember, type Member } from "../helpers/dashboard";
import { api, json } from "../helpers/http";
import { liveNumberTenant, liveConnectBody, fakeOperatorAccount } from "../helpers/operator";
import { apiV2, fakeTemplates, positionalTemplate, sendV2 } from "../helpers/operator-templates";

// A number's Templates page (docs/customers/dashboard.md, "Templates"): what GET /api/v2/templates shows,
// the JSON to send each template, and the "send a test" form of developers and owners, which
// goes through the same checks and engine as POST /api/v2/messages.

afterEach(() => {
  vi.restoreAllMocks();
});

/** Nobody who wrote to the number, and not a test contact: outside the 24-hour window. */
const STRANGER = "5511955554444";

const page = async (m: Member, numberId: string) => {
  const res = await m.browser.get(`/dashboard/numbers/${numberId}/templates`);
  expect(res.status).toBe(200);
  return res.text();
};

/** The HTML of one template's card (its heading names it and its language). */
function cardOf(html: string, name: string, language: string): string {
  const start = html.search(new RegExp(`<article[^>]*>\\s*<h2[^>]*>${name} <span class="hint">\\(${language}\\)`));
  expect(start, `${name} (${language})`).toBeGreaterThanOrEqual(0);
  return html.slice(start, html.indexOf("</article>", start));
}

const unescape = (s: string) =>
  s
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");

/** The JSON the card offers to copy. */
const jsonOf = (card: string): Record<string, unknown> =>
  JSON.parse(unescape(/data-copy-text="([^"]*)"/.exec(card)![1]!)) as Record<string, unknown>;

const messagesOf = async (key: string) =>
  (await json<{ data: { id: string }[] }>(await apiV2("/messages?type=template", key))).data;

const auditOf = async (workspaceId: string) =>
  (
    await env.DB.prepare(
      "SELECT action, actor_type, target_id, detail FROM audit_log WHERE workspace_id = ? AND action = 'template.test_sent'",
    )
      .bind(workspaceId)
      .all<Record<string, string>>()
  ).results;

const orderUpdateForm = (over: Record<string, string> = {}) => ({
  name: "order_update",
  language: "en_US",
  idempotencyKey: crypto.randomUUID(),
  to: STRANGER,
  header: "#1042",
  body_1: "Ana",
  body_2: "#1042",
  body_3: "Friday",
  button_0: "1042",
  ...over,
});

describe("a sandbox number's Templates page", () => {
  it("is linked from the number's page and shows each built-in template: status, category, language, format, preview, JSON", async () => {
    const t = await createTenant();
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const numberPage = await (await viewer.browser.get(`/dashboard/numbers/${t.numberId}`)).text();
    expect(numberPage).toContain(`href="/dashboard/numbers/${t.numberId}/templates"`);

    const html = await page(viewer, t.numberId);
    expect(html).toContain("built-in templates");
    // The Numbers section stays the current one in the navigation.
    expect(html).toMatch(/href="\/dashboard\/numbers" aria-current="page"/);
    const order = cardOf(html, "order_update", "en_US");
    expect(order).toContain('<span class="badge ok">APPROVED</span>');
    expect(order).toContain("UTILITY");
    expect(order).toContain("POSITIONAL");
    expect(order).toContain(
      'Hi <mark class="placeholder">{{1}}</mark>, your order <mark class="placeholder">{{2}}</mark>',
    );
    expect(order).toContain('Order <mark class="placeholder">{{1}}</mark>');
    expect(order).toContain("Track");
    const named = cardOf(html, "appointment_reminder", "en_US");
    expect(named).toContain("NAMED");
    expect(named).toContain('<mark class="placeholder">{{first_name}}</mark>');
    expect(cardOf(html, "order_update", "pt_BR")).toContain("Olá");
    const paused = cardOf(html, "spring_sale", "en_US");
    expect(paused).toContain('<span class="badge warn">PAUSED</span>');
    expect(paused).toContain("MARKETING");
    expect(paused).toContain("template_paused");

    expect(jsonOf(named)).toEqual({
      channelNumberId: t.numberId,
      to: "5511999998888",
      type: "template",
      template: {
        name: "appointment_reminder",
        language: "en_US",
        parameters: {
          body: { first_name: "value of {{first_name}}", date: "value of {{date}}", time: "value of {{time}}" },
        },
      },
    });
    // Viewers read it all and are offered no form.
    expect(html).not.toContain("/templates/test");
    expect(html).toContain("Developers and owners of the workspace can send a test");
  });

  it("lists the built-in templates as GET /api/v2/templates lists the number's: the same ones, by name and language", async () => {
    const t = await createTenant();
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const cards = async (query: string) => {
      const res = await viewer.browser.get(`/dashboard/numbers/${t.numberId}/templates?${query}`);
      expect(res.status, query).toBe(200);
      return [...(await res.text()).matchAll(/<h2 id="t\d+-heading">(\w+) <span class="hint">\((\w+)\)/g)].map(
        (m) => `${m[1]} ${m[2]}`,
      );
    };
    const listed = async (query: string) =>
      (
        await json<{ data: { name: string; language: string }[] }>(
          await apiV2(`/templates?channelNumberId=${t.numberId}&${query}`, t.key),
        )
      ).data.map((x) => `${x.name} ${x.language}`);
    expect(await cards("")).toEqual([
      "appointment_reminder en_US",
      "order_update en_US",
      "order_update pt_BR",
      "spring_sale en_US",
    ]);
    for (const query of ["", "status=APPROVED", "language=en_US", "category=MARKETING"])
      expect(await cards(query), query).toEqual(await listed(query));
  });

  it("the JSON offered for each approved template is accepted by POST /api/v2/messages as it is", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const html = await page(owner, t.numberId);
    // One number sends at most 2 a second: each send a second after the last.
    const clock = fakeClock();
    for (const [name, language] of [
      ["order_update", "en_US"],
      ["order_update", "pt_BR"],
      ["appointment_reminder", "en_US"],
    ] as const) {
      clock.advance(1_000);
      const body = jsonOf(cardOf(html, name, language));
      const res = await sendV2(t.key, { ...body, to: TEST_CONTACT });
      expect(res.status, `${name} ${language}: ${await res.clone().text()}`).toBe(201);
    }
  });

  it("a developer sends a test outside the window: queued as a template message, shown on its page, audited without the recipient", async () => {
    const t = await createTenant();
    const developer = await signedInMember(t.workspaceId, "developer");
    const html = await page(developer, t.numberId);
    expect(cardOf(html, "order_update", "en_US")).toContain(`action="/dashboard/numbers/${t.numberId}/templates/test"`);
    // No form for a template that cannot be sent.
    expect(cardOf(html, "spring_sale", "en_US")).not.toContain("/templates/test");

    const res = await developer.browser.post(`/dashboard/numbers/${t.numberId}/templates/test`, orderUpdateForm());
    expect(res.status).toBe(303);
    const location = res.headers.get("location") ?? "";
    expect(location).toMatch(/^\/dashboard\/messages\/[0-9a-f-]{36}$/);
    const jobId = location.split("/").at(-1)!;
    const messagePage = await (await developer.browser.get(location)).text();
    expect(messagePage).toContain("Test of order_update (en_US) queued.");

    const record = await json<{ type: string; to: string; text: { body: string }; template: Record<string, string> }>(
      await apiV2(`/messages/${jobId}`, t.key),
    );
    expect(record).toMatchObject({
      type: "template",
      to: STRANGER,
      template: { name: "order_update", language: "en_US", category: "UTILITY", parameterFormat: "POSITIONAL" },
    });
    expect(record.text.body).toBe(
      "Order #1042\n\nHi Ana, your order #1042 has shipped and arrives on Friday.\n\nSandbox",
    );
    const entries = await auditOf(t.workspaceId);
    expect(entries).toEqual([
      {
        action: "template.test_sent",
        actor_type: "member",
        target_id: t.numberId,
        detail: "order_update (en_US)",
      },
    ]);
    expect(JSON.stringify(entries)).not.toContain(STRANGER);
  });

  it("a form sent twice is one message: the second answers with the first, sends nothing and records nothing", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const form = {
      name: "appointment_reminder",
      language: "en_US",
      idempotencyKey: crypto.randomUUID(),
      to: STRANGER,
      body_first_name: "Ana",
      body_date: "May 2",
      body_time: "10:00",
    };
    const first = await owner.browser.post(`/dashboard/numbers/${t.numberId}/templates/test`, form);
    const second = await owner.browser.post(`/dashboard/numbers/${t.numberId}/templates/test`, form);
    expect(second.status).toBe(303);
    expect(second.headers.get("location")).toBe(first.headers.get("location"));
    expect(await (await owner.browser.get(second.headers.get("location")!)).text()).toContain(
      "was already sent; nothing was sent again",
    );
    expect(await messagesOf(t.key)).toHaveLength(1);
    const record = await json<{ text: { body: string } }>(
      await apiV2(`/messages/${first.headers.get("location")!.split("/").at(-1)}`, t.key),
    );
    expect(record.text.body).toBe("Hello Ana, see you on May 2 at 10:00.");
    expect(await auditOf(t.workspaceId)).toHaveLength(1);
  });

  it.each([
    ["an empty body value", { body_2: "" }, "body_2", /must not be empty/],
    ["a recipient with '+'", { to: "+5511955554444" }, "to", /E\.164|digits/],
    ["a header value over the operator's 60 characters", { header: "x".repeat(61) }, "header", /at most 60 characters/],
  ])("refuses %s beside its field, keeps what was typed, and queues nothing", async (_, over, field, message) => {
    const t = await createTenant();
    const developer = await signedInMember(t.workspaceId, "developer");
    const form = orderUpdateForm(over);
    const res = await developer.browser.post(`/dashboard/numbers/${t.numberId}/templates/test`, form);
    expect(res.status).toBe(400);
    const card = cardOf(await res.text(), "order_update", "en_US");
    expect(card).toContain('role="alert"');
    const id = /id="(t\d+)-to"/.exec(card)![1]!;
    expect(card).toMatch(new RegExp(`id="${id}-${field}"[^>]*aria-invalid="true"`));
    expect(card).toMatch(new RegExp(`aria-describedby="${id}-${field}-error"`));
    const error = new RegExp(`id="${id}-${field}-error"[^>]*>([^<]*)<`).exec(card)![1]!;
    expect(unescape(error)).toMatch(message);
    expect(card).toContain(`value="${form.body_1}"`);
    // The refused request did not bind the form's key: the form keeps it for the corrected send.
    expect(card).toContain(`value="${form.idempotencyKey}"`);
    expect(await messagesOf(t.key)).toEqual([]);
    expect(await auditOf(t.workspaceId)).toEqual([]);
  });

  it("a template paused since the page was shown is refused above the form, with the operator's words", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const res = await owner.browser.post(`/dashboard/numbers/${t.numberId}/templates/test`, {
      name: "spring_sale",
      language: "en_US",
      to: STRANGER,
      body_1: "20%",
    });
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).toMatch(/class="form-error" role="alert">Not sent \(template_paused\)/);
    expect(await messagesOf(t.key)).toEqual([]);
  });

  it("viewers cannot send a test (403, nothing queued); another workspace's number is 404", async () => {
    const t = await createTenant();
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const refused = await viewer.browser.post(`/dashboard/numbers/${t.numberId}/templates/test`, orderUpdateForm());
    expect(refused.status).toBe(403);
    expect(await messagesOf(t.key)).toEqual([]);

    const other = await createTenant();
    const stranger = await signedInMember(other.workspaceId, "owner");
    expect((await stranger.browser.get(`/dashboard/numbers/${t.numberId}/templates`)).status).toBe(404);
    expect(
      (await stranger.browser.post(`/dashboard/numbers/${t.numberId}/templates/test`, orderUpdateForm())).status,
    ).toBe(404);
    expect(await messagesOf(t.key)).toEqual([]);
  });
});

describe("a live number's Templates page", () => {
  /** A workspace with a live number whose business account lists `templates` (synced at connect). */
  async function liveTenant(templates: ReturnType<typeof positionalTemplate>[]) {
    const workspaceId = await createWorkspace({ plan: "pro" });
    const { key } = await createKey(workspaceId);
    const account = fakeOperatorAccount();
    const listed = fakeTemplates(account, templates);
    try {
      const res = await api("/channel-numbers", key, { method: "POST", json: { upstream: liveConnectBody(account) } });
      expect(res.status, await res.clone().text()).toBe(201);
      return { workspaceId, key, account, numberId: (await json<{ id: string }>(res)).id };
    } finally {
      listed.restore();
      account.restore();
    }
  }

  it("shows the synced templates, the sync age and the account's last sync error; template text is inert", async () => {
    const t = await liveTenant([
      positionalTemplate("welcome", {
        components: [{ type: "BODY", text: '<script>alert(1)</script><img src=x onerror="alert(2)"> Hi {{1}}' }],
      }),
      positionalTemplate("rejected_one", { status: "REJECTED", category: "MARKETING" }),
    ]);
    await putSyncState(env.DB, t.account.wabaId, {
      last_error: "operator answered 500 <b>bold</b>",
      last_error_at: new Date().toISOString(),
    });
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const html = await page(viewer, t.numberId);
    expect(html).toContain(t.account.wabaId);
    expect(html).toMatch(
      /Last synced<\/dt>\s*<dd><time datetime="[^"]+">[^<]+<\/time> <span class="hint">\((less than a minute|\d+ minutes?) ago\)/,
    );
    expect(html).toContain("operator answered 500 &lt;b&gt;bold&lt;/b&gt;");
    expect(html).toContain("the last good copy below is kept");
    const welcome = cardOf(html, "welcome", "en_US");
    expect(welcome).not.toMatch(/<script>alert|<img/);
    expect(welcome).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(welcome).toContain("Confirmed by the operator");
    const rejected = cardOf(html, "rejected_one", "en_US");
    expect(rejected).toContain('<span class="badge bad">REJECTED</span>');
    expect(rejected).toContain("template_not_approved");
  });

  it("filters by status, category and language as GET /api/v2/templates does; a refused filter is explained, with no list", async () => {
    const t = await liveTenant([
      positionalTemplate("welcome"),
      positionalTemplate("welcome", { language: "pt_BR" }),
      positionalTemplate("promo", { category: "MARKETING" }),
      positionalTemplate("old_promo", { status: "PAUSED", category: "MARKETING" }),
    ]);
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const cards = async (query: string) => {
      const res = await viewer.browser.get(`/dashboard/numbers/${t.numberId}/templates?${query}`);
      expect(res.status, query).toBe(200);
      return [...(await res.text()).matchAll(/<h2 id="t\d+-heading">(\w+) <span class="hint">\((\w+)\)/g)].map(
        (m) => `${m[1]} ${m[2]}`,
      );
    };
    const api = async (query: string) =>
      (await json<{ data: { name: string; language: string }[] }>(await apiV2(`/templates?${query}`, t.key))).data.map(
        (x) => `${x.name} ${x.language}`,
      );
    for (const query of [
      "",
      "category=MARKETING",
      "status=PAUSED",
      "language=pt_BR",
      "category=MARKETING&status=APPROVED",
    ])
      expect(await cards(query), query).toEqual(await api(query));
    expect(await cards("category=MARKETING&status=APPROVED")).toEqual(["promo en_US"]);
    const none = await (await viewer.browser.get(`/dashboard/numbers/${t.numberId}/templates?language=de`)).text();
    expect(none).toContain("No template matches these filters.");
    // The form keeps the filters it shows.
    expect(await (await viewer.browser.get(`/dashboard/numbers/${t.numberId}/templates?status=PAUSED`)).text()).toMatch(
      /<option value="PAUSED" selected="">PAUSED<\/option>/,
    );

    const bad = await viewer.browser.get(`/dashboard/numbers/${t.numberId}/templates?status=NOPE&language=english`);
    expect(bad.status).toBe(400);
    const html = await bad.text();
    expect(html).toMatch(/<p class="field-error" id="status-error">[^<]*Invalid option/);
    expect(html).toContain("language is the operator&#39;s code, e.g. en_US.");
    expect(html).not.toContain("<article");
  });

  it("a damaged or crafted cursor shows the first page, never an error page", async () => {
    const t = await liveTenant([positionalTemplate("welcome"), positionalTemplate("promo", { category: "MARKETING" })]);
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const crafted = (sortKey: string) =>
      toBase64Url(new TextEncoder().encode(JSON.stringify([sortKey, t.account.wabaId])));
    for (const cursor of ["bogus", crafted("not json"), crafted('{"name":"a"}')]) {
      const res = await viewer.browser.get(`/dashboard/numbers/${t.numberId}/templates?cursor=${cursor}`);
      expect(res.status, cursor).toBe(200);
      const html = await res.text();
      cardOf(html, "welcome", "en_US");
      cardOf(html, "promo", "en_US");
    }
  });

  it("a live number connected without its business account id says why it has none", async () => {
    const t = await liveNumberTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const html = await page(owner, t.numberId);
    expect(html).toContain("connected without its business account id");
    expect(html).not.toContain("<article");
  });
});
