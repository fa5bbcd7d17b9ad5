// An owner invites a viewer from the Members page; the viewer sees no create
// or revoke controls and a forged POST changes nothing; a form posted from
// another origin is refused even for the owner (CSRF).
import assert from "node:assert/strict";
import { BASE_URL, RECEIVER_URL, createWorkspace, expectAccessible, screenshot } from "../harness.mjs";
import { acceptInvitation, uniqueEmail } from "./common.mjs";

/** @param {import("../harness.mjs").Harness} h @param {string} workspaceId */
const keyCount = async (h, workspaceId) => (await h.admin("GET", `/workspaces/${workspaceId}/api-keys`)).data.length;

/** @param {import("../harness.mjs").Harness} h */
export async function viewerFlow(h) {
  const { workspaceId, numberId } = await createWorkspace(h, "Acme Shipping");
  const ownerInvitation = await h.admin("POST", `/workspaces/${workspaceId}/members`, {
    email: uniqueEmail("owner"),
    role: "owner",
  });
  const owner = await h.newPage();
  await acceptInvitation(owner.page, ownerInvitation.invitationUrl);

  // The owner invites a viewer and gets the link to pass on.
  await owner.page.getByRole("link", { name: "Members" }).click();
  await expectAccessible(owner.page, "members");
  const viewerEmail = uniqueEmail("viewer");
  await owner.page.getByLabel("Email", { exact: true }).fill(viewerEmail);
  await owner.page.getByLabel("Role", { exact: true }).selectOption("viewer");
  await owner.page.getByRole("button", { name: "Create invitation link" }).click();
  const link = await owner.page.locator("#secret-value").inputValue();
  assert.ok(link.startsWith(`${BASE_URL}/dashboard/invitations/`));
  await owner.page.getByRole("row", { name: new RegExp(viewerEmail) }).waitFor();
  await expectAccessible(owner.page, "members with invitation");
  await screenshot(owner.page, "members");

  const viewer = await h.newPage();
  await acceptInvitation(viewer.page, link);
  await viewer.page.goto("/dashboard/api-keys");
  assert.equal(await viewer.page.getByRole("button", { name: "Create key" }).count(), 0);
  assert.equal(await viewer.page.getByRole("button", { name: "Revoke" }).count(), 0);
  await viewer.page.goto(`/dashboard/webhooks/${numberId}`);
  assert.equal(await viewer.page.getByLabel("Endpoint URL").count(), 0);
  await viewer.page.goto("/dashboard/members");
  assert.equal(await viewer.page.getByRole("button", { name: "Create invitation link" }).count(), 0);
  await expectAccessible(viewer.page, "members (viewer)");
  await screenshot(viewer.page, "viewer-members");

  // A forged same-origin POST (the viewer's own browser, no control on the page) is refused by role.
  const keysBefore = await keyCount(h, workspaceId);
  await viewer.page.evaluate(() => {
    const form = document.createElement("form");
    form.method = "post";
    form.action = "/dashboard/api-keys";
    const name = document.createElement("input");
    name.name = "name";
    name.value = "forged";
    form.append(name);
    document.body.append(form);
    form.submit();
  });
  await viewer.page.getByRole("heading", { name: "Not allowed" }).waitFor();
  assert.equal(await keyCount(h, workspaceId), keysBefore);

  // A form on another origin (the receiver's port) posting as the owner: refused by the CSRF check.
  const forge = await owner.context.newPage();
  await forge.goto(
    `${new URL(RECEIVER_URL).origin}/forge?action=${encodeURIComponent(`${BASE_URL}/dashboard/api-keys`)}`,
  );
  await forge.getByRole("button", { name: "Go" }).click();
  await forge.getByRole("heading", { name: "Form refused" }).waitFor();
  assert.equal(await keyCount(h, workspaceId), keysBefore);

  assert.deepEqual([...owner.problems, ...viewer.problems], []);
  await owner.context.close();
  await viewer.context.close();
}
