import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_TEST_CONTACTS_PER_NUMBER } from "../../src/db/sandbox-test-contacts";
import { createTenant, markTestContacts, TEST_CONTACT, TEST_CONTACT_2 } from "../helpers/fixtures";
import { signedInMember } from "../helpers/dashboard";
import { api, json } from "../helpers/http";
import { liveConnectBody, fakeOperatorAccount } from "../helpers/operator";

// A sandbox number's test contacts on its dashboard page: the same operation as
// /api/v1/sandbox/test-contacts (docs/customers/dashboard.md, "Numbers").

const contactsOf = async (numberId: string) =>
  (
    await env.DB.prepare("SELECT phone FROM sandbox_test_contacts WHERE channel_number_id = ? ORDER BY phone")
      .bind(numberId)
      .all<{ phone: string }>()
  ).results.map((r) => r.phone);

const auditOf = async (workspaceId: string) =>
  (
    await env.DB.prepare(
      "SELECT action, actor_type, target_id, detail FROM audit_log WHERE workspace_id = ? AND action LIKE 'sandbox.%' ORDER BY seq",
    )
      .bind(workspaceId)
      .all<Record<string, string>>()
  ).results;

const NEW_CONTACT = "5511955554444";

describe("a sandbox number's page: test contacts", () => {
  it("a developer adds one (listed on the page and by the API, audited without the phone), and adding it again changes nothing", async () => {
    const t = await createTenant();
    const developer = await signedInMember(t.workspaceId, "developer");
    const page = await (await developer.browser.get(`/dashboard/numbers/${t.numberId}`)).text();
    expect(page).toContain("Test contacts");
    expect(page).toContain(TEST_CONTACT);
    expect(page).toContain(`action="/dashboard/numbers/${t.numberId}/test-contacts"`);

    const res = await developer.browser.post(`/dashboard/numbers/${t.numberId}/test-contacts`, {
      phone: ` ${NEW_CONTACT} `,
    });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/dashboard/numbers/${t.numberId}`);
    const after = await (await developer.browser.get(`/dashboard/numbers/${t.numberId}`)).text();
    expect(after).toContain(`${NEW_CONTACT} is now a test contact of`);
    expect(after).toContain(`/test-contacts/${NEW_CONTACT}/remove`);
    expect(await contactsOf(t.numberId)).toEqual([TEST_CONTACT_2, NEW_CONTACT, TEST_CONTACT].sort());
    const listed = await json<{ data: { phone: string }[] }>(
      await api(`/sandbox/test-contacts?channelNumberId=${t.numberId}`, t.key),
    );
    expect(listed.data.map((d) => d.phone)).toContain(NEW_CONTACT);
    const entries = await auditOf(t.workspaceId);
    expect(entries).toEqual([
      expect.objectContaining({ action: "sandbox.test_contact_added", actor_type: "member", target_id: t.numberId }),
    ]);
    expect(JSON.stringify(entries)).not.toContain(NEW_CONTACT);

    const again = await developer.browser.post(`/dashboard/numbers/${t.numberId}/test-contacts`, {
      phone: NEW_CONTACT,
    });
    expect(again.status).toBe(303);
    expect(await (await developer.browser.get(`/dashboard/numbers/${t.numberId}`)).text()).toContain(
      "already was a test contact; nothing changed",
    );
    expect(await auditOf(t.workspaceId)).toHaveLength(1);
  });

  it.each([["+5511955554444"], ["55 11 9555"], ["0551195555"], [""], ["1".repeat(33)]])(
    "refuses %j beside the field, keeps what was typed, and stores nothing",
    async (phone) => {
      const t = await createTenant();
      const owner = await signedInMember(t.workspaceId, "owner");
      const res = await owner.browser.post(`/dashboard/numbers/${t.numberId}/test-contacts`, { phone });
      expect(res.status).toBe(400);
      const html = await res.text();
      expect(html).toMatch(
        /id="phone-error"[^>]*>The phone must be E\.164 digits without &#39;\+&#39;|id="phone-error"[^>]*>The phone must be E\.164 digits without '\+'/,
      );
      expect(html).toMatch(/id="phone"[^>]*aria-invalid="true"/);
      expect(html).toContain(`value="${phone}"`);
      expect(await contactsOf(t.numberId)).toEqual([TEST_CONTACT_2, TEST_CONTACT].sort());
      expect(await auditOf(t.workspaceId)).toEqual([]);
    },
  );

  it("an owner removes one (audited); removing it again is an error notice, not a success", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const res = await owner.browser.post(`/dashboard/numbers/${t.numberId}/test-contacts/${TEST_CONTACT}/remove`);
    expect(res.status).toBe(303);
    expect(await (await owner.browser.get(`/dashboard/numbers/${t.numberId}`)).text()).toContain(
      `${TEST_CONTACT} is no longer a test contact`,
    );
    expect(await contactsOf(t.numberId)).toEqual([TEST_CONTACT_2]);
    expect(await auditOf(t.workspaceId)).toEqual([
      expect.objectContaining({ action: "sandbox.test_contact_removed", actor_type: "member", target_id: t.numberId }),
    ]);

    await owner.browser.post(`/dashboard/numbers/${t.numberId}/test-contacts/${TEST_CONTACT}/remove`);
    const html = await (await owner.browser.get(`/dashboard/numbers/${t.numberId}`)).text();
    expect(html).toMatch(/flash-error[\s\S]*That phone is not a test contact of this number\./);
    expect(await auditOf(t.workspaceId)).toHaveLength(1);
  });

  it(`refuses the ${MAX_TEST_CONTACTS_PER_NUMBER + 1}th beside the field`, async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    // createTenant made 2; 8 more reach the bound.
    await markTestContacts(
      t.numberId,
      ...Array.from({ length: MAX_TEST_CONTACTS_PER_NUMBER - 2 }, (_, i) => `55110000001${i}`),
    );
    expect(await contactsOf(t.numberId)).toHaveLength(MAX_TEST_CONTACTS_PER_NUMBER);
    const res = await owner.browser.post(`/dashboard/numbers/${t.numberId}/test-contacts`, { phone: NEW_CONTACT });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(
      /id="phone-error"[^>]*>A sandbox number has at most 10 test contacts: remove one first\./,
    );
    expect(await contactsOf(t.numberId)).toHaveLength(MAX_TEST_CONTACTS_PER_NUMBER);
    expect(await contactsOf(t.numberId)).not.toContain(NEW_CONTACT);
  });

  it("a viewer sees the list but no forms, and is refused both changes", async () => {
    const t = await createTenant();
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const page = await (await viewer.browser.get(`/dashboard/numbers/${t.numberId}`)).text();
    expect(page).toContain(TEST_CONTACT);
    expect(page).not.toContain("/test-contacts");
    expect(page).toContain("Developers and owners of the workspace can add and remove test contacts.");
    expect(
      (await viewer.browser.post(`/dashboard/numbers/${t.numberId}/test-contacts`, { phone: NEW_CONTACT })).status,
    ).toBe(403);
    expect(
      (await viewer.browser.post(`/dashboard/numbers/${t.numberId}/test-contacts/${TEST_CONTACT}/remove`)).status,
    ).toBe(403);
    expect(await contactsOf(t.numberId)).toEqual([TEST_CONTACT_2, TEST_CONTACT].sort());
    expect(await auditOf(t.workspaceId)).toEqual([]);
  });

  it("another workspace's number is 404 for both changes; nothing changes", async () => {
    const [t, other] = await Promise.all([createTenant(), createTenant()]);
    const owner = await signedInMember(t.workspaceId, "owner");
    expect(
      (await owner.browser.post(`/dashboard/numbers/${other.numberId}/test-contacts`, { phone: NEW_CONTACT })).status,
    ).toBe(404);
    expect(
      (await owner.browser.post(`/dashboard/numbers/${other.numberId}/test-contacts/${TEST_CONTACT}/remove`)).status,
    ).toBe(404);
    expect(await contactsOf(other.numberId)).toEqual([TEST_CONTACT_2, TEST_CONTACT].sort());
    expect([...(await auditOf(t.workspaceId)), ...(await auditOf(other.workspaceId))]).toEqual([]);
  });

  it("a live number's page has no test contacts, and adding one is refused with an error notice", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const account = fakeOperatorAccount();
    try {
      const u = liveConnectBody(account);
      const connected = await owner.browser.post("/dashboard/numbers", {
        type: "cloud",
        phoneNumberId: u.phoneNumberId,
        wabaId: u.wabaId,
        accessToken: u.accessToken,
      });
      const numberPath = connected.headers.get("location")!;
      expect(await (await owner.browser.get(numberPath)).text()).not.toContain("Test contacts");
      const res = await owner.browser.post(`${numberPath}/test-contacts`, { phone: NEW_CONTACT });
      expect(res.status).toBe(303);
      expect(await (await owner.browser.get(numberPath)).text()).toMatch(
        /flash-error[\s\S]*Test contacts exist only on sandbox numbers/,
      );
      expect(await contactsOf(numberPath.split("/").at(-1)!)).toEqual([]);
    } finally {
      account.restore();
    }
  });
});
