// A key created in the dashboard sends a message through the API → it appears
// in the message list → its page shows `sent` (the sandbox number delivers
// within a second) with its timeline; an inbound message from the sandbox is
// listed too; the filters narrow the list; the overview's chart counts the send.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { BASE_URL, createWorkspace, expectAccessible, screenshot, waitFor } from "../harness.mjs";
import { acceptInvitation, sessionCookie, uniqueEmail } from "./common.mjs";

/** @param {string} path @param {string} key @param {unknown} body @param {Record<string, string>} [headers] */
const post = (path, key, body, headers = {}) =>
  fetch(`${BASE_URL}/api/v1${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

/** @param {import("../harness.mjs").Harness} h */
export async function messagesFlow(h) {
  const { workspaceId, numberId } = await createWorkspace(h, "Acme Shipping");
  const invitation = await h.admin("POST", `/workspaces/${workspaceId}/members`, {
    email: uniqueEmail("dev"),
    role: "developer",
  });
  const { context, page, problems } = await h.newPage();
  await acceptInvitation(page, invitation.invitationUrl);

  // A key from the dashboard.
  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByLabel("Name").fill("Order notifications");
  await page.getByRole("button", { name: "Create key" }).click();
  const key = await page.locator("#secret-value").inputValue();

  // A user writes in, then we answer through the API.
  const inbound = await post("/sandbox/inbound", key, {
    channelNumberId: numberId,
    from: "5511977776666",
    text: { body: "Hi! Where is my order #1042?" },
  });
  assert.equal(inbound.status, 202, await inbound.clone().text());
  const sent = await post(
    "/messages",
    key,
    {
      channelNumberId: numberId,
      to: "5511977776666",
      text: { body: "Your order #1042 has shipped and arrives on Thursday." },
    },
    { "Idempotency-Key": randomUUID() },
  );
  assert.equal(sent.status, 201);
  const { jobId } = await sent.json();
  // And one the operator refuses (a sandbox number that simulates a closed customer-service window).
  const refused = await post(
    "/messages",
    key,
    { channelNumberId: numberId, to: "15550131047", text: { body: "Following up on your return." } },
    { "Idempotency-Key": randomUUID() },
  );
  assert.equal(refused.status, 201);
  const { jobId: failedId } = await refused.json();

  await page.getByRole("link", { name: "Messages", exact: true }).click();
  await page.waitForURL(`${BASE_URL}/dashboard/messages`);
  await page.getByRole("heading", { name: "Messages", level: 1 }).waitFor();
  // The sandbox reports within seconds: reload until both outcomes show.
  await waitFor(
    "the sent and the failed message in the list",
    async () => {
      await page.reload();
      const sentRow = page.getByRole("row", { name: /out sent .*5511977776666 .*order #1042 has shipped/ });
      const failedRow = page.getByRole("row", { name: /out failed service_window_closed .*15550131047/ });
      return (await sentRow.count()) === 1 && (await failedRow.count()) === 1;
    },
    { timeoutMs: 20_000, intervalMs: 500 },
  );
  await page.getByRole("row", { name: /in received .*5511977776666 .*Where is my order/ }).waitFor();
  await expectAccessible(page, "messages");
  await screenshot(page, "messages", { readme: true });

  // Filters are a GET form: the URL says what is shown.
  await page.getByLabel("Direction").selectOption("inbound");
  await page.getByRole("button", { name: "Apply filters" }).click();
  await page.waitForURL(/\/dashboard\/messages\?direction=inbound&/);
  assert.equal(await page.getByRole("row", { name: /in received/ }).count(), 1);
  assert.equal(await page.getByRole("row", { name: /out / }).count(), 0);
  // A filter the API refuses is explained beside its field.
  await page.getByLabel("Recipient (to)").fill("not a number");
  await page.getByRole("button", { name: "Apply filters" }).click();
  await page.locator("#to-error").getByText("to must be E.164 digits without '+', or the user id").waitFor();
  await expectAccessible(page, "messages (bad filter)");
  await page.getByRole("link", { name: "Clear" }).click();

  // The message's own page: sent, with its timeline.
  await page
    .getByRole("row", { name: /out sent/ })
    .getByRole("link")
    .first()
    .click();
  await page.waitForURL(`${BASE_URL}/dashboard/messages/${jobId}`);
  await page.getByRole("heading", { name: "Message to 5511977776666" }).waitFor();
  const status = await page.locator("dt:text-is('Status') + dd").textContent();
  assert.match(status ?? "", /^sent/);
  // Then the sandbox reports delivered and read, as the operator would, seconds later.
  const timeline = await page.locator("ol.timeline li strong").allTextContents();
  assert.deepEqual(timeline.slice(0, 3), ["queued", "processing", "sent"]);
  assert.ok(
    timeline.slice(3).every((s) => s === "delivered" || s === "read"),
    timeline.join(", "),
  );
  await expectAccessible(page, "message (sent)");
  await screenshot(page, "message-sent");

  await page.goto(`/dashboard/messages/${failedId}`);
  await page.getByRole("heading", { name: "Upstream error" }).waitFor();
  assert.equal(await page.locator("dt:text-is('Operator code') + dd").textContent(), "131047");
  await expectAccessible(page, "message (failed)");
  await screenshot(page, "message-failed");

  // The overview's chart counts today's two sends.
  await page.getByRole("link", { name: "Overview" }).click();
  const summary = await page.locator("#sends-desc").textContent();
  assert.match(summary ?? "", /: 2 sends so far, on 1 day;/);
  await expectAccessible(page, "overview with chart");
  await screenshot(page, "overview", { readme: true });
  await page.getByText("Sends per day as a table").click();
  await page.getByRole("row", { name: new RegExp(`^${new Date().toISOString().slice(0, 10)} 2 `) }).waitFor();
  await expectAccessible(page, "overview with the chart's table");

  // A phone-sized screen in dark mode: nothing scrolls sideways, and every list is a stack of cards
  // whose every cell (recipient and text included) is on the screen.
  const phone = await h.newPage({ width: 390, height: 844 }, "dark");
  await phone.context.addCookies([await sessionCookie(context)]);
  const lists = ["/dashboard/messages", "/dashboard/numbers", "/dashboard/webhooks", "/dashboard/api-keys"];
  for (const path of lists) {
    await phone.page.goto(path);
    const cells = await phone.page.evaluate(() =>
      [...document.querySelectorAll(".table-wrap td")].map((td) => ({
        label: td.getAttribute("data-label"),
        text: (td.textContent ?? "").trim().slice(0, 40),
        right: td.getBoundingClientRect().right,
      })),
    );
    assert.ok(cells.length > 0, `${path} lists something`);
    const off = cells.filter((c) => c.right > 390 + 1);
    assert.deepEqual(off, [], `every cell of ${path} is on a 390 px screen`);
    if (path === "/dashboard/messages") {
      const row = phone.page.locator(".table-wrap tr", { hasText: "order #1042 has shipped" });
      await row.getByText("5511977776666").waitFor();
      assert.ok(await row.getByText("order #1042 has shipped").isVisible());
      assert.ok(
        cells.some((c) => c.label === "To" || c.label === "Contact"),
        `labelled cells: ${[...new Set(cells.map((c) => c.label))].join(", ")}`,
      );
    }
  }
  for (const [path, name] of [
    ["/dashboard/messages", "messages"],
    [`/dashboard/messages/${jobId}`, "message"],
    ["/dashboard", "overview"],
  ]) {
    await phone.page.goto(path);
    const overflow = await phone.page.evaluate(() => ({
      wider: document.documentElement.scrollWidth > window.innerWidth,
      // For the failure message: what sticks out (a wide table's cells do, inside their scrolling box).
      sticking: [...document.querySelectorAll("body *")]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
        .map((e) => `${e.tagName.toLowerCase()}${e.className ? `.${e.className}` : ""}`)
        .slice(0, 20),
    }));
    assert.equal(
      overflow.wider,
      false,
      `no sideways scrolling of ${path} at 390 px; sticking out: ${overflow.sticking.join(", ")}`,
    );
    await expectAccessible(phone.page, `${path} (390 px, dark)`);
    await screenshot(phone.page, `${name}-390px-dark`);
  }

  assert.deepEqual([...problems, ...phone.problems], []);
  await phone.context.close();
  await context.close();
}
