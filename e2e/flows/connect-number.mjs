// An owner connects a sandbox number on the Numbers page → lands on its page
// with its health → the list shows its id with a copy button that copies it →
// a refused display number is explained beside the field.
import assert from "node:assert/strict";
import { BASE_URL, expectAccessible, screenshot } from "../harness.mjs";
import { acceptInvitation, uniqueEmail } from "./common.mjs";

/** @param {import("../harness.mjs").Harness} h */
export async function connectNumberFlow(h) {
  const workspace = await h.admin("POST", "/workspaces", { name: "Acme Connect", plan: "pro" });
  const invitation = await h.admin("POST", `/workspaces/${workspace.id}/members`, { email: uniqueEmail("owner"), role: "owner" });
  const { context, page, problems } = await h.newPage();
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: BASE_URL });
  await acceptInvitation(page, invitation.invitationUrl);

  await page.getByRole("link", { name: "Numbers" }).click();
  await page.getByRole("heading", { name: "Connect a number" }).waitFor();
  await expectAccessible(page, "numbers (empty, owner)");

  // Bad input: the reason beside the field, nothing connected.
  await page.getByLabel("Display number").fill("call me");
  await page.getByRole("button", { name: "Connect sandbox number" }).click();
  await page.locator("#displayPhoneNumber-error").getByText(/Digits only/).waitFor();
  await expectAccessible(page, "numbers (refused display number)");

  await page.getByLabel("Display number").fill("+15550006666");
  await page.getByRole("button", { name: "Connect sandbox number" }).click();
  await page.getByText("Sandbox number +15550006666 connected.").waitFor();
  assert.match(page.url(), /\/dashboard\/numbers\/[0-9a-f-]{36}$/);
  const numberId = page.url().split("/").pop();
  await page.getByText("Sends today").waitFor();
  await expectAccessible(page, "number page (health)");

  await page.getByRole("link", { name: "Numbers" }).first().click();
  const row = page.getByRole("row", { name: /\+15550006666/ });
  await row.getByText(String(numberId)).waitFor();
  await row.getByRole("button", { name: /Copy the id/ }).click();
  await row.getByRole("button", { name: "Copied" }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), numberId);
  await screenshot(page, "numbers-connected");

  assert.deepEqual(problems, []);
  await context.close();
}
