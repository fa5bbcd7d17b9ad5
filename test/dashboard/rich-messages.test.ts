import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeClockPerTest } from "../helpers/clock";
import { apiV2, sendV2 } from "../helpers/operator-templates";
import { accepted, liveNumberTenant, mockOperator } from "../helpers/operator";
import { inboundPayload, postOperator, seconds } from "../helpers/operator-webhook";
import { json } from "../helpers/http";
import { signedInMember, type Member } from "../helpers/dashboard";

// The dashboard's messages list and message page show every kind a v2 send carries (media by
// link, interactive, location, contacts, reactions) and what a user's answer says, each field as
// escaped text; a media link is a link to follow, never something the page loads.

const clock = fakeClockPerTest(Date.UTC(2045, 2, 1), (t) => t + 24 * 3_600_000);
afterEach(() => {
  vi.restoreAllMocks();
});

const USER = "5511912345678";
const until = (check: () => void | Promise<void>) => vi.waitFor(check, { timeout: 10_000, interval: 50 });
type Tenant = Awaited<ReturnType<typeof liveNumberTenant>>;

/** `USER` sends the number a message of `type` with `part` under its name; our id for it. */
async function userSends(t: Tenant, type: string, part: unknown): Promise<string> {
  const wamid = `wamid.IN${crypto.randomUUID().slice(0, 8)}`;
  clock.advance(1_000);
  const payload = inboundPayload(
    t.phoneNumberId,
    [{ from: USER, id: wamid, timestamp: seconds(clock.now()), type, [type]: part }],
    [{ wa_id: USER, profile: { name: "Ana" } }],
  );
  expect((await postOperator(payload)).status).toBe(200);
  let id = "";
  await until(async () => {
    const list = await json<{ data: { id: string; upstreamMessageId: string | null }[] }>(
      await apiV2("/messages?direction=inbound", t.key),
    );
    const found = list.data.find((m) => m.upstreamMessageId === wamid);
    expect(found).toBeDefined();
    id = found!.id;
  });
  return id;
}

async function sent(t: Tenant, type: string, part: unknown): Promise<string> {
  clock.advance(1_000);
  const res = await sendV2(t.key, { channelNumberId: t.numberId, to: USER, type, [type]: part });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

async function page(member: Member, path: string): Promise<string> {
  const res = await member.browser.get(path);
  const html = await res.text();
  expect(res.status, html).toBe(200);
  return html;
}

/** The text of an HTML fragment, tags dropped and entities of JSX's escaping read back. */
const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, " ")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&amp;", "&")
    .replace(/\s+/g, " ");

/** The page's Content section. */
const contentOf = (html: string) => /<h2 id="content-heading">Content<\/h2>([\s\S]*?)<\/section>/.exec(html)?.[1] ?? "";

async function world() {
  const t = await liveNumberTenant();
  mockOperator((c) => accepted(`wamid.OUT${c.body.biz_opaque_callback_data}`));
  const first = await userSends(t, "text", { body: "Hi, my order?" });
  const viewer = await signedInMember(t.workspaceId, "viewer");
  return { t, first, viewer };
}

describe("rich messages sent: the message page shows what each carried", () => {
  it("a media message: its type, caption, file name and link, as a link to follow that the page never loads", async () => {
    const { t, viewer } = await world();
    const doc = await sent(t, "document", {
      link: "https://cdn.example.com/i/1042?sig=a&x=1",
      filename: "invoice-1042.pdf",
      caption: "Your invoice <b>now</b>",
    });
    const image = await sent(t, "image", { link: "https://cdn.example.com/parcel.png", caption: "Your parcel" });

    const docPage = await page(viewer, `/dashboard/messages/${doc}`);
    const content = contentOf(docPage);
    expect(text(content)).toContain("Type document ; what was sent: Media document");
    expect(text(content)).toContain("Link https://cdn.example.com/i/1042?sig=a&x=1");
    expect(text(content)).toContain("File name invoice-1042.pdf");
    expect(text(content)).toContain("Caption Your invoice <b>now</b>");
    // The caption is text, not markup.
    expect(content).not.toContain("<b>now</b>");
    expect(content).toContain(
      '<a href="https://cdn.example.com/i/1042?sig=a&amp;x=1" rel="noopener noreferrer nofollow" referrerpolicy="no-referrer" target="_blank"',
    );
    // The record's type is the kind, not v1's "text".
    expect(text(docPage)).toMatch(/Type document Upstream message id/);

    const imagePage = await page(viewer, `/dashboard/messages/${image}`);
    expect(text(contentOf(imagePage))).toContain("Media image Link https://cdn.example.com/parcel.png");
    // Nothing on the page loads the customer's link (no <img>, <video>, <audio>, <object> of it).
    expect(imagePage).not.toMatch(/<(img|video|audio|object|iframe|embed)\b/);
  });

  it("a file from the media store: previewed and downloadable from our origin with the media headers, to the workspace's members only", async () => {
    const { t, viewer } = await world();
    const bytes = new Uint8Array(3000);
    bytes.set([0xff, 0xd8, 0xff, 0xe0]);
    const up = await apiV2("/media?filename=parcel.jpg", t.key, {
      method: "POST",
      headers: { "Content-Type": "image/jpeg", "Content-Length": String(bytes.byteLength) },
      body: bytes,
    });
    expect(up.status, await up.clone().text()).toBe(201);
    const { id: mediaId } = await json<{ id: string }>(up);
    const image = await sent(t, "image", { mediaId, caption: "Your parcel" });

    const content = contentOf(await page(viewer, `/dashboard/messages/${image}`));
    const href = `/dashboard/media/${mediaId}`;
    expect(text(content)).toContain(`Stored file ${mediaId}`);
    expect(content).toContain(`<a href="${href}" download="">Download</a>`);
    expect(content).toContain(`<img class="stored-preview" src="${href}" alt="Your parcel"/>`);

    const res = await viewer.browser.get(href);
    expect(res.status).toBe(200);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(bytes);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect(res.headers.get("content-disposition")).toBe(
      `attachment; filename="parcel.jpg"; filename*=UTF-8''parcel.jpg`,
    );
    expect(res.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("cross-origin-resource-policy")).toBe("same-origin");

    // Another workspace's member, an unknown id and a deleted file read as not found.
    const stranger = await signedInMember((await liveNumberTenant()).workspaceId, "owner");
    expect((await stranger.browser.get(href)).status).toBe(404);
    expect((await viewer.browser.get(`/dashboard/media/${crypto.randomUUID()}`)).status).toBe(404);
    expect((await viewer.browser.get("/dashboard/media/not-an-id")).status).toBe(404);
    expect((await apiV2(`/media/${mediaId}`, t.key, { method: "DELETE" })).status).toBe(204);
    expect((await viewer.browser.get(href)).status).toBe(404);
  });

  it("interactive messages: the buttons' titles and ids, a list's sections and rows, a call-to-action's label and URL", async () => {
    const { t, viewer } = await world();
    const buttons = await sent(t, "interactive", {
      type: "button",
      header: { type: "text", text: "Table for 4" },
      body: "Booked for Friday at 8 pm.",
      footer: "Reply to change it.",
      buttons: [
        { id: "confirm", title: "Confirm" },
        { id: "reschedule", title: "Reschedule" },
      ],
    });
    const list = await sent(t, "interactive", {
      type: "list",
      body: "How should we ship it?",
      button: "Choose",
      sections: [
        { title: "Fast", rows: [{ id: "express", title: "Express", description: "Next day" }] },
        { title: "Cheap", rows: [{ id: "standard", title: "Standard" }] },
      ],
    });
    const cta = await sent(t, "interactive", {
      type: "cta_url",
      body: "Your parcel is on its way.",
      button: { text: "Track parcel", url: "https://shop.example.com/track/1042" },
    });

    const b = text(contentOf(await page(viewer, `/dashboard/messages/${buttons}`)));
    expect(b).toContain("Interactive reply buttons Header Table for 4 Body Booked for Friday at 8 pm.");
    expect(b).toContain("Footer Reply to change it.");
    expect(b).toContain("Buttons Confirm id confirm Reschedule id reschedule");

    const l = text(contentOf(await page(viewer, `/dashboard/messages/${list}`)));
    expect(l).toContain("List button Choose");
    expect(l).toContain("Fast Express · Next day id express");
    expect(l).toContain("Cheap Standard id standard");

    const c = contentOf(await page(viewer, `/dashboard/messages/${cta}`));
    expect(text(c)).toContain("Button Track parcel → https://shop.example.com/track/1042");
    expect(c).toContain('<a href="https://shop.example.com/track/1042" rel="noopener noreferrer nofollow"');

    // The list shows each one's kind and its buttons' labels.
    const listed = text(await page(viewer, "/dashboard/messages"));
    expect(listed).toContain("[interactive] Booked for Friday at 8 pm. [Confirm] [Reschedule]");
    expect(listed).toContain("[interactive] How should we ship it? [Choose]");
    expect(listed).toContain("[interactive] Your parcel is on its way. [Track parcel]");
  });

  it("a location, contact cards, and a reaction linked to the message it reacts to", async () => {
    const { t, first, viewer } = await world();
    const location = await sent(t, "location", {
      latitude: -23.5614,
      longitude: -46.6559,
      name: "Acme Store Paulista",
      address: "Av. Paulista, 1578",
    });
    const contacts = await sent(t, "contacts", [
      {
        name: { formattedName: "Ana Souza" },
        phones: [{ phone: "+55 11 99999-8888", type: "WORK" }],
        emails: [{ email: "ana@example.com" }],
        org: { company: "Acme" },
      },
    ]);
    const reaction = await sent(t, "reaction", { messageId: first, emoji: "👍" });

    expect(text(contentOf(await page(viewer, `/dashboard/messages/${location}`)))).toContain(
      "Name Acme Store Paulista Address Av. Paulista, 1578 Coordinates -23.5614, -46.6559",
    );
    expect(text(contentOf(await page(viewer, `/dashboard/messages/${contacts}`)))).toContain(
      "Ana Souza · Acme +55 11 99999-8888 (WORK) ana@example.com",
    );
    const r = contentOf(await page(viewer, `/dashboard/messages/${reaction}`));
    expect(text(r)).toContain(`Reaction 👍 Reacts to ${first}`);
    expect(r).toContain(`<a href="/dashboard/messages/${first}">`);

    const listed = text(await page(viewer, "/dashboard/messages"));
    expect(listed).toContain("[location] Acme Store Paulista, Av. Paulista, 1578");
    expect(listed).toContain("[contacts] Ana Souza");
    expect(listed).toContain("[reaction] 👍");
  });
});

describe("inbound answers and other kinds a user sends are legible", () => {
  it("a button reply, a list reply and a template's quick reply show the title and the id; a location, contacts and a reaction their facts", async () => {
    const { t, viewer } = await world();
    const button = await userSends(t, "interactive", {
      type: "button_reply",
      button_reply: { id: "confirm", title: "Confirm <now>" },
    });
    const row = await userSends(t, "interactive", {
      type: "list_reply",
      list_reply: { id: "express", title: "Express", description: "Next day" },
    });
    const quick = await userSends(t, "button", { text: "Stop promotions", payload: "STOP" });
    const location = await userSends(t, "location", { latitude: 1.5, longitude: 2.25, name: "Home" });
    const contacts = await userSends(t, "contacts", [
      { name: { formatted_name: "Bia Lima" }, phones: [{ phone: "+55 11 98888-7777", type: "CELL" }] },
    ]);
    const reaction = await userSends(t, "reaction", { message_id: "wamid.OUTabc", emoji: "❤️" });

    const b = contentOf(await page(viewer, `/dashboard/messages/${button}`));
    expect(text(b)).toContain("Answer Confirm <now> (button reply) Answer id confirm");
    expect(b).not.toContain("<now>");
    expect(text(contentOf(await page(viewer, `/dashboard/messages/${row}`)))).toContain(
      "Answer Express (list reply) Answer id express Description Next day",
    );
    expect(text(contentOf(await page(viewer, `/dashboard/messages/${quick}`)))).toContain(
      "Answer Stop promotions (quick reply) Answer id STOP",
    );
    expect(text(contentOf(await page(viewer, `/dashboard/messages/${location}`)))).toContain(
      "Name Home Coordinates 1.5, 2.25",
    );
    expect(text(contentOf(await page(viewer, `/dashboard/messages/${contacts}`)))).toContain(
      "Bia Lima +55 11 98888-7777 (CELL)",
    );
    expect(text(contentOf(await page(viewer, `/dashboard/messages/${reaction}`)))).toContain(
      "Reaction ❤️ Reacts to (operator id) wamid.OUTabc",
    );

    const listed = text(await page(viewer, "/dashboard/messages?direction=inbound"));
    expect(listed).toContain("[button reply] Confirm <now>");
    expect(listed).toContain("[list reply] Express");
    expect(listed).toContain("[quick reply] Stop promotions");
    expect(listed).toContain("[location] Home");
    expect(listed).toContain("[reaction] ❤️");
  });
});
