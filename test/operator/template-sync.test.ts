import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeClockPerTest } from "../helpers/clock";
import worker from "../../src/index";
import { api, expectError, json } from "../helpers/http";
import { createKey, createWorkspace } from "../helpers/fixtures";
import { liveConnectBody, fakeOperatorAccount, type FakeAccount } from "../helpers/operator";
import { postOperator } from "../helpers/operator-webhook";
import {
  apiV2,
  fakeTemplates,
  positionalTemplate,
  sendV2,
  templateStatusPayload,
  type OperatorTemplateFixture,
} from "../helpers/operator-templates";
import { CONNECT_PAGE_BUDGET, MAX_TEMPLATES_PER_ACCOUNT } from "../../src/features/templates/sync";
import { TEMPLATE_PAGE_BUDGET_PER_RUN } from "../../src/scheduled/template-sync";
import { TEMPLATE_PAGE_SIZE } from "../../src/operator/templates";

// The templates of a live number's business account, kept in D1: synced page by page when the
// number is connected and by the hourly cron (a page budget per run, resumed from the stored
// cursor), at once on the operator's signed `message_template_status_update`, and kept as last
// synced (with the failure and its age) when the operator cannot be asked.

const HOUR = 3_600_000;
const clock = fakeClockPerTest(Date.UTC(2045, 0, 1), (t) => t + 30 * 24 * HOUR);
let tenants: { key: string; numberId: string }[] = [];
let fakes: { restore(): void }[] = [];
afterEach(async () => {
  // Earlier tests' accounts are never due again: their numbers are disconnected (no operator call).
  for (const t of tenants) await api(`/channel-numbers/${t.numberId}`, t.key, { method: "DELETE" });
  for (const f of fakes.reverse()) f.restore();
  tenants = [];
  fakes = [];
  vi.restoreAllMocks();
});

const runCron = async () => {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime: clock.now(), cron: "17 * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
};

const many = (n: number): OperatorTemplateFixture[] =>
  Array.from({ length: n }, (_, i) => positionalTemplate(`t_${String(i).padStart(5, "0")}`));

/** A live number connected through the public API; its account's templates stay faked for the test. */
async function liveTenant(templates: OperatorTemplateFixture[]) {
  const workspaceId = await createWorkspace({ plan: "pro" });
  const { key } = await createKey(workspaceId);
  const account: FakeAccount = fakeOperatorAccount();
  const listed = fakeTemplates(account, templates);
  fakes.push(account, listed);
  const res = await api("/channel-numbers", key, { method: "POST", json: { upstream: liveConnectBody(account) } });
  expect(res.status, await res.clone().text()).toBe(201);
  const t = { workspaceId, key, account, listed, numberId: (await json<{ id: string }>(res)).id };
  tenants.push(t);
  return t;
}

const stored = async (wabaId: string) =>
  (await env.DB.prepare("SELECT COUNT(*) AS n FROM message_templates WHERE waba_id = ?")
    .bind(wabaId)
    .first<{ n: number }>())!.n;
const stateOf = (wabaId: string) =>
  env.DB.prepare("SELECT * FROM template_sync_state WHERE waba_id = ?")
    .bind(wabaId)
    .first<{ cursor: string | null; last_success_at: string | null; last_error: string | null }>();

interface TemplateItem {
  name: string;
  status: string;
  sync: { syncedAt: string; ageSeconds: number; lastError: string | null; lastErrorAt: string | null };
}

describe("paged sync", () => {
  it(`an account of thousands of templates is synced in pages, ${TEMPLATE_PAGE_BUDGET_PER_RUN} at most per cron run, resuming from the stored cursor, and capped at ${MAX_TEMPLATES_PER_ACCOUNT}`, async () => {
    const total = MAX_TEMPLATES_PER_ACCOUNT + 50;
    const t = await liveTenant(many(total));
    // The connect request itself: a few pages, the rest left to the cron with its cursor.
    expect(t.listed.pages).toHaveLength(CONNECT_PAGE_BUDGET);
    expect(await stored(t.account.wabaId)).toBe(CONNECT_PAGE_BUDGET * TEMPLATE_PAGE_SIZE);
    const afterConnect = await stateOf(t.account.wabaId);
    expect(afterConnect).toMatchObject({ cursor: expect.any(String), last_success_at: null });

    clock.advance(HOUR);
    await runCron();
    expect(t.listed.pages).toHaveLength(CONNECT_PAGE_BUDGET + TEMPLATE_PAGE_BUDGET_PER_RUN);
    // It went on where the connect stopped.
    expect(t.listed.pages[CONNECT_PAGE_BUDGET]!.get("after")).toBe(afterConnect!.cursor);
    expect(await stored(t.account.wabaId)).toBe(
      (CONNECT_PAGE_BUDGET + TEMPLATE_PAGE_BUDGET_PER_RUN) * TEMPLATE_PAGE_SIZE,
    );

    clock.advance(HOUR);
    await runCron();
    // 6,000 kept (the operator's maximum); the 61st page had no room: the pass ended there, saying so.
    expect(t.listed.pages).toHaveLength(Math.ceil(total / TEMPLATE_PAGE_SIZE));
    expect(await stored(t.account.wabaId)).toBe(MAX_TEMPLATES_PER_ACCOUNT);
    expect(await stateOf(t.account.wabaId)).toMatchObject({
      cursor: null,
      last_success_at: new Date(clock.now()).toISOString(),
      last_error: expect.stringContaining(`more than ${MAX_TEMPLATES_PER_ACCOUNT}`),
    });
  });

  it("at most hourly: a run within the hour asks nothing; a template deleted at the operator goes at the next pass", async () => {
    const t = await liveTenant(many(3));
    expect(t.listed.pages).toHaveLength(1);
    clock.advance(HOUR / 2);
    await runCron();
    expect(t.listed.pages).toHaveLength(1);
    t.listed.templates.splice(1, 1);
    clock.advance(HOUR / 2);
    await runCron();
    expect(t.listed.pages).toHaveLength(2);
    const names = await json<{ data: { name: string }[] }>(await apiV2("/templates", t.key));
    expect(names.data.map((x) => x.name)).toEqual(["t_00000", "t_00002"]);
  });
});

describe("a failing sync", () => {
  it("keeps the last good copy, shows its age and the failure, and recovers at the next run; the token is never logged", async () => {
    const lines: string[] = [];
    for (const level of ["log", "warn", "error"] as const)
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
    const t = await liveTenant(many(2));
    const syncedAt = new Date(clock.now()).toISOString();
    t.listed.failure = () =>
      Response.json({ error: { code: 2, message: "Service temporarily unavailable" } }, { status: 503 });
    clock.advance(2 * HOUR);
    await runCron();
    const list = await json<{ data: TemplateItem[] }>(await apiV2("/templates", t.key));
    expect(list.data).toHaveLength(2);
    expect(list.data[0]!.sync).toEqual({
      syncedAt,
      ageSeconds: 7200,
      lastError: "The operator answered HTTP 503, code 2: Service temporarily unavailable.",
      lastErrorAt: new Date(clock.now()).toISOString(),
    });
    // A failure is no reason to refuse a send of the last good copy.
    const ok = await sendV2(t.key, {
      channelNumberId: t.numberId,
      to: "5511944443333",
      type: "template",
      template: { name: "t_00000", language: "en_US", parameters: { body: ["Ana", "#1"] } },
    });
    expect(ok.status).toBe(201);

    // A failed account waits its hour like any other (one failing for good never takes the others' budget).
    const asked = t.listed.pages.length;
    clock.advance(HOUR / 2);
    await runCron();
    expect(t.listed.pages).toHaveLength(asked);
    t.listed.failure = null;
    clock.advance(HOUR / 2);
    await runCron();
    expect(t.listed.pages).toHaveLength(asked + 1);
    const fresh = await json<{ data: TemplateItem[] }>(await apiV2("/templates", t.key));
    expect(fresh.data[0]!.sync).toMatchObject({ ageSeconds: 0, lastError: null, lastErrorAt: null });
    expect(lines.some((l) => l.includes("template sync failed"))).toBe(true);
    expect(lines.filter((l) => l.includes(t.account.token))).toEqual([]);
  });
});

describe("the operator's message_template_status_update", () => {
  it("refreshes that template at once: a pause refuses sends (within the 5 s sends cache it), a new approval allows them", async () => {
    const t = await liveTenant([positionalTemplate("flash_sale")]);
    const sale = {
      channelNumberId: t.numberId,
      to: "5511944443333",
      type: "template",
      template: { name: "flash_sale", language: "en_US", parameters: { body: ["Ana", "#1"] } },
    };
    const key = crypto.randomUUID();
    const before = await sendV2(t.key, sale, key);
    expect(before.status).toBe(201);
    t.listed.templates[0]!.status = "PAUSED";
    const paused = templateStatusPayload(t.account.wabaId, {
      event: "PAUSED",
      message_template_name: "flash_sale",
      message_template_language: "en_US",
      reason: "LOW_QUALITY",
    });
    expect((await postOperator(paused)).status).toBe(200);
    expect(t.listed.pages.at(-1)!.get("name")).toBe("flash_sale");
    const got = await json<{ translations: TemplateItem[] }>(await apiV2("/templates/flash_sale", t.key));
    expect(got.translations.map((x) => x.status)).toEqual(["PAUSED"]);
    // Sends read a template at most 5 seconds old (per isolate; the operator refuses a paused one in between).
    clock.advance(5_000);
    await expectError(await sendV2(t.key, sale), 400, "template_paused");
    // A retry of the send accepted before the pause is still its replay, not a refusal.
    expect(await json(await sendV2(t.key, sale, key))).toEqual({
      jobId: (await json<{ jobId: string }>(before)).jobId,
      status: "duplicado_identico",
    });

    // A template approved since the last sync: its components come with the webhook's refresh.
    t.listed.templates.push(positionalTemplate("welcome", { components: [{ type: "BODY", text: "Welcome, {{1}}!" }] }));
    const approved = templateStatusPayload(t.account.wabaId, {
      event: "APPROVED",
      message_template_name: "welcome",
      message_template_language: "en_US",
      reason: "NONE",
    });
    expect((await postOperator(approved)).status).toBe(200);
    const welcome = { ...sale, template: { name: "welcome", language: "en_US", parameters: { body: ["Ana"] } } };
    expect((await sendV2(t.key, welcome)).status).toBe(201);
  });

  it("applies the event's status itself when the operator cannot be asked, and asks for a full sync", async () => {
    const t = await liveTenant([positionalTemplate("flash_sale")]);
    t.listed.failure = () => new Response("upstream connect error", { status: 502 });
    const disabled = templateStatusPayload(t.account.wabaId, {
      event: "DISABLED",
      message_template_name: "flash_sale",
      message_template_language: "en_US",
      reason: "POLICY",
    });
    expect((await postOperator(disabled)).status).toBe(200);
    const got = await json<{ translations: TemplateItem[] }>(await apiV2("/templates/flash_sale", t.key));
    expect(got.translations[0]).toMatchObject({
      status: "DISABLED",
      sync: { lastError: expect.stringContaining("502") },
    });
    expect(
      await env.DB.prepare("SELECT requested_at FROM template_sync_state WHERE waba_id = ?")
        .bind(t.account.wabaId)
        .first<{ requested_at: string | null }>(),
    ).toEqual({ requested_at: new Date(clock.now()).toISOString() });
    // A malformed update is dropped without failing the webhook.
    const malformed = templateStatusPayload(t.account.wabaId, {
      event: "PAUSED",
      message_template_name: "",
      message_template_language: "en_US",
    });
    expect((await postOperator(malformed)).status).toBe(200);
  });
});
