import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createTenant, createWorkspace } from "../helpers/fixtures";
import { signedInMember } from "../helpers/dashboard";
import { liveConnectBody, fakeAccounts, operatorError, type FakeAccount } from "../helpers/operator";

const accounts = fakeAccounts();
const account = accounts.account;
afterEach(() => {
  accounts.restoreAll();
  vi.restoreAllMocks();
});

const numbersOf = async (workspaceId: string) =>
  (
    await env.DB.prepare("SELECT * FROM channel_numbers WHERE workspace_id = ? ORDER BY created_at")
      .bind(workspaceId)
      .all<Record<string, string | null>>()
  ).results;

const liveForm = (a: FakeAccount) => {
  const u = liveConnectBody(a);
  return { type: "cloud", phoneNumberId: u.phoneNumberId, wabaId: u.wabaId, accessToken: u.accessToken };
};

describe("Numbers page: connect a number (owners)", () => {
  it("connects a sandbox number at once and lists it with its id, a copy button and its health", async () => {
    const workspaceId = await createWorkspace();
    const owner = await signedInMember(workspaceId, "owner");
    const empty = await (await owner.browser.get("/dashboard/numbers")).text();
    expect(empty).toContain("Connect a number");
    expect(empty).not.toContain("ask support");
    const res = await owner.browser.post("/dashboard/numbers", { type: "sandbox", displayPhoneNumber: "+15550007777" });
    expect(res.status).toBe(303);
    const [row] = await numbersOf(workspaceId);
    expect(row).toMatchObject({ display_phone_number: "+15550007777", upstream_type: "sandbox", status: "connected" });
    expect(res.headers.get("location")).toBe(`/dashboard/numbers/${row!.id}`);
    const page = await (await owner.browser.get(res.headers.get("location")!)).text();
    expect(page).toContain("Sandbox number +15550007777 connected.");
    const list = await (await owner.browser.get("/dashboard/numbers")).text();
    expect(list).toContain(`data-copy-text="${row!.id}"`);
    expect(list).toMatch(/state-active/);
  });

  it("connects a live number after the operator's checks and shows what the operator says; the token is never shown", async () => {
    const workspaceId = await createWorkspace();
    const owner = await signedInMember(workspaceId, "owner");
    const a = account();
    const res = await owner.browser.post("/dashboard/numbers", liveForm(a));
    expect(res.status).toBe(303);
    expect(a.calls).toEqual([
      `GET ${a.phoneNumberId}`,
      `GET ${a.wabaId}/phone_numbers`,
      `POST ${a.wabaId}/subscribed_apps`,
    ]);
    const page = await (await owner.browser.get(res.headers.get("location")!)).text();
    expect(page).toContain("The operator says: Acme Shop (+15557770000): quality GREEN, messaging limit tier TIER_1K");
    expect(page).toContain("GREEN · TIER_1K");
    expect(page).not.toContain(a.token);
    expect((await owner.browser.get("/dashboard/numbers")).status).toBe(200);
  });

  const refusals: [string, (a: FakeAccount) => Record<string, string>, string, RegExp][] = [
    [
      "a bad token",
      (a) => ({ ...liveForm(a), accessToken: "EAAG-not-the-token-000000" }),
      "accessToken",
      /HTTP 401, code 190: Error validating access token/,
    ],
    ["a wrong business account", (a) => ({ ...liveForm(a), wabaId: "999000111222" }), "wabaId", /HTTP 400, code 100/],
  ];
  it.each(refusals)(
    "refuses %s beside the field, with the operator's reason; nothing is stored",
    async (_, form, field, reason) => {
      const workspaceId = await createWorkspace();
      const owner = await signedInMember(workspaceId, "owner");
      const a = account();
      const res = await owner.browser.post("/dashboard/numbers", form(a));
      expect(res.status).toBe(400);
      const html = await res.text();
      expect(html).toMatch(new RegExp(`id="${field}-error"[^>]*>[^<]*`));
      expect(html).toMatch(reason);
      expect(html).toMatch(new RegExp(`id="${field}"[^>]*aria-invalid="true"`));
      expect(await numbersOf(workspaceId)).toEqual([]);
    },
  );

  it("refuses when the webhook subscription fails; nothing is stored", async () => {
    const workspaceId = await createWorkspace();
    const owner = await signedInMember(workspaceId, "owner");
    const a = account({ subscribe: () => operatorError(403, 200, "Permissions error") });
    const res = await owner.browser.post("/dashboard/numbers", liveForm(a));
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("HTTP 403, code 200: Permissions error");
    expect(await numbersOf(workspaceId)).toEqual([]);
  });

  it("holds to the plan's number limit", async () => {
    const workspaceId = await createWorkspace({ plan: "free" });
    const owner = await signedInMember(workspaceId, "owner");
    expect(
      (await owner.browser.post("/dashboard/numbers", { type: "sandbox", displayPhoneNumber: "15550001" })).status,
    ).toBe(303);
    const refused = await owner.browser.post("/dashboard/numbers", { type: "sandbox", displayPhoneNumber: "15550002" });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("allows at most 1 connected number");
    expect(await numbersOf(workspaceId)).toHaveLength(1);
  });

  it("bad input is refused beside its field and changes nothing", async () => {
    const workspaceId = await createWorkspace();
    const owner = await signedInMember(workspaceId, "owner");
    const res = await owner.browser.post("/dashboard/numbers", { type: "sandbox", displayPhoneNumber: "call me" });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('id="displayPhoneNumber-error"');
    expect(await numbersOf(workspaceId)).toEqual([]);
  });
});

describe("a number's page: health, token, disconnect", () => {
  it("an owner replaces a live number's token (verified the same way) and disconnects it after a confirmation", async () => {
    const workspaceId = await createWorkspace();
    const owner = await signedInMember(workspaceId, "owner");
    const a = account();
    const connected = await owner.browser.post("/dashboard/numbers", liveForm(a));
    const numberPath = connected.headers.get("location")!;
    const [row] = await numbersOf(workspaceId);

    const refused = await owner.browser.post(`${numberPath}/token`, { accessToken: "EAAG-a-wrong-token-00000" });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("The operator refused this token");
    expect((await numbersOf(workspaceId))[0]!.upstream_credentials).toBe(row!.upstream_credentials);
    a.token = `EAAG${crypto.randomUUID().replaceAll("-", "")}`;
    const replaced = await owner.browser.post(`${numberPath}/token`, { accessToken: a.token });
    expect(replaced.status).toBe(303);
    expect((await numbersOf(workspaceId))[0]!.upstream_credentials).not.toBe(row!.upstream_credentials);

    // (A pending message's outcome, number_disconnected, is followed deterministically in api/number-connect.test.ts.)
    // Without confirmation: a second page asks.
    const ask = await owner.browser.post(`${numberPath}/disconnect`);
    expect(ask.status).toBe(200);
    expect(await ask.text()).toContain("number_disconnected");
    expect((await owner.browser.post(`${numberPath}/disconnect`, { confirmed: "yes" })).status).toBe(303);
    expect((await numbersOf(workspaceId))[0]).toMatchObject({ status: "disconnected" });
    const list = await (await owner.browser.get("/dashboard/numbers")).text();
    expect(list).toContain("Disconnected");
    expect((await owner.browser.get(numberPath)).status).toBe(404);
  });

  it("shows health: state, quality and tier, last operator error, sends today", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    await env.DB.prepare(
      "UPDATE channel_numbers SET quality_rating = 'YELLOW', messaging_limit_tier = 'TIER_250', last_operator_error = 'HTTP 401, code 190: expired' WHERE id = ?",
    )
      .bind(t.numberId)
      .run();
    const html = await (await owner.browser.get(`/dashboard/numbers/${t.numberId}`)).text();
    expect(html).toContain("YELLOW · TIER_250");
    expect(html).toContain("HTTP 401, code 190: expired");
    expect(html).toMatch(/Sends today<\/dt><dd>0/);
    expect(html).toContain("state-active");
  });

  it("viewers and developers cannot connect, replace a token or disconnect; the forms are not shown to them", async () => {
    const t = await createTenant();
    for (const role of ["viewer", "developer"] as const) {
      const m = await signedInMember(t.workspaceId, role);
      expect(await (await m.browser.get("/dashboard/numbers")).text()).not.toContain("Connect a number");
      expect(await (await m.browser.get(`/dashboard/numbers/${t.numberId}`)).text()).not.toContain("Disconnect");
      expect(
        (await m.browser.post("/dashboard/numbers", { type: "sandbox", displayPhoneNumber: "15550009" })).status,
      ).toBe(403);
      expect(
        (await m.browser.post(`/dashboard/numbers/${t.numberId}/token`, { accessToken: "EAAG-any-token-000000000" }))
          .status,
      ).toBe(403);
      expect((await m.browser.post(`/dashboard/numbers/${t.numberId}/disconnect`, { confirmed: "yes" })).status).toBe(
        403,
      );
    }
    expect(await numbersOf(t.workspaceId)).toMatchObject([{ id: t.numberId, status: "connected" }]);
  });

  it("another workspace's number is 404 for its page, token and disconnect", async () => {
    const mine = await createTenant();
    const other = await createTenant();
    const owner = await signedInMember(mine.workspaceId, "owner");
    expect((await owner.browser.get(`/dashboard/numbers/${other.numberId}`)).status).toBe(404);
    expect(
      (
        await owner.browser.post(`/dashboard/numbers/${other.numberId}/token`, {
          accessToken: "EAAG-any-token-000000000",
        })
      ).status,
    ).toBe(404);
    expect(
      (await owner.browser.post(`/dashboard/numbers/${other.numberId}/disconnect`, { confirmed: "yes" })).status,
    ).toBe(404);
    expect((await numbersOf(other.workspaceId))[0]).toMatchObject({ status: "connected" });
  });
});
