// Rich messages in the dashboard: a developer sends a document by link and reply buttons from a
// sandbox number's page (a refusal beside its field, naming the rule, then sent); the list and
// each kind's page (media, buttons, a list, location, contacts, a reaction) keep every box
// inside the screen at 1,280 px and 390 px, and no value over its label's column (a record's
// facts; on a phone, the list's message cell).
import assert from "node:assert/strict";
import { BASE_URL, createWorkspace, expectAccessible, screenshot } from "../harness.mjs";
import { acceptInvitation, sessionCookie, uniqueEmail } from "./common.mjs";

const USER = "5511999998888";
const LONG =
  "https://cdn.example.com/" + "a-very-long-path-segment/".repeat(8) + "parcel.png?signature=" + "x".repeat(80);

/**
 * A v2 send, paced as the API asks: a number sends 2 a second, so a 429 is waited out (its
 * Retry-After) and sent again with the same key, at most 10 times.
 * @param {string} key @param {unknown} body
 */
async function sendV2(key, body) {
  const idempotencyKey = crypto.randomUUID();
  for (let attempt = 0; attempt < 10; attempt++) {
    const res = await fetch(`${BASE_URL}/api/v2/messages`, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${key}`,
        "Content-Type": "application/json",
        "Idempotency-Key": idempotencyKey,
      },
      body: JSON.stringify(body),
    });
    const json = await res.json();
    if (res.status === 429) {
      await new Promise((resolve) => setTimeout(resolve, Number(res.headers.get("retry-after") ?? "1") * 1000));
      continue;
    }
    assert.equal(res.status, 201, JSON.stringify(json));
    return /** @type {string} */ (json.jobId);
  }
  throw new Error("still rate limited after 10 tries");
}

/**
 * What sticks out of the screen, and every definition or cell whose value starts left of the end
 * of its label's column (a dd over its dt column; in a phone's card, a cell's content over the
 * cell's label).
 * @param {import("playwright-core").Page} page
 */
const spills = (page) =>
  page.evaluate(() => {
    const out = [];
    const width = window.innerWidth;
    if (document.documentElement.scrollWidth > width) out.push(`page ${document.documentElement.scrollWidth}px wide`);
    // A wide table scrolls in its own box; headings and words kept for screen readers only are clipped to nothing.
    const unseen = (/** @type {Element} */ e) =>
      e.closest(".table-wrap:not(.cards), .cards thead, .visually-hidden") !== null;
    for (const e of document.querySelectorAll("main *")) {
      const r = e.getBoundingClientRect();
      if (r.width === 0 || unseen(e)) continue;
      if (r.right > width + 1 || r.left < -1)
        out.push(`${e.tagName.toLowerCase()}.${e.className} [${Math.round(r.left)}, ${Math.round(r.right)}]`);
    }
    for (const dl of document.querySelectorAll("dl.facts")) {
      const dts = [...dl.children].filter((c) => c.tagName === "DT");
      const dds = [...dl.children].filter((c) => c.tagName === "DD");
      const sideBySide =
        dts.length > 0 && dds.length > 0 && dds[0].getBoundingClientRect().top < dts[0].getBoundingClientRect().bottom;
      if (!sideBySide) continue;
      const labels = Math.max(...dts.map((d) => d.getBoundingClientRect().right));
      for (const dd of dds)
        if (dd.getBoundingClientRect().left < labels - 1)
          out.push(`dd over its label column: ${dd.textContent?.slice(0, 40)}`);
    }
    // The cell this suite's kinds change: the message's text (the other cells are the list's own).
    for (const td of document.querySelectorAll(".cards td.preview[data-label]")) {
      // The label is the cell's ::before, laid out from the start of the cell's content box.
      const cell = getComputedStyle(td);
      const label = getComputedStyle(td, "::before");
      const left =
        td.getBoundingClientRect().left +
        parseFloat(cell.borderLeftWidth) +
        parseFloat(cell.paddingLeft) +
        parseFloat(label.marginLeft || "0") +
        parseFloat(label.width);
      const texts = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
      for (let t = texts.nextNode(); t; t = texts.nextNode()) {
        if (t.parentElement && unseen(t.parentElement)) continue;
        const range = document.createRange();
        range.selectNodeContents(t);
        for (const r of range.getClientRects())
          if (r.width > 0 && r.left < left - 1) out.push(`cell over its label: ${td.textContent?.slice(0, 40)}`);
      }
    }
    return out;
  });

/** @param {import("../harness.mjs").Harness} h */
export async function richMessagesFlow(h) {
  const { workspaceId, numberId } = await createWorkspace(h, "Acme Rich");
  const { key } = await h.admin("POST", `/workspaces/${workspaceId}/api-keys`, { name: "e2e" });
  // The user writes first: their window opens, and there is a message to react to.
  const inbound = await fetch(`${BASE_URL}/api/v1/sandbox/inbound`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify({ channelNumberId: numberId, from: USER, text: { body: "Hi, is my table booked?" } }),
  });
  assert.equal(inbound.status, 202);
  const { messageId } = await inbound.json();
  const base = { channelNumberId: numberId, to: USER };
  const sent = {
    image: await sendV2(key, { ...base, type: "image", image: { link: LONG, caption: "Your parcel ".repeat(30) } }),
    list: await sendV2(key, {
      ...base,
      type: "interactive",
      interactive: {
        type: "list",
        header: { type: "text", text: "Delivery options for order #1042" },
        body: "How should we ship it? ".repeat(10),
        footer: "Prices include taxes.",
        button: "Choose",
        sections: [
          {
            title: "Fast",
            rows: [
              { id: "express-next-day-delivery", title: "Express", description: "Next day, before noon, signed for" },
            ],
          },
          { title: "Cheap", rows: [{ id: "standard", title: "Standard" }] },
        ],
      },
    }),
    cta: await sendV2(key, {
      ...base,
      type: "interactive",
      interactive: { type: "cta_url", body: "Your parcel is on its way.", button: { text: "Track parcel", url: LONG } },
    }),
    location: await sendV2(key, {
      ...base,
      type: "location",
      location: {
        latitude: -23.5614,
        longitude: -46.6559,
        name: "Acme Store Paulista",
        address: "Av. Paulista, 1578, Bela Vista, São Paulo - SP, 01310-200",
      },
    }),
    contacts: await sendV2(key, {
      ...base,
      type: "contacts",
      contacts: [
        {
          name: { formattedName: "Ana Souza" },
          phones: [{ phone: "+55 11 99999-8888", type: "WORK" }],
          emails: [{ email: "ana.souza.customer-success@example.com" }],
          org: { company: "Acme" },
        },
      ],
    }),
    reaction: await sendV2(key, { ...base, type: "reaction", reaction: { messageId, emoji: "👍" } }),
  };

  const invitation = await h.admin("POST", `/workspaces/${workspaceId}/members`, {
    email: uniqueEmail("developer"),
    role: "developer",
  });
  const { context, page, problems } = await h.newPage();
  await acceptInvitation(page, invitation.invitationUrl);

  // A document by link from the number's page.
  await page.goto(`/dashboard/numbers/${numberId}`);
  const forms = page.getByRole("region", { name: "Send a test message" });
  await forms.getByText("Media by link", { exact: true }).click();
  await forms.getByLabel("Recipient").first().fill(USER);
  await forms.getByLabel("Type").selectOption("document");
  await forms.getByLabel("Link (https, public)").fill("https://cdn.example.com/i/1042.pdf");
  await forms.getByLabel("File name (document)").fill("invoice-1042.pdf");
  await forms.getByRole("button", { name: "Send the test" }).first().click();
  await page.getByText("Test document message queued.").waitFor();
  assert.match(page.url(), /\/dashboard\/messages\/[0-9a-f-]{36}$/);
  const documentPage = page.url();

  // Reply buttons: the same title twice is refused beside the second, naming the rule; then sent.
  await page.goto(`/dashboard/numbers/${numberId}`);
  await forms.getByText("Reply buttons", { exact: true }).click();
  const buttons = page.locator("form", { has: page.locator('input[name="form"][value="buttons"]') });
  await buttons.getByLabel("Recipient").fill(USER);
  await buttons.getByLabel("Body").fill("Your table for 4 is booked for Friday at 8 pm.");
  await buttons.getByLabel("Button 1 title").fill("Confirm");
  await buttons.getByLabel("Button 2 title").fill("Confirm");
  await buttons.getByRole("button", { name: "Send the test" }).click();
  await page.getByText(/is repeated\. \(rule: unique\)/).waitFor();
  await expectAccessible(page, "number page (refused test message)");
  await page.locator('input[name="button_2"]').fill("Reschedule");
  await page
    .locator("form", { has: page.locator('input[name="form"][value="buttons"]') })
    .getByRole("button", { name: "Send the test" })
    .click();
  await page.getByText("Test interactive message queued.").waitFor();
  const buttonsPage = page.url();

  const pages = [
    ["list", "/dashboard/messages"],
    ["document", documentPage],
    ["buttons", buttonsPage],
    ...Object.entries(sent).map(([name, id]) => [name, `/dashboard/messages/${id}`]),
  ];
  const phone = await h.newPage({ width: 390, height: 844 });
  await phone.context.addCookies([await sessionCookie(context)]);
  for (const [name, path] of pages) {
    /** @type {Array<[string, typeof page]>} */
    const sizes = [
      ["desktop", page],
      ["phone", phone.page],
    ];
    for (const [size, p] of sizes) {
      await p.goto(path);
      await p.locator("main h1").waitFor();
      assert.deepEqual(await spills(p), [], `${name} at ${size}`);
    }
    await expectAccessible(phone.page, `${name} (phone)`);
  }
  await phone.page.goto(`/dashboard/messages/${sent.list}`);
  await phone.page.getByText("express-next-day-delivery").waitFor();
  await screenshot(phone.page, "rich-message-list-phone");
  await page.goto(`/dashboard/messages/${sent.reaction}`);
  await page.getByRole("link", { name: messageId }).click();
  await page.getByText("Hi, is my table booked?").waitFor();
  await page.goto("/dashboard/messages");
  await screenshot(page, "rich-messages-desktop");

  assert.deepEqual([...problems, ...phone.problems], []);
  await phone.context.close();
  await context.close();
}
