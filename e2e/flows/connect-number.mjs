// An owner connects a sandbox number on the Numbers page → lands on its page
// with its health → the list shows its id with a copy button that copies it →
// a refused display number is explained beside the field.
import assert from "node:assert/strict";
import { BASE_URL, expectAccessible, screenshot } from "../harness.mjs";
import { acceptInvitation, sessionCookie, sidewaysOverflow, uniqueEmail } from "./common.mjs";

/** @param {import("../harness.mjs").Harness} h */
export async function connectNumberFlow(h) {
  const workspace = await h.admin("POST", "/workspaces", { name: "Acme Connect", plan: "pro" });
  const invitation = await h.admin("POST", `/workspaces/${workspace.id}/members`, {
    email: uniqueEmail("owner"),
    role: "owner",
  });
  const { context, page, problems } = await h.newPage();
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: BASE_URL });
  await acceptInvitation(page, invitation.invitationUrl);

  await page.getByRole("link", { name: "Numbers" }).click();
  await page.getByRole("heading", { name: "Connect a number" }).waitFor();
  await expectAccessible(page, "numbers (empty, owner)");

  // Bad input: the reason beside the field, nothing connected.
  await page.getByLabel("Display number").fill("call me");
  await page.getByRole("button", { name: "Connect sandbox number" }).click();
  await page
    .locator("#displayPhoneNumber-error")
    .getByText(/Digits only/)
    .waitFor();
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

  // The owner's own lists at phone width (the other list pages are checked in the messages flow):
  // stacked cards, every cell on a 390 px screen.
  const phone = await h.newPage({ width: 390, height: 844 });
  await phone.context.addCookies([await sessionCookie(context)]);
  for (const path of ["/dashboard/members", "/dashboard/audit"]) {
    await phone.page.goto(path);
    const cells = await phone.page.evaluate(() =>
      [...document.querySelectorAll(".table-wrap td")].map((td) => ({
        text: (td.textContent ?? "").trim().slice(0, 40),
        right: td.getBoundingClientRect().right,
      })),
    );
    assert.ok(cells.length > 0, `${path} lists something`);
    assert.deepEqual(
      cells.filter((c) => c.right > 390 + 1),
      [],
      `every cell of ${path} is on a 390 px screen`,
    );
    const overflow = await sidewaysOverflow(phone.page);
    assert.equal(
      overflow.wider,
      false,
      `no sideways scrolling of ${path} at 390 px; sticking out: ${overflow.sticking.join(", ")}`,
    );
  }
  assert.deepEqual([...problems, ...phone.problems], []);
  await phone.context.close();
  await context.close();
}
