// A developer opens a sandbox number's Templates page from the number's page →
// copies the JSON of a template → a test send with a too-long header value is
// refused beside that field → corrected, it lands on the message's page → the
// page has no sideways scrolling at 390 px (the JSON and the forms open).
import assert from "node:assert/strict";
import { BASE_URL, createWorkspace, expectAccessible, screenshot } from "../harness.mjs";
import { acceptInvitation, sessionCookie, uniqueEmail } from "./common.mjs";

/** @param {import("../harness.mjs").Harness} h */
export async function templatesFlow(h) {
  const { workspaceId, numberId } = await createWorkspace(h, "Acme Templates");
  const invitation = await h.admin("POST", `/workspaces/${workspaceId}/members`, {
    email: uniqueEmail("developer"),
    role: "developer",
  });
  const { context, page, problems } = await h.newPage();
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: BASE_URL });
  await acceptInvitation(page, invitation.invitationUrl);

  await page.goto(`/dashboard/numbers/${numberId}`);
  await page.getByRole("link", { name: "Templates of this number" }).click();
  await page.getByRole("heading", { name: /^Templates of / }).waitFor();
  const card = page.getByRole("article", { name: /order_update \(en_US\)/ });
  await card.getByText("APPROVED", { exact: true }).waitFor();
  await page
    .getByRole("article", { name: /spring_sale/ })
    .getByText("PAUSED", { exact: true })
    .waitFor();
  await expectAccessible(page, "templates");

  // The exact JSON, copied with its button.
  await card.getByText("JSON to send it").click();
  await card.getByRole("button", { name: /Copy the JSON of order_update/ }).click();
  const copied = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
  assert.equal(copied.channelNumberId, numberId);
  assert.deepEqual(copied.template.parameters.body, ["value of {{1}}", "value of {{2}}", "value of {{3}}"]);

  // A test send: refused beside the header field, then sent.
  await card.getByText("Send a test").click();
  await card.getByLabel("Recipient").fill("5511955554444");
  await card.getByLabel("Header {{1}}").fill("x".repeat(61));
  await card.getByLabel("Body {{1}}").fill("Ana");
  await card.getByLabel("Body {{2}}").fill("#1042");
  await card.getByLabel("Body {{3}}").fill("Friday");
  await card.getByLabel("Button 0 URL {{1}}").fill("1042");
  await card.getByRole("button", { name: "Send the test" }).click();
  const refused = page.getByRole("article", { name: /order_update \(en_US\)/ });
  await refused.getByText(/at most 60 characters/).waitFor();
  assert.equal(await refused.getByLabel("Body {{1}}").inputValue(), "Ana");
  await expectAccessible(page, "templates (refused test)");
  await screenshot(page, "templates-refused");

  await refused.getByLabel("Header {{1}}").fill("#1042");
  await refused.getByRole("button", { name: "Send the test" }).click();
  await page.getByText("Test of order_update (en_US) queued.").waitFor();
  assert.match(page.url(), /\/dashboard\/messages\/[0-9a-f-]{36}$/);
  await page.getByText("Hi Ana, your order #1042 has shipped and arrives on Friday.").waitFor();

  // Phone width: nothing wider than the screen, with every details element open.
  const phone = await h.newPage({ width: 390, height: 844 });
  await phone.context.addCookies([await sessionCookie(context)]);
  await phone.page.goto(`/dashboard/numbers/${numberId}/templates`);
  await phone.page.evaluate(() => {
    for (const d of document.querySelectorAll("details")) d.open = true;
  });
  assert.equal(
    await phone.page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth),
    false,
    "no sideways scrolling of the Templates page at 390 px",
  );
  await expectAccessible(phone.page, "templates (phone)");
  await screenshot(phone.page, "templates-phone");

  assert.deepEqual([...problems, ...phone.problems], []);
  await phone.context.close();
  await context.close();
}
