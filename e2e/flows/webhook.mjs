// Configure a webhook to a loopback receiver (local-development URL mode) →
// the secret is shown once → send a test event → it arrives signed and the
// delivery log shows it delivered.
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { BASE_URL, RECEIVER_URL, createWorkspace, expectAccessible, screenshot, waitFor } from "../harness.mjs";
import { acceptInvitation, uniqueEmail } from "./common.mjs";

/** @param {import("../harness.mjs").Harness} h */
export async function webhookFlow(h) {
  const { workspaceId, numberId } = await createWorkspace(h, "Acme Shipping");
  const invitation = await h.admin("POST", `/workspaces/${workspaceId}/members`, {
    email: uniqueEmail("dev"),
    role: "developer",
  });
  const { context, page, problems } = await h.newPage();
  await acceptInvitation(page, invitation.invitationUrl);

  await page.getByRole("link", { name: "Webhooks" }).click();
  await expectAccessible(page, "webhooks");
  await page.getByRole("link", { name: "15550001234" }).click();
  await page.waitForURL(`${BASE_URL}/dashboard/webhooks/${numberId}`);
  await expectAccessible(page, "webhook (not configured)");

  // A URL the SSRF rules refuse gets its reason beside the field.
  await page.getByLabel("Endpoint URL").fill("https://10.0.0.1/hook");
  await page.getByRole("button", { name: "Save" }).click();
  await page
    .locator("#url-error")
    .getByText(/not allowed/)
    .waitFor();
  await expectAccessible(page, "webhook (refused URL)");

  await page.getByLabel("Endpoint URL").fill(RECEIVER_URL);
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Webhook saved.").waitFor();
  const secret = await page.locator("#secret-value").inputValue();
  assert.match(secret, /^whsec_/);

  const before = h.receiver.received.length;
  await page.getByRole("button", { name: "Send test event" }).click();
  await page.getByText(/Test event queued/).waitFor();
  const request = await waitFor("the test event at the receiver", () =>
    h.receiver.received.slice(before).find((r) => r.body.includes("webhook.test")),
  );
  /** @param {string} name */
  const header = (name) => String(request.headers[name] ?? "");
  const verified = /** @type {{ type: string }} */ (
    new Webhook(secret).verify(request.body, {
      "webhook-id": header("webhook-id"),
      "webhook-timestamp": header("webhook-timestamp"),
      "webhook-signature": header("webhook-signature"),
    })
  );
  assert.equal(verified.type, "webhook.test");

  // The log row appears once the consumer has written it: reload until it does.
  await waitFor("the delivery in the log", async () => {
    await page.reload();
    return (await page.getByRole("row", { name: /webhook\.test.*delivered.*204/s }).count()) === 1;
  });
  await page.getByRole("row", { name: new RegExp(header("webhook-id")) }).waitFor();
  await expectAccessible(page, "webhook delivery log");
  await screenshot(page, "webhook-deliveries", { readme: true });

  assert.deepEqual(problems, []);
  await context.close();
}
