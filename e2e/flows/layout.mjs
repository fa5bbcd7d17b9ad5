// Every list of a busy workspace, measured in the browser: on a 390 px phone each cell's label
// column (its column's heading) stays clear of the cell's content, and nothing leaves the screen;
// on a 1,280 px desktop the audit log, and every other list, fits without scrolling its columns
// out of sight.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { BASE_URL, RECEIVER_URL, createWorkspace, screenshot, waitFor } from "../harness.mjs";
import { acceptInvitation, sessionCookie, uniqueEmail } from "./common.mjs";

/** @typedef {import("playwright-core").Page} Page */

/**
 * On the stacked layout (below 600 px), every piece of every labelled cell: its text runs, images,
 * buttons and fields, each with where its box starts and ends, and where the cell's label column ends.
 * A piece that starts left of that edge spills into the label column; one that ends past the
 * screen's right edge is cut off.
 * @param {Page} page
 */
export const cellPieces = (page) =>
  page.evaluate(() => {
    const width = window.innerWidth;
    /** @type {{ label: string, text: string, left: number, right: number, labelRight: number }[]} */
    const pieces = [];
    for (const td of document.querySelectorAll(".cards td[data-label]")) {
      if (!(td instanceof HTMLElement) || !td.dataset.label || td.getClientRects().length === 0) continue;
      const box = td.getBoundingClientRect();
      // The label is the cell's ::before, laid out from the start of the cell's content box.
      const cell = getComputedStyle(td);
      const label = getComputedStyle(td, "::before");
      const labelRight =
        box.left +
        parseFloat(cell.borderLeftWidth) +
        parseFloat(cell.paddingLeft) +
        parseFloat(label.marginLeft || "0") +
        parseFloat(label.width);
      const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_ELEMENT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        /** @type {DOMRect[]} */
        let rects;
        if (node.nodeType === Node.TEXT_NODE) {
          if (!(node.textContent ?? "").trim()) continue;
          const range = document.createRange();
          range.selectNodeContents(node);
          rects = [...range.getClientRects()];
        } else if (node instanceof HTMLElement && ["IMG", "BUTTON", "INPUT", "SELECT"].includes(node.tagName)) {
          if (node.hidden) continue;
          rects = [...node.getClientRects()];
        } else continue;
        // What shows of a piece: its box cut by the boxes that clip it (a visually hidden label shows nothing).
        const clips = [];
        for (let e = node.parentElement; e && e !== td.parentElement; e = e.parentElement) {
          const style = getComputedStyle(e);
          if (style.overflowX !== "visible" || style.overflowY !== "visible") clips.push(e.getBoundingClientRect());
        }
        for (const whole of rects) {
          const r = clips.reduce(
            (v, c) => {
              const left = Math.max(v.left, c.left);
              const right = Math.min(v.right, c.right);
              const top = Math.max(v.top, c.top);
              const bottom = Math.min(v.bottom, c.bottom);
              return { left, right, width: Math.max(0, right - left), height: Math.max(0, bottom - top), top, bottom };
            },
            {
              left: whole.left,
              right: whole.right,
              width: whole.width,
              height: whole.height,
              top: whole.top,
              bottom: whole.bottom,
            },
          );
          if (r.width <= 1 || r.height <= 1) continue;
          pieces.push({
            label: td.dataset.label,
            text: (node.textContent || (node instanceof HTMLElement ? node.tagName : "")).trim().slice(0, 40),
            left: Math.round(r.left),
            right: Math.round(r.right),
            labelRight: Math.round(labelRight),
          });
        }
      }
    }
    return {
      width,
      pieces,
      spilled: pieces.filter((p) => p.left < p.labelRight),
      cut: pieces.filter((p) => p.right > width + 1),
    };
  });

/**
 * Each list's box on a wide screen: whether its table is wider than the box (columns scrolled
 * out of sight), and which headings end past the box's right edge.
 * @param {Page} page
 */
export const listFits = (page) =>
  page.evaluate(() =>
    [...document.querySelectorAll(".table-wrap")].map((wrap) => {
      const box = wrap.getBoundingClientRect();
      return {
        list: wrap.getAttribute("aria-label"),
        scrollWidth: wrap.scrollWidth,
        clientWidth: wrap.clientWidth,
        columns: [...wrap.querySelectorAll("thead th")].map(
          (th) => `${(th.textContent ?? "").trim()} ${Math.round(th.getBoundingClientRect().width)}`,
        ),
        clipped: [...wrap.querySelectorAll("th, td")]
          .filter((cell) => cell.getBoundingClientRect().right > box.right + 1)
          .map((cell) => (cell.textContent ?? "").trim().slice(0, 30)),
      };
    }),
  );

/**
 * A POST of the API; a send refused by the number's 2-a-second limit goes again after its
 * Retry-After, under the same Idempotency-Key (at most 3 times).
 * @param {string} path @param {string} key @param {unknown} body @param {Record<string, string>} [headers]
 */
const post = async (path, key, body, headers = {}) => {
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(path.startsWith("/api/") ? `${BASE_URL}${path}` : `${BASE_URL}/api/v1${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    const retryAfter = Number(res.headers.get("retry-after"));
    if (res.status === 429 && retryAfter > 0 && attempt < 3) {
      await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
      continue;
    }
    assert.ok(res.status < 300, `${path}: ${res.status} ${text}`);
    return JSON.parse(text);
  }
};

/** @param {import("../harness.mjs").Harness} h */
export async function layoutFlow(h) {
  const { workspaceId, numberId } = await createWorkspace(h, "Acme Shipping and Logistics International");
  const invitation = await h.admin("POST", `/workspaces/${workspaceId}/members`, {
    email: uniqueEmail("owner"),
    role: "owner",
  });
  // A second member, invited with a long address: the members list and the audit log show it.
  await h.admin("POST", `/workspaces/${workspaceId}/members`, {
    email: `${"operations-team-lead".repeat(2)}-${randomUUID().slice(0, 8)}@customer-support.example.com`,
    role: "developer",
  });
  const { context, page, problems } = await h.newPage();
  await acceptInvitation(page, invitation.invitationUrl);

  // A key (API keys, audit), a webhook with a delivery (webhooks, delivery log, audit), messages both ways.
  await page.goto("/dashboard/api-keys");
  await page.getByLabel("Name").fill("Order notifications from the warehouse system");
  await page.getByRole("button", { name: "Create key" }).click();
  const key = await page.locator("#secret-value").inputValue();
  await page.goto(`/dashboard/webhooks/${numberId}`);
  await page.getByLabel("Endpoint URL").fill(`${RECEIVER_URL}/a-rather-long-path/for-the-order-events?tenant=acme`);
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Webhook saved.").waitFor();
  await page.getByRole("button", { name: "Send test event" }).click();
  await page.getByText(/Test event queued/).waitFor();
  await waitFor("the test event in the delivery log", async () => {
    await page.reload();
    return (await page.getByRole("row", { name: /webhook\.test/ }).count()) === 1;
  });
  await post("/sandbox/inbound", key, {
    channelNumberId: numberId,
    from: "5511977776666",
    text: { body: "Hi! Where is my order #1042? It was supposed to arrive yesterday afternoon." },
  });
  const { jobId } = await post(
    "/messages",
    key,
    {
      channelNumberId: numberId,
      to: "5511977776666",
      text: { body: "Your order #1042 has shipped and arrives on Thursday between 9:00 and 12:00." },
    },
    { "Idempotency-Key": randomUUID() },
  );
  // A rich message (v2), listed by its summary.
  await post(
    "/api/v2/messages",
    key,
    {
      channelNumberId: numberId,
      to: "5511977776666",
      type: "image",
      image: {
        link: "https://cdn.example.com/parcels/1042/photo-of-the-parcel-at-the-door.png",
        caption: "Your parcel #1042 was left at the door, as you asked; here is the photo the courier took.",
      },
    },
    { "Idempotency-Key": randomUUID() },
  );
  // One the operator refuses, for a cell with a status and its error code.
  await post(
    "/messages",
    key,
    { channelNumberId: numberId, to: "15550131047", text: { body: "Following up on your return." } },
    { "Idempotency-Key": randomUUID() },
  );
  await page.goto("/dashboard/messages");
  await waitFor("the refused message's outcome in the list", async () => {
    await page.reload();
    return (await page.getByRole("row", { name: /out failed service_window_closed/ }).count()) === 1;
  });

  const pages = [
    "/dashboard/messages",
    `/dashboard/messages/${jobId}`,
    "/dashboard/numbers",
    "/dashboard/webhooks",
    `/dashboard/webhooks/${numberId}`,
    "/dashboard/api-keys",
    "/dashboard/members",
    "/dashboard/audit",
  ];

  const phone = await h.newPage({ width: 390, height: 844 });
  await phone.context.addCookies([await sessionCookie(context)]);
  for (const path of pages) {
    await phone.page.goto(path);
    const { pieces, spilled, cut } = await cellPieces(phone.page);
    assert.ok(pieces.length > 0, `${path} lists something at 390 px`);
    assert.deepEqual(spilled, [], `no cell of ${path} spills into its label column at 390 px`);
    assert.deepEqual(cut, [], `every cell of ${path} is on a 390 px screen`);
  }
  await phone.page.goto("/dashboard/audit");
  await screenshot(phone.page, "audit-390px");

  for (const path of pages) {
    await page.goto(path);
    for (const list of await listFits(page)) {
      assert.deepEqual(
        { scrolls: list.scrollWidth > list.clientWidth, clipped: list.clipped },
        { scrolls: false, clipped: [] },
        `${list.list} of ${path} fits 1,280 px (${list.scrollWidth} px of table in ${list.clientWidth} px: ${list.columns.join(", ")})`,
      );
    }
  }
  await page.goto("/dashboard/audit");
  assert.ok((await page.locator(".table-wrap tbody tr").count()) >= 4, "the audit log has entries");
  await screenshot(page, "audit-1280px");

  assert.deepEqual([...problems, ...phone.problems], []);
  await phone.context.close();
  await context.close();
}
