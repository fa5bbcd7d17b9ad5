// Invitation link → set password → sign in → create a key → it is shown once →
// it answers GET /api/v1/me → revoke → 401 within the documented 5 seconds.
import assert from "node:assert/strict";
import { BASE_URL, createWorkspace, expectAccessible, screenshot, waitFor } from "../harness.mjs";
import { acceptInvitation, callApi, sessionCookie, sidewaysOverflow, signIn, uniqueEmail } from "./common.mjs";

/** @param {import("../harness.mjs").Harness} h */
export async function apiKeyFlow(h) {
  const { workspaceId } = await createWorkspace(h, "Acme Shipping");
  const email = uniqueEmail("owner");
  const invitation = await h.admin("POST", `/workspaces/${workspaceId}/members`, { email, role: "owner" });
  assert.ok(invitation.invitationUrl.startsWith(`${BASE_URL}/dashboard/invitations/`));

  const { context, page, problems } = await h.newPage();
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: BASE_URL });
  await acceptInvitation(page, invitation.invitationUrl);
  await sessionCookie(context);

  // The link worked once.
  const again = await page.goto(invitation.invitationUrl);
  assert.equal(again?.status(), 404);

  // Sign out, then in with the new password.
  await page.goto("/dashboard");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL(`${BASE_URL}/dashboard/sign-in`);
  await signIn(page, email);
  await expectAccessible(page, "overview");
  await screenshot(page, "overview-new-workspace");

  // Create a key: the full key is on the page after the redirect, once.
  await page.getByRole("link", { name: "API keys" }).click();
  await expectAccessible(page, "api keys");
  await page.getByLabel("Name").fill("Checkout service");
  await page.getByRole("button", { name: "Create key" }).click();
  await page.waitForURL(`${BASE_URL}/dashboard/api-keys`);
  const key = await page.locator("#secret-value").inputValue();
  assert.match(key, /^msg_live_[A-Za-z0-9_-]{43}$/);
  await page.getByText("you won't see it again").waitFor();
  await page.getByRole("button", { name: "Copy" }).click();
  await page.getByRole("button", { name: "Copied" }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), key);
  await expectAccessible(page, "api key created");
  await screenshot(page, "api-key-created", { readme: true });

  await page.reload();
  assert.equal(await page.locator("#secret-value").count(), 0);
  assert.ok(!(await page.content()).includes(key), "the key is not shown a second time");
  await page.getByRole("cell", { name: `msg_live_…${key.slice(-4)}` }).waitFor();

  const me = await callApi("/me", key);
  assert.equal(me.status, 200);
  assert.equal((await me.json()).workspace.id, workspaceId);

  // Revoke through the confirmation dialog (JavaScript on: one step).
  page.once("dialog", (dialog) => dialog.accept());
  await page
    .getByRole("row", { name: /Checkout service/ })
    .getByRole("button", { name: "Revoke" })
    .click();
  await page.getByText(/revoked; it stops working within 5 seconds/).waitFor();
  await waitFor("the revoked key to be refused", async () => (await callApi("/me", key)).status === 401, {
    timeoutMs: 10_000,
  });

  // The static files carry their own security headers (public/_headers).
  const css = await fetch(`${BASE_URL}/static/dashboard/dashboard.css`);
  assert.equal(css.status, 200);
  assert.equal(css.headers.get("x-content-type-options"), "nosniff");

  // A phone-sized screen in dark mode gets the same page, usable (axe checks the dark palette's contrast).
  const phone = await h.newPage({ width: 375, height: 740 }, "dark");
  await phone.context.addCookies([await sessionCookie(context)]);
  await phone.page.goto("/dashboard/api-keys");
  const overflow = await sidewaysOverflow(phone.page);
  assert.equal(
    overflow.wider,
    false,
    `no sideways scrolling of the page at 375 px; sticking out: ${overflow.sticking.join(", ")}`,
  );
  await expectAccessible(phone.page, "api keys (375 px, dark)");
  await screenshot(phone.page, "api-keys-375px-dark");
  await phone.page.goto("/dashboard");
  await expectAccessible(phone.page, "overview (375 px, dark)");

  assert.deepEqual([...problems, ...phone.problems], []);
  await phone.context.close();
  await context.close();
}
