import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fakeClockPerTest } from "../helpers/clock";
import { createTenant, TEST_CONTACT } from "../helpers/fixtures";
import { signedInMember } from "../helpers/dashboard";
import { json } from "../helpers/http";
import { liveNumberTenant } from "../helpers/operator";
import { apiV2, sendV2 } from "../helpers/operator-templates";

// A sandbox number's page sends a test media message by link or reply buttons, as
// POST /api/v2/messages sends them (the same schema, window, idempotency and engine); each refusal
// the API would answer 400 is shown beside its field naming the rule, and changes nothing.

fakeClockPerTest(Date.UTC(2045, 5, 1), (t) => t + 24 * 3_600_000);

/** Someone who never wrote to the number and is not a test contact: outside the 24-hour window. */
const STRANGER = "5511955554444";

const unescape = (s: string) =>
  s
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");

const messagesOf = async (key: string) =>
  (await json<{ data: Record<string, unknown>[] }>(await apiV2("/messages", key))).data;

const auditOf = async (workspaceId: string) =>
  (
    await env.DB.prepare(
      "SELECT action, actor_type, target_id, detail FROM audit_log WHERE workspace_id = ? AND action = 'sandbox.test_message_sent'",
    )
      .bind(workspaceId)
      .all<Record<string, string>>()
  ).results;

const mediaForm = (over: Record<string, string> = {}) => ({
  form: "media",
  idempotencyKey: crypto.randomUUID(),
  to: TEST_CONTACT,
  mediaType: "document",
  link: "https://cdn.example.com/i/1042.pdf",
  caption: "Your invoice",
  filename: "invoice-1042.pdf",
  ...over,
});

const buttonsForm = (over: Record<string, string> = {}) => ({
  form: "buttons",
  idempotencyKey: crypto.randomUUID(),
  to: TEST_CONTACT,
  body: "Your table for 4 is booked for Friday at 8 pm.",
  button_1: "Confirm",
  button_2: "Reschedule",
  button_3: "",
  ...over,
});

/** The error shown beside `field` of `form` (unescaped), or null. */
const errorBeside = (html: string, form: string, field: string) => {
  const id = `test-${form}-${field}`;
  if (!new RegExp(`id="${id}"[^>]*aria-invalid="true"`).test(html)) return null;
  const found = new RegExp(`id="${id}-error"[^>]*>([^<]*)<`).exec(html);
  return found ? unescape(found[1]!) : null;
};

describe("the test message forms of a sandbox number", () => {
  it("are offered to developers and owners on a sandbox number's page, not to viewers nor on a live number", async () => {
    const t = await createTenant();
    const developer = await signedInMember(t.workspaceId, "developer");
    const viewer = await signedInMember(t.workspaceId, "viewer");
    const action = `action="/dashboard/numbers/${t.numberId}/test-messages"`;
    const mine = await (await developer.browser.get(`/dashboard/numbers/${t.numberId}`)).text();
    expect(mine.split(action)).toHaveLength(3);
    expect(mine).toContain('<input type="hidden" name="form" value="media"/>');
    expect(mine).toContain('<input type="hidden" name="form" value="buttons"/>');
    for (const kind of ["image", "video", "audio", "document", "sticker"]) expect(mine).toContain(`value="${kind}"`);
    expect(await (await viewer.browser.get(`/dashboard/numbers/${t.numberId}`)).text()).not.toContain("test-messages");

    const live = await liveNumberTenant();
    const owner = await signedInMember(live.workspaceId, "owner");
    expect(await (await owner.browser.get(`/dashboard/numbers/${live.numberId}`)).text()).not.toContain(
      "test-messages",
    );
  });

  it("sends a document by link: the record is what the API's send of the same body records, and it is audited", async () => {
    const t = await createTenant();
    const developer = await signedInMember(t.workspaceId, "developer");
    const res = await developer.browser.post(`/dashboard/numbers/${t.numberId}/test-messages`, mediaForm());
    expect(res.status, await res.clone().text()).toBe(303);
    const location = res.headers.get("location") ?? "";
    expect(location).toMatch(/^\/dashboard\/messages\/[0-9a-f-]{36}$/);
    const page = await (await developer.browser.get(location)).text();
    expect(page).toContain("Test document message queued.");
    expect(page).toContain("invoice-1042.pdf");

    // The same body through the API: the same record but for its id and times.
    const viaApi = await sendV2(t.key, {
      channelNumberId: t.numberId,
      to: TEST_CONTACT,
      type: "document",
      document: { link: "https://cdn.example.com/i/1042.pdf", caption: "Your invoice", filename: "invoice-1042.pdf" },
    });
    expect(viaApi.status).toBe(201);
    const [api, form] = await messagesOf(t.key);
    const sameBut = (m: Record<string, unknown>) => ({ ...m, id: "", createdAt: "", updatedAt: "" });
    expect(form!.id).toBe(location.split("/").at(-1));
    expect(sameBut(form!)).toEqual(sameBut(api!));
    expect(form).toMatchObject({
      type: "document",
      to: TEST_CONTACT,
      status: "queued",
      text: { body: "[document] invoice-1042.pdf Your invoice" },
      document: { link: "https://cdn.example.com/i/1042.pdf", caption: "Your invoice", filename: "invoice-1042.pdf" },
    });
    expect(await auditOf(t.workspaceId)).toEqual([
      { action: "sandbox.test_message_sent", actor_type: "member", target_id: t.numberId, detail: "document" },
    ]);
  });

  it("sends reply buttons, each filled title a button whose id is its place on the form; a double submit is one message", async () => {
    const t = await createTenant();
    const owner = await signedInMember(t.workspaceId, "owner");
    const form = buttonsForm({ button_2: "", button_3: "Reschedule" });
    const first = await owner.browser.post(`/dashboard/numbers/${t.numberId}/test-messages`, form);
    const second = await owner.browser.post(`/dashboard/numbers/${t.numberId}/test-messages`, form);
    expect(first.status).toBe(303);
    expect(second.headers.get("location")).toBe(first.headers.get("location"));
    expect(await (await owner.browser.get(second.headers.get("location")!)).text()).toContain(
      "This test was already sent; nothing was sent again.",
    );
    const messages = await messagesOf(t.key);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      type: "interactive",
      interactive: {
        type: "button",
        body: "Your table for 4 is booked for Friday at 8 pm.",
        buttons: [
          { id: "button_1", title: "Confirm" },
          { id: "button_3", title: "Reschedule" },
        ],
      },
    });
    expect(await auditOf(t.workspaceId)).toHaveLength(1);
  });

  it.each([
    ["a caption on audio", "media", mediaForm({ mediaType: "audio", filename: "" }), "caption", "unknown_field"],
    ["a file name on an image", "media", mediaForm({ mediaType: "image", caption: "" }), "filename", "unknown_field"],
    ["an http link", "media", mediaForm({ link: "http://cdn.example.com/a.pdf" }), "link", "public_https"],
    ["a link to a private address", "media", mediaForm({ link: "https://10.0.0.7/a.pdf" }), "link", "public_https"],
    ["a caption over 1,024 characters", "media", mediaForm({ caption: "x".repeat(1025) }), "caption", "max"],
    ["an empty body", "buttons", buttonsForm({ body: "" }), "body", "min"],
    ["a title over 20 characters", "buttons", buttonsForm({ button_2: "x".repeat(21) }), "button_2", "max"],
    ["the same title twice", "buttons", buttonsForm({ button_3: "Confirm" }), "button_3", "unique"],
    ["no button", "buttons", buttonsForm({ button_1: "", button_2: "" }), "button_1", "min"],
    ["a recipient with '+'", "media", mediaForm({ to: "+5511955554444" }), "to", "no_plus"],
    ["a recipient outside the 24-hour window", "buttons", buttonsForm({ to: STRANGER }), "to", "window_closed"],
  ])(
    "refuses %s beside its field naming the rule, keeps what was typed, and changes nothing",
    async (_, form, fields, field, rule) => {
      const t = await createTenant();
      const developer = await signedInMember(t.workspaceId, "developer");
      const res = await developer.browser.post(`/dashboard/numbers/${t.numberId}/test-messages`, fields);
      const html = await res.text();
      expect(res.status, html).toBe(400);
      expect(html).toContain('role="alert"');
      const error = errorBeside(html, form, field);
      expect(error, html.slice(html.indexOf("test-messages-heading"))).toContain(`(rule: ${rule})`);
      // The form comes back open, with what was typed and the same key (the refusal bound nothing).
      expect(html).toContain(`value="${fields.idempotencyKey}"`);
      if (fields.to) expect(html).toContain(`value="${fields.to}"`);
      expect(await messagesOf(t.key)).toEqual([]);
      expect(await auditOf(t.workspaceId)).toEqual([]);
      // The key is still free: the corrected form is sent with it.
      const corrected =
        form === "media"
          ? mediaForm({ idempotencyKey: fields.idempotencyKey })
          : buttonsForm({ idempotencyKey: fields.idempotencyKey });
      expect((await developer.browser.post(`/dashboard/numbers/${t.numberId}/test-messages`, corrected)).status).toBe(
        303,
      );
    },
  );

  it("a live number, a viewer and a made-up form send nothing", async () => {
    const live = await liveNumberTenant();
    const owner = await signedInMember(live.workspaceId, "owner");
    const res = await owner.browser.post(`/dashboard/numbers/${live.numberId}/test-messages`, mediaForm());
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/dashboard/numbers/${live.numberId}`);
    expect(await (await owner.browser.get(`/dashboard/numbers/${live.numberId}`)).text()).toContain(
      "Test messages are sent from sandbox numbers only",
    );
    expect(await messagesOf(live.key)).toEqual([]);

    const t = await createTenant();
    const viewer = await signedInMember(t.workspaceId, "viewer");
    expect((await viewer.browser.post(`/dashboard/numbers/${t.numberId}/test-messages`, mediaForm())).status).toBe(403);
    const developer = await signedInMember(t.workspaceId, "developer");
    const other = await developer.browser.post(
      `/dashboard/numbers/${t.numberId}/test-messages`,
      mediaForm({ form: "location" }),
    );
    expect(other.status).toBe(303);
    expect(await messagesOf(t.key)).toEqual([]);
    expect(await auditOf(t.workspaceId)).toEqual([]);
  });
});
