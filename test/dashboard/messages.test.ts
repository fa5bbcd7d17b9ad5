import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { workspaceStub } from "../../src/durable-objects/stubs";
import { SCAN_BUDGET } from "../../src/durable-objects/workspace/message-queries";
import { slotOf } from "../../src/durable-objects/workspace/day-tables";
import { SANDBOX_MAGIC_NUMBERS } from "../../src/operator/sandbox";
import { hmacSha256, toHex } from "../../src/lib/crypto";
import { api, call, json } from "../helpers/http";
import { connectSandboxNumber, createTenant, markTestContacts, TEST_CONTACT_2 } from "../helpers/fixtures";
import { connectLiveNumber, operatorError } from "../helpers/operator";
import { mediaLookupUrl } from "../helpers/operator-media";
import { toMessageView } from "../../src/messages/record";
import { send, textMessage } from "../helpers/send";
import { messageSeeder } from "../helpers/seed-messages";
import { signedInMember, type Member } from "../helpers/dashboard";
import { answers, mockNetwork, mockNetworkPerTest } from "../helpers/webhook-net";
import { fakeClockPerTest } from "../helpers/clock";
import { seedInbound, seedStorage } from "../fixtures/bulk-rows";

// The messages pages read the workspace object directly (as GET /messages
// does); messages are seeded through the real API and the sandbox, with a
// controlled clock so that every message has its own second.

const clock = fakeClockPerTest(Date.UTC(2046, 2, 1, 9), (t) => t + 3 * 24 * 3_600_000);

const SCRIPT_TAGS = /<script/gi;
const scripts = (html: string) => html.match(SCRIPT_TAGS)?.length ?? 0;

const { sendAt, inbound, drain } = messageSeeder((ms) => clock.advance(ms));

/** A workspace with two numbers and messages of every kind; a viewer signed in last (sessions follow the clock). */
async function world() {
  const t = await createTenant();
  const b = await connectSandboxNumber(t.workspaceId, "15550009999");
  await markTestContacts(b, TEST_CONTACT_2);
  const m1 = await sendAt(t, t.numberId, "5511000000001", "one");
  const m2 = await sendAt(t, t.numberId, SANDBOX_MAGIC_NUMBERS.windowClosed, "two");
  await drain(t.numberId);
  const m3 = await sendAt(t, t.numberId, "5511000000001", "three"); // stays queued
  const m4 = await sendAt(t, b, "5511000000001", "four");
  const m5 = await sendAt(t, b, SANDBOX_MAGIC_NUMBERS.timeout, "five"); // the operator's answer is lost
  await drain(b);
  const i1 = await inbound(t, t.numberId, "5511977770001", "hello");
  const i2 = await inbound(t, b, "5511977770002", "hi");
  const viewer = await signedInMember(t.workspaceId, "viewer");
  return { t, a: t.numberId, b, m1, m2, m3, m4, m5, i1, i2, viewer };
}

const MESSAGE_LINK = /href="\/dashboard\/messages\/([0-9a-f-]{36})"/g;
/** The messages a list page shows, in order. */
const listedIds = (html: string) => [...html.matchAll(MESSAGE_LINK)].map((m) => m[1]);
/** The "Older" link of a list page, unescaped, or null. */
const olderLink = (html: string) => {
  const href = /<a href="([^"]+)" rel="next">Older<\/a>/.exec(html)?.[1];
  return href ? href.replaceAll("&amp;", "&") : null;
};

async function page(member: Member, path: string, status = 200): Promise<string> {
  const res = await member.browser.get(path);
  const html = await res.text();
  expect(res.status, `${path}\n${html}`).toBe(status);
  return html;
}

describe("messages list", () => {
  it("lists outbound and inbound messages newest first; each filter of the form narrows it as the API does", async () => {
    const w = await world();
    const list = (query = "") => page(w.viewer, `/dashboard/messages${query}`).then(listedIds);
    expect(await list()).toEqual([w.i2, w.i1, w.m5, w.m4, w.m3, w.m2, w.m1]);
    // The form sends every field, empty ones included.
    expect(await list("?direction=&status=&channelNumberId=&to=&from=&createdAfter=&createdBefore=&limit=50")).toEqual([
      w.i2,
      w.i1,
      w.m5,
      w.m4,
      w.m3,
      w.m2,
      w.m1,
    ]);
    expect(await list("?direction=inbound")).toEqual([w.i2, w.i1]);
    expect(await list("?direction=outbound")).toEqual([w.m5, w.m4, w.m3, w.m2, w.m1]);
    expect(await list("?status=failed")).toEqual([w.m2]);
    expect(await list("?status=queued")).toEqual([w.m3]);
    expect(await list("?status=received")).toEqual([w.i2, w.i1]);
    expect(await list(`?channelNumberId=${w.a}`)).toEqual([w.i1, w.m3, w.m2, w.m1]);
    expect(await list("?to=5511000000001")).toEqual([w.m4, w.m3, w.m1]);
    // Pasted as people write numbers.
    expect(await list(`?to=${encodeURIComponent("+55 (11) 0000-00001")}`)).toEqual([w.m4, w.m3, w.m1]);
    expect(await list("?from=5511977770001")).toEqual([w.i1]);
    expect(await list(`?to=5511000000001&channelNumberId=${w.b}`)).toEqual([w.m4]);

    // Date range as a datetime-local field sends it (UTC, no zone), or as ISO instants.
    const all = await json<{ data: { id: string; createdAt: string }[] }>(await api("/messages", w.t.key));
    const at = (id: string) => all.data.find((m) => m.id === id)!.createdAt;
    const local = (id: string) => at(id).slice(0, 19);
    expect(await list(`?createdAfter=${local(w.m2)}&createdBefore=${local(w.m5)}`)).toEqual([w.m4, w.m3]);
    expect(await list(`?createdAfter=${at(w.m5)}`)).toEqual([w.i2, w.i1]);
    expect(await list(`?createdBefore=${encodeURIComponent(at(w.m2))}`)).toEqual([w.m1]);

    // The form shows the filters it applied.
    const filtered = await page(
      w.viewer,
      `/dashboard/messages?direction=outbound&channelNumberId=${w.b.toUpperCase()}&createdAfter=${local(w.m2)}`,
    );
    expect(listedIds(filtered)).toEqual([w.m5, w.m4]);
    expect(filtered).toContain('<option value="outbound" selected="">Outbound (sent by you)</option>');
    expect(filtered).toContain(`<option value="${w.b}" selected="">15550009999</option>`);
    expect(filtered).toContain(`value="${local(w.m2)}"`);
  });

  it("shows each message's direction, status (error code, outcome unknown), number, contact and text", async () => {
    const w = await world();
    const html = await page(w.viewer, "/dashboard/messages");
    const row = (id: string) => {
      const start = html.indexOf(`href="/dashboard/messages/${id}"`);
      return html.slice(start, html.indexOf("</tr>", start));
    };
    expect(row(w.m2)).toMatch(
      /<td>out<\/td><td><span class="bad">failed<\/span> <code class="small-inline">service_window_closed<\/code><\/td>/,
    );
    expect(row(w.m2)).toContain(`<a href="/dashboard/numbers/${w.a}">15550001111</a>`);
    expect(row(w.m2)).toContain(`<code>${SANDBOX_MAGIC_NUMBERS.windowClosed}</code>`);
    expect(row(w.m2)).toContain('<td class="preview">two</td>');
    expect(row(w.m5)).toContain('<span class="badge warn">outcome unknown</span>');
    expect(row(w.m1)).toContain('<span class="ok">sent</span>');
    expect(row(w.m1)).not.toContain("outcome unknown");
    expect(row(w.m3)).toContain('<span class="pending">queued</span>');
    expect(row(w.i2)).toMatch(/<td>in<\/td><td><span class="ok">received<\/span><\/td>/);
    expect(row(w.i2)).toContain('<span class="visually-hidden">from </span><code>5511977770002</code>');
    expect(row(w.i2)).toContain(`<a href="/dashboard/numbers/${w.b}">15550009999</a>`);
    // The navigation marks the section.
    expect(html).toContain('<a href="/dashboard/messages" aria-current="page">Messages</a>');
  });

  it("truncates long texts to whole characters", async () => {
    const t = await createTenant();
    const long = `${"é".repeat(70)}🙂🙂🙂${"x".repeat(40)}`;
    await sendAt(t, t.numberId, "5511000000001", long);
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const html = await page(viewer, "/dashboard/messages");
    expect(html).toContain(`<td class="preview">${"é".repeat(70)}🙂🙂🙂${"x".repeat(6)}…</td>`);
  });

  it("pages with an Older link that keeps the filters, until the cursor runs out", async () => {
    const w = await world();
    const first = await page(w.viewer, "/dashboard/messages?direction=outbound&limit=2");
    expect(listedIds(first)).toEqual([w.m5, w.m4]);
    expect(first).not.toContain(">Newest</a>");
    const second = await page(w.viewer, olderLink(first)!);
    expect(olderLink(first)).toMatch(/^\/dashboard\/messages\?direction=outbound&limit=2&cursor=[A-Za-z0-9_-]+$/);
    expect(listedIds(second)).toEqual([w.m3, w.m2]);
    expect(second).toContain('<a href="/dashboard/messages?direction=outbound&amp;limit=2">Newest</a>');
    // New messages while paging never shift the later pages.
    await sendAt(w.t, w.a, "5511000000007", "new one");
    const third = await page(w.viewer, olderLink(second)!);
    expect(listedIds(third)).toEqual([w.m1]);
    expect(olderLink(third)).toBeNull();

    // The API's own cursors work here too (same filters, same workspace).
    const apiPage = await json<{ nextCursor: string }>(await api("/messages?direction=outbound&limit=3", w.t.key));
    expect(
      listedIds(
        await page(w.viewer, `/dashboard/messages?direction=outbound&cursor=${encodeURIComponent(apiPage.nextCursor)}`),
      ),
    ).toEqual([w.m3, w.m2, w.m1]);
  });

  it("fills a page across short answers of the workspace object (pages can be short while more exist)", async () => {
    const t = await createTenant();
    const old = await sendAt(t, t.numberId, "5511000000001", "before the flood");
    // 2,100 newer inbound messages in the slot's table (the one `old` is in): more than one list call
    // of the object reads (SCAN_BUDGET), none of them outbound. Ids are UUIDv7s of their time
    // (`from` + i ms), as inbound ids are.
    const from = clock.now() + 1_000;
    expect(2_100).toBeGreaterThan(SCAN_BUDGET);
    expect(slotOf(from + 2_100)).toBe(slotOf(clock.now()));
    await seedStorage(workspaceStub(env, t.workspaceId), (sql) =>
      seedInbound(sql, { slot: slotOf(from), numberId: t.numberId, sender: "5511977770001", from, count: 2_100 }),
    );
    clock.set(from + 5_000);
    // The API's first page is empty and says to go on; the dashboard goes on by itself.
    const apiPage = await json<{ data: unknown[]; nextCursor: string | null }>(
      await api("/messages?direction=outbound", t.key),
    );
    expect(apiPage.data).toEqual([]);
    expect(apiPage.nextCursor).not.toBeNull();
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const html = await page(viewer, "/dashboard/messages?direction=outbound");
    expect(listedIds(html)).toEqual([old]);
    expect(olderLink(html)).toBeNull();
  });
});

describe("bad filters", () => {
  it("answer 400 with the API's validation message beside the field, and no list", async () => {
    const t = await createTenant();
    await sendAt(t, t.numberId, "5511000000001", "one");
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const cases: [string, string, string][] = [
      ["?to=abc", "to", "to must be E.164 digits without &#39;+&#39;, or the user id a send gave as toUserId"],
      ["?direction=sideways", "direction", "Invalid option"],
      ["?channelNumberId=not-a-uuid", "channelNumberId", "channelNumberId must be a number id (a UUID)."],
      ["?createdAfter=yesterday", "createdAfter", "createdAfter must be an ISO 8601 date-time (UTC)"],
      [
        "?createdAfter=2046-03-02T00:00&createdBefore=2046-03-01T00:00",
        "createdBefore",
        "createdBefore must be later than createdAfter.",
      ],
      [
        "?to=5511999998888&direction=inbound",
        "to",
        "to filters outbound messages; drop direction=inbound or use from.",
      ],
      [
        "?status=sent&direction=inbound",
        "status",
        "sent is a status of outbound messages; inbound messages are received.",
      ],
      ["?limit=0", "limit", "limit must be at least 1."],
    ];
    for (const [query, field, message] of cases) {
      const html = await page(viewer, `/dashboard/messages${query}`, 400);
      expect(html, query).toMatch(
        new RegExp(`<p class="field-error" id="${field}-error">${message.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`),
      );
      expect(html, query).toMatch(
        new RegExp(`id="f-${field}" name="${field}"[^>]* aria-invalid="true" aria-describedby="${field}-error"`),
      );
      expect(html, query).toContain("Some filters are not valid");
      expect(listedIds(html), query).toEqual([]);
    }
  });

  it("a cursor of another workspace, or a damaged one, answers 400 with a way back to the newest messages", async () => {
    const w = await world();
    const other = await createTenant();
    const otherViewer = await signedInMember(other.workspaceId, "viewer");
    const first = await page(w.viewer, "/dashboard/messages?limit=1");
    for (const link of [olderLink(first)!, "/dashboard/messages?limit=1&cursor=not-a-cursor"]) {
      const html = await page(otherViewer, link, 400);
      expect(html).toContain("This page link is not one of this workspace&#39;s message pages");
      expect(html).toContain('<a href="/dashboard/messages?limit=1">Start from the newest messages</a>');
      expect(listedIds(html)).toEqual([]);
    }
  });
});

/** The value shown for a label of the record (`<dt>label</dt><dd>…</dd>`). */
const fact = (html: string, label: string) => new RegExp(`<dt>${label}</dt><dd>(.*?)</dd>`).exec(html)?.[1];

describe("message page", () => {
  it("shows an outbound message's record, its status timeline and no error", async () => {
    const w = await world();
    const html = await page(w.viewer, `/dashboard/messages/${w.m1}`);
    const view = await json<Record<string, string>>(await api(`/messages/${w.m1}`, w.t.key));
    expect(html).toContain("<h1>Message to 5511000000001</h1>");
    expect(fact(html, "Id")).toBe(`<code>${w.m1}</code>`);
    expect(fact(html, "Direction")).toBe("outbound");
    // Sent, then the sandbox reported it delivered and read, as the operator would.
    expect(fact(html, "Status")).toMatch(/^<span class="ok">sent<\/span>/);
    expect(fact(html, "Number")).toBe(
      `<a href="/dashboard/numbers/${w.a}">15550001111</a> <code class="small-inline">${w.a}</code>`,
    );
    expect(fact(html, "To")).toBe("<code>5511000000001</code>");
    expect(fact(html, "Type")).toBe("text");
    expect(fact(html, "Upstream message id")).toBe(`<code>${view.upstreamMessageId}</code>`);
    const time = (iso: string) => `<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC</time>`;
    expect(fact(html, "Created \\(accepted\\)")).toBe(time(view.createdAt!));
    expect(fact(html, "Processing")).toBe(time(view.processingAt!));
    expect(fact(html, "Sent")).toBe(time(view.sentAt!));
    expect(fact(html, "Updated")).toBe(time(view.updatedAt!));
    expect(fact(html, "Delivered")).toBe(time(view.deliveredAt!));
    expect(fact(html, "Read")).toBe(time(view.readAt!));
    for (const absent of ["Outcome unknown since", "Failed"]) expect(fact(html, absent), absent).toBe("<span>—</span>");
    expect(html).toContain('<pre class="message-body">one</pre>');
    expect(html).toContain(
      `<ol class="timeline"><li><strong>queued</strong> ${time(view.createdAt!)}</li><li><strong>processing</strong> ${time(view.processingAt!)}</li><li><strong>sent</strong> ${time(view.sentAt!)}</li><li><strong>delivered</strong> ${time(view.deliveredAt!)}</li><li><strong>read</strong> ${time(view.readAt!)}</li></ol>`,
    );
    expect(html).not.toContain("Upstream error");
    expect(html).toContain("No delivery of an event about this message to a webhook");
    expect(html).toContain('<a href="/dashboard/messages" aria-current="page">Messages</a>');
  });

  it("shows a failure's upstream error (normalized code, message, retriable, operator code) and an unknown outcome", async () => {
    const w = await world();
    const failed = await page(w.viewer, `/dashboard/messages/${w.m2}`);
    expect(failed).toContain('<h2 id="error-heading">Upstream error</h2>');
    expect(fact(failed, "Code")).toBe("<code>service_window_closed</code>");
    expect(fact(failed, "Message")).toBe(
      "More than 24 hours since the recipient last wrote: the customer-service window is closed.",
    );
    expect(fact(failed, "Retriable")).toBe("no");
    expect(fact(failed, "Operator code")).toBe("<code>131047</code>");
    expect(failed).toMatch(
      /<li><strong class="bad">failed<\/strong> <time[^>]*>[^<]*<\/time> <code>service_window_closed<\/code><\/li><\/ol>/,
    );

    const unknown = await page(w.viewer, `/dashboard/messages/${w.m5}`);
    expect(fact(unknown, "Status")).toBe(
      '<span class="pending">processing</span> <span class="badge warn">outcome unknown</span>',
    );
    expect(fact(unknown, "Outcome unknown since")).toMatch(/^<time datetime="/);
    expect(unknown).toContain("The operator&#39;s answer to our call was lost");
    expect(unknown).toMatch(/<strong class="warn">outcome unknown<\/strong>/);
  });

  it("shows an inbound message: sender, received time, text", async () => {
    const w = await world();
    const html = await page(w.viewer, `/dashboard/messages/${w.i1}`);
    const view = await json<Record<string, string>>(await api(`/messages/${w.i1}`, w.t.key));
    expect(html).toContain("<h1>Message from 5511977770001</h1>");
    expect(fact(html, "Direction")).toBe("inbound");
    expect(fact(html, "Status")).toBe('<span class="ok">received</span>');
    expect(fact(html, "From")).toBe("<code>5511977770001</code>");
    expect(fact(html, "Received \\(operator&#39;s time\\)")).toBe(
      `<time datetime="${view.receivedAt}">${view.receivedAt!.slice(0, 10)} ${view.receivedAt!.slice(11, 19)} UTC</time>`,
    );
    expect(html).toContain('<pre class="message-body">hello</pre>');
    expect(html).toMatch(/<ol class="timeline"><li><strong>received<\/strong> <time[^>]*>[^<]*<\/time><\/li><\/ol>/);
  });

  it("another workspace's message, an unknown id and a malformed one get the same 404 page", async () => {
    const w = await world();
    const other = await createTenant();
    const stranger = await signedInMember(other.workspaceId, "owner");
    await page(stranger, "/dashboard"); // the welcome notice of the first page after sign-in
    const pages = [];
    for (const id of [w.m1, w.i1, crypto.randomUUID(), "not-an-id"])
      pages.push(await page(stranger, `/dashboard/messages/${id}`, 404));
    expect(pages[0]).toContain("<h1>Not found</h1>");
    expect(new Set(pages).size).toBe(1);
    // The owner of the messages sees them.
    await page(w.viewer, `/dashboard/messages/${w.m1}`);
  });
});

describe("customer-controlled text is escaped", () => {
  const PAYLOAD = `<script>alert("x")</script>`;
  const ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;";

  /** An operator webhook post, signed as the operator signs it. */
  async function postOperator(payload: unknown) {
    const raw = JSON.stringify(payload);
    const signature = `sha256=${toHex(await hmacSha256(env.UPSTREAM_APP_SECRET, raw))}`;
    return call("/upstream/cloud/webhook", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Hub-Signature-256": signature },
      body: raw,
    });
  }

  it("in outbound bodies, inbound senders, types and content: a <script> payload is inert in the list and on the message pages", async () => {
    const t = await createTenant();
    const outbound = await sendAt(t, t.numberId, "5511000000001", PAYLOAD);
    const number = await connectLiveNumber(t.workspaceId);
    // The image's copy asks the operator for its media id, unknown there: recorded failed, nothing fetched.
    const net = mockNetwork();
    net.receivers.set(mediaLookupUrl("media-1"), () => operatorError(400, 100, "Object with ID does not exist"));
    const seconds = String(Math.floor(clock.now() / 1000));
    const messages = [
      {
        from: `"><script>alert("x")</script>`,
        id: "wamid.XSS1",
        timestamp: seconds,
        type: "text",
        text: { body: PAYLOAD },
      },
      {
        from: "5511900000000",
        id: "wamid.XSS2",
        timestamp: seconds,
        type: "image",
        image: { id: "media-1", mime_type: "image/jpeg", caption: PAYLOAD },
      },
      { from: "5511900000001", id: "wamid.XSS3", timestamp: seconds, type: PAYLOAD },
    ];
    const res = await postOperator({
      object: "whatsapp_business_account",
      entry: [
        {
          id: "WABA",
          changes: [{ field: "messages", value: { metadata: { phone_number_id: number.phoneNumberId }, messages } }],
        },
      ],
    });
    expect(res.status).toBe(200);
    const stub = workspaceStub(env, t.workspaceId);
    await vi.waitFor(
      async () => expect((await stub.listMessages({ direction: "inbound" }, null, 10)).rows).toHaveLength(3),
      { timeout: 10_000, interval: 50 },
    );
    const rows = (await stub.listMessages({ direction: "inbound" }, null, 10)).rows;
    const inboundIds = messages.map((m) => rows.find((r) => r.upstream_message_id === m.id)!.id);

    const viewer = await signedInMember(t.workspaceId, "viewer");
    const list = await page(viewer, "/dashboard/messages");
    expect(listedIds(list)).toHaveLength(4);
    // The only script element is our own file.
    expect(scripts(list)).toBe(1);
    expect(list).toContain(`<td class="preview">${ESCAPED}</td>`);
    expect(list).toContain(`<code>&quot;&gt;${ESCAPED}</code>`);
    expect(list).toContain(`<td class="preview">[${ESCAPED}]</td>`);

    for (const id of [outbound, ...inboundIds]) {
      const html = await page(viewer, `/dashboard/messages/${id}`);
      expect(scripts(html), id).toBe(1);
      expect(html, id).toContain("&lt;script&gt;alert(");
    }
    const [sender, image, typed] = await Promise.all(inboundIds.map((id) => page(viewer, `/dashboard/messages/${id}`)));
    expect(sender).toContain(`<h1>Message from &quot;&gt;${ESCAPED}</h1>`);
    expect(sender).toContain(`<pre class="message-body">${ESCAPED}</pre>`);
    expect(image).toContain("Type <strong>image</strong>; the operator&#39;s payload, unchanged:");
    expect(image).toContain(`&quot;caption&quot;: &quot;&lt;script&gt;alert(\\&quot;x\\&quot;)&lt;/script&gt;&quot;`);
    expect(typed).toContain(`<dt>Type</dt><dd>${ESCAPED}</dd>`);
    await vi.waitFor(
      async () =>
        expect(toMessageView((await stub.getMessage(inboundIds[1]!))!)).toMatchObject({ media: { status: "failed" } }),
      { timeout: 10_000, interval: 50 },
    );
    expect(net.unhandled).toEqual([]);
    net.restore();
  });
});

describe("the sends-per-day chart on the overview", () => {
  it("draws this period's days over the previous period's, with the counts in its summary and tables", async () => {
    clock.set(Date.UTC(2047, 3, 10, 12)); // April 10th
    const t = await createTenant();
    await sendAt(t, t.numberId, "5511000000001", "april");
    clock.set(Date.UTC(2047, 4, 3, 12)); // May 3rd
    for (let i = 0; i < 2; i++) await sendAt(t, t.numberId, "5511000000001", `may 3 #${i}`);
    clock.set(Date.UTC(2047, 4, 6, 12)); // May 6th
    for (let i = 0; i < 3; i++) await sendAt(t, t.numberId, "5511000000001", `may 6 #${i}`);
    await inbound(t, t.numberId, "5511977770001", "hello");
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const html = await page(viewer, "/dashboard");

    expect(html).toContain(
      '<svg viewBox="0 0 400 180" role="img" aria-labelledby="sends-title" aria-describedby="sends-desc">',
    );
    expect(html).toContain('<title id="sends-title">Sends per day</title>');
    expect(html).toContain(
      '<desc id="sends-desc">May 2047: 5 sends so far, on 2 days; the busiest day was 2047-05-06 with 3. April 2047: 1 send.</desc>',
    );
    const row = (day: string) => new RegExp(`<tr><th scope="row">${day}</th>((?:<td>\\d+</td>)+)</tr>`).exec(html)?.[1];
    // Sends (accepted), sent, failed, received.
    expect(row("2047-05-06")).toBe("<td>3</td><td>0</td><td>0</td><td>1</td>");
    expect(row("2047-05-03")).toBe("<td>2</td><td>0</td><td>0</td><td>0</td>");
    expect(row("2047-05-01")).toBeUndefined(); // days without messages are left out
    expect(row("2047-04-10")).toBe("<td>1</td><td>0</td><td>0</td><td>0</td>");
    expect(row("2047-05-07")).toBeUndefined(); // tomorrow
    // One bar per day with sends, titled for pointer users; the previous period lighter, behind.
    expect([...html.matchAll(/<rect class="cur"[^>]*><title>([^<]*)<\/title><\/rect>/g)].map((m) => m[1])).toEqual([
      "2047-05-03: 2 sends",
      "2047-05-06: 3 sends",
    ]);
    expect([...html.matchAll(/<rect class="prev"[^>]*><title>([^<]*)<\/title><\/rect>/g)].map((m) => m[1])).toEqual([
      "2047-04-10: 1 send",
    ]);
    // Styled by the stylesheet only (the CSP allows no inline style).
    expect(html).not.toMatch(/ style=/);
  });
});

describe("message page: webhook deliveries", () => {
  beforeEach(() => {
    vi.useRealTimers();
  });
  const net = mockNetworkPerTest();

  it("lists the attempts to deliver the message's events, newest first, without controls", async () => {
    const host = `deliveries-${crypto.randomUUID().slice(0, 8)}.acme-shop.com`;
    net.dns.set(host, ["93.184.216.34"]);
    const url = `https://${host}/hook`;
    // The first attempt fails; the retry is delivered.
    net.receivers.set(url, answers(500, 204));
    const t = await createTenant();
    expect((await api("/webhooks", t.key, { method: "POST", json: { channelNumberId: t.numberId, url } })).status).toBe(
      201,
    );
    const sent = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "tracked"));
    const { jobId } = await json<{ jobId: string }>(sent);
    const stub = workspaceStub(env, t.workspaceId);
    await vi.waitFor(
      async () => {
        const outcomes = (await stub.deliveriesAbout(jobId)).map((a) => a.outcome);
        expect(outcomes).toContain("failed");
        expect(outcomes).toContain("delivered");
      },
      { timeout: 15_000, interval: 100 },
    );
    const attempts = await stub.deliveriesAbout(jobId);
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const html = await page(viewer, `/dashboard/messages/${jobId}`);
    const table = html.slice(html.indexOf('aria-label="Webhook deliveries"'));
    for (const a of attempts)
      expect(table).toContain(`message.status<br/><code class="small">${a.event_id}</code></td><td>${a.attempt}</td>`);
    const failed = table.indexOf('<span class="bad">failed</span><p class="small">HTTP 500');
    const delivered = table.indexOf('<span class="ok">delivered</span></td><td>204</td>');
    expect(failed).toBeGreaterThan(0);
    expect(delivered).toBeGreaterThan(0);
    expect(delivered).toBeLessThan(failed);
    expect(html).not.toContain("Replay");
    expect(html).toContain(`<a href="/dashboard/webhooks/${t.numberId}">The number&#39;s webhook</a>`);
  });
});
