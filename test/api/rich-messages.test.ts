import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fakeClockPerTest } from "../helpers/clock";
import { api, expectError, json } from "../helpers/http";
import { createTenant, TEST_CONTACT } from "../helpers/fixtures";
import { accepted, liveNumberTenant, mockOperator } from "../helpers/operator";
import { inboundPayload, postOperator, seconds } from "../helpers/operator-webhook";
import { apiV2, sendV2 } from "../helpers/operator-templates";
import { send, usedMessages } from "../helpers/send";
import { channelNumberStub } from "../../src/durable-objects/stubs";

// API v2's rich messages on a live number: each type reaches the operator (faked at the network
// edge) in its documented shape and reads back in the v2 view; every rule of each type refuses
// with a 400 naming it, changing nothing; a type other than text or template to someone outside
// the 24-hour window is refused before anything is queued; reactions name a received message by
// our id; v1 refuses each type as before.

const clock = fakeClockPerTest(Date.UTC(2045, 0, 1), (t) => t + 24 * 3_600_000);
afterEach(() => {
  vi.restoreAllMocks();
});

const HOUR = 3_600_000;
const USER = "5511912345678";
const drain = (numberId: string) => runDurableObjectAlarm(channelNumberStub(env, numberId));
const until = (check: () => void | Promise<void>) => vi.waitFor(check, { timeout: 10_000, interval: 50 });

type Tenant = Awaited<ReturnType<typeof liveNumberTenant>>;

interface ListedMessage {
  id: string;
  direction: string;
  upstreamMessageId: string | null;
}

/** `USER` writes to the number (its window opens); the id we gave their message. */
async function userWrites(t: Tenant, wamid = `wamid.IN${crypto.randomUUID().slice(0, 8)}`): Promise<string> {
  const payload = inboundPayload(
    t.phoneNumberId,
    [{ from: USER, id: wamid, timestamp: seconds(clock.now()), type: "text", text: { body: "Hi" } }],
    [{ wa_id: USER, profile: { name: "Ana" } }],
  );
  expect((await postOperator(payload)).status).toBe(200);
  let id = "";
  await until(async () => {
    const list = await json<{ data: ListedMessage[] }>(await apiV2("/messages?direction=inbound", t.key));
    const found = list.data.find((m) => m.upstreamMessageId === wamid);
    expect(found).toBeDefined();
    id = found!.id;
  });
  return id;
}

async function created(res: Response): Promise<string> {
  expect(res.status, await res.clone().text()).toBe(201);
  return (await json<{ jobId: string }>(res)).jobId;
}

const INTERACTIVE_BUTTONS = {
  type: "button",
  header: { type: "image", link: "https://cdn.example.com/table.png" },
  body: "Your table for 4 is booked for Friday at 8 pm.",
  footer: "Reply to change it.",
  buttons: [
    { id: "confirm", title: "Confirm" },
    { id: "reschedule", title: "Reschedule" },
  ],
};
const INTERACTIVE_LIST = {
  type: "list",
  header: { type: "text", text: "Delivery" },
  body: "How should we ship it?",
  button: "Choose",
  sections: [
    { title: "Fast", rows: [{ id: "express", title: "Express", description: "Next day" }] },
    { title: "Cheap", rows: [{ id: "standard", title: "Standard" }] },
  ],
};
const INTERACTIVE_CTA = {
  type: "cta_url",
  body: "Your parcel is on its way.",
  button: { text: "Track parcel", url: "https://shop.example.com/track/1042" },
};
const CONTACT = {
  name: { formattedName: "Ana Souza", firstName: "Ana" },
  phones: [{ phone: "+55 11 99999-8888", type: "WORK", waId: "5511999998888" }],
  emails: [{ email: "ana@example.com" }],
  org: { company: "Acme" },
};

/** Each type: the request's object, what the operator receives under the type's name, and the record's text. */
const KINDS: [type: string, sent: unknown, operator: unknown, summary: string][] = [
  [
    "image",
    { link: "https://cdn.example.com/parcel.png", caption: "Your parcel" },
    { link: "https://cdn.example.com/parcel.png", caption: "Your parcel" },
    "[image] Your parcel",
  ],
  ["video", { link: "https://cdn.example.com/how.mp4" }, { link: "https://cdn.example.com/how.mp4" }, "[video]"],
  ["audio", { link: "https://cdn.example.com/note.ogg" }, { link: "https://cdn.example.com/note.ogg" }, "[audio]"],
  [
    "document",
    { link: "https://cdn.example.com/i/1042", filename: "invoice-1042.pdf", caption: "Invoice" },
    { link: "https://cdn.example.com/i/1042", caption: "Invoice", filename: "invoice-1042.pdf" },
    "[document] invoice-1042.pdf Invoice",
  ],
  ["sticker", { link: "https://cdn.example.com/s.webp" }, { link: "https://cdn.example.com/s.webp" }, "[sticker]"],
  [
    "interactive",
    INTERACTIVE_BUTTONS,
    {
      type: "button",
      header: { type: "image", image: { link: "https://cdn.example.com/table.png" } },
      body: { text: "Your table for 4 is booked for Friday at 8 pm." },
      footer: { text: "Reply to change it." },
      action: {
        buttons: [
          { type: "reply", reply: { id: "confirm", title: "Confirm" } },
          { type: "reply", reply: { id: "reschedule", title: "Reschedule" } },
        ],
      },
    },
    "Your table for 4 is booked for Friday at 8 pm.",
  ],
  [
    "interactive",
    INTERACTIVE_LIST,
    {
      type: "list",
      header: { type: "text", text: "Delivery" },
      body: { text: "How should we ship it?" },
      action: {
        button: "Choose",
        sections: [
          { title: "Fast", rows: [{ id: "express", title: "Express", description: "Next day" }] },
          { title: "Cheap", rows: [{ id: "standard", title: "Standard" }] },
        ],
      },
    },
    "How should we ship it?",
  ],
  [
    "interactive",
    INTERACTIVE_CTA,
    {
      type: "cta_url",
      body: { text: "Your parcel is on its way." },
      action: {
        name: "cta_url",
        parameters: { display_text: "Track parcel", url: "https://shop.example.com/track/1042" },
      },
    },
    "Your parcel is on its way.",
  ],
  [
    "location",
    { latitude: -23.5614, longitude: -46.6559, name: "Acme Paulista", address: "Av. Paulista, 1578" },
    { latitude: -23.5614, longitude: -46.6559, name: "Acme Paulista", address: "Av. Paulista, 1578" },
    "[location] Acme Paulista, Av. Paulista, 1578",
  ],
  [
    "contacts",
    [CONTACT],
    [
      {
        name: { formatted_name: "Ana Souza", first_name: "Ana" },
        phones: [{ phone: "+55 11 99999-8888", type: "WORK", wa_id: "5511999998888" }],
        emails: [{ email: "ana@example.com" }],
        org: { company: "Acme" },
      },
    ],
    "[contacts] Ana Souza",
  ],
];

describe("rich messages on a live number", () => {
  for (const [type, sent, operator, summary] of KINDS) {
    const label = type === "interactive" ? `interactive ${(sent as { type: string }).type}` : type;
    it(`${label}: reaches the operator in its documented shape, and reads back as sent`, async () => {
      const t = await liveNumberTenant();
      await userWrites(t);
      const calls = mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
      const jobId = await created(await sendV2(t.key, { channelNumberId: t.numberId, to: USER, type, [type]: sent }));
      await drain(t.numberId);
      expect(calls).toHaveLength(1);
      expect(calls[0]!.body).toEqual({
        messaging_product: "whatsapp",
        recipient_type: "individual",
        to: `+${USER}`,
        type,
        [type]: operator,
        biz_opaque_callback_data: jobId,
      });
      const v2 = await json<Record<string, unknown>>(await apiV2(`/messages/${jobId}`, t.key));
      expect(v2).toMatchObject({ type, status: "sent", text: { body: summary }, [type]: sent });
      // v1's view keeps v1's words: a text with the summary, and no field v1 does not have.
      const v1 = await json<Record<string, unknown>>(await api(`/messages/${jobId}`, t.key));
      expect(v1).toMatchObject({ type: "text", text: { body: summary } });
      expect(v1).not.toHaveProperty(type);
      // The v2 list shows it alike.
      const listed = await json<{ data: Record<string, unknown>[] }>(
        await apiV2("/messages?direction=outbound", t.key),
      );
      expect(listed.data).toEqual([v2]);
    });
  }

  it("a reaction names a received message by our id and reaches the operator with its operator id; an empty emoji removes it", async () => {
    const t = await liveNumberTenant();
    const received = await userWrites(t, "wamid.LIKED");
    const calls = mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const react = (emoji: string) =>
      sendV2(t.key, {
        channelNumberId: t.numberId,
        to: USER,
        type: "reaction",
        reaction: { messageId: received, emoji },
      });
    const liked = await created(await react("👍"));
    await drain(t.numberId);
    // The number paces calls to one recipient: the next one is due a minute later.
    clock.advance(60_000);
    const removed = await created(await react(""));
    await drain(t.numberId);
    expect(calls.map((c) => c.body)).toEqual([
      expect.objectContaining({ type: "reaction", reaction: { message_id: "wamid.LIKED", emoji: "👍" } }),
      expect.objectContaining({ type: "reaction", reaction: { message_id: "wamid.LIKED", emoji: "" } }),
    ]);
    expect(await json(await apiV2(`/messages/${liked}`, t.key))).toMatchObject({
      type: "reaction",
      text: { body: "[reaction] 👍" },
      reaction: { messageId: received, emoji: "👍" },
    });
    expect(await json(await apiV2(`/messages/${removed}`, t.key))).toMatchObject({
      type: "reaction",
      text: { body: "[reaction removed]" },
      reaction: { messageId: received, emoji: "" },
    });
  });

  it("a reaction to a message that is unknown, from someone else or itself a reaction is a 400 naming reaction.messageId; nothing changes", async () => {
    const t = await liveNumberTenant();
    const received = await userWrites(t);
    const other = await liveNumberTenant();
    const reaction = inboundPayload(
      t.phoneNumberId,
      [
        {
          from: USER,
          id: "wamid.R",
          timestamp: seconds(clock.now()),
          type: "reaction",
          reaction: { message_id: "wamid.x", emoji: "❤️" },
        },
      ],
      [{ wa_id: USER }],
    );
    expect((await postOperator(reaction)).status).toBe(200);
    let reactionId = "";
    await until(async () => {
      const list = await json<{ data: ListedMessage[] }>(await apiV2("/messages?direction=inbound", t.key));
      reactionId = list.data.find((m) => m.upstreamMessageId === "wamid.R")?.id ?? "";
      expect(reactionId).not.toBe("");
    });
    const cases: [to: string, messageId: string, rule: string][] = [
      [USER, crypto.randomUUID(), "unknown"],
      [USER, await userWrites(other), "unknown"],
      ["5511900000000", received, "other_recipient"],
      [USER, reactionId, "reaction"],
    ];
    for (const [to, messageId, rule] of cases) {
      const key = crypto.randomUUID();
      const body = { channelNumberId: t.numberId, to, type: "reaction", reaction: { messageId, emoji: "👍" } };
      const err = await expectError(await sendV2(t.key, body, key), 400, "invalid_request");
      expect(err.error.details).toEqual([expect.objectContaining({ path: "reaction.messageId", rule })]);
    }
    const outbound = await json<{ data: unknown[] }>(await apiV2("/messages?direction=outbound", t.key));
    expect(outbound.data).toEqual([]);
    expect(await usedMessages(t.key)).toBe(0);
  });

  it("a media file the operator cannot fetch or accept fails the message with media_upload_failed, not retried", async () => {
    const t = await liveNumberTenant();
    await userWrites(t);
    const calls = mockOperator(() =>
      Response.json(
        {
          error: {
            code: 131053,
            message: "(#131053) Media upload error",
            error_data: { details: "Downloading media from the link failed with HTTP 404." },
          },
        },
        { status: 400 },
      ),
    );
    const jobId = await created(
      await sendV2(t.key, {
        channelNumberId: t.numberId,
        to: USER,
        type: "image",
        image: { link: "https://cdn.example.com/gone.png" },
      }),
    );
    await drain(t.numberId);
    expect(calls).toHaveLength(1);
    expect(await json(await apiV2(`/messages/${jobId}`, t.key))).toMatchObject({
      status: "failed",
      error: {
        code: "media_upload_failed",
        retriable: false,
        upstreamCode: "131053",
        message: expect.stringContaining("HTTP 404"),
      },
    });
  });

  it("every type but template is refused before queueing once the 24-hour window has closed", async () => {
    const t = await liveNumberTenant();
    const received = await userWrites(t);
    clock.advance(24 * HOUR + 1_000);
    const kinds: [string, unknown][] = [
      ...KINDS.map(([type, sent]): [string, unknown] => [type, sent]),
      ["reaction", { messageId: received, emoji: "👍" }],
    ];
    const keys = new Map<string, string>();
    for (const [type, sent] of kinds) {
      const key = crypto.randomUUID();
      keys.set(type, key);
      const body = { channelNumberId: t.numberId, to: USER, type, [type]: sent };
      const err = await expectError(await sendV2(t.key, body, key), 400, "service_window_closed");
      expect(err.error.details).toEqual([expect.objectContaining({ path: "to", rule: "window_closed" })]);
    }
    const outbound = await json<{ data: unknown[] }>(await apiV2("/messages?direction=outbound", t.key));
    expect(outbound.data).toEqual([]);
    expect(await usedMessages(t.key)).toBe(0);
    // The user writes again: the same send goes, with the key the refusal left free.
    await userWrites(t);
    mockOperator((c) => accepted(`wamid.${c.body.biz_opaque_callback_data}`));
    const image = { channelNumberId: t.numberId, to: USER, type: "image", image: KINDS[0]![1] };
    await created(await sendV2(t.key, image, keys.get("image")));
  });
});

describe("each rule of each type", () => {
  const long = (n: number) => "x".repeat(n);
  const image = { link: "https://cdn.example.com/a.png" };
  const withType = (type: string, value: unknown) => ({ type, [type]: value });
  const buttons = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `b${i}`, title: `Button ${i}` }));
  const rows = (n: number, from = 0) =>
    Array.from({ length: n }, (_, i) => ({ id: `r${from + i}`, title: `Row ${i}` }));
  const list = (over: Record<string, unknown>) => withType("interactive", { ...INTERACTIVE_LIST, ...over });
  const cases: [what: string, body: Record<string, unknown>, path: string, rule: string][] = [
    ["a media type without its object", { type: "image" }, "image", "required"],
    ["another type's object beside it", { ...withType("image", image), text: { body: "x" } }, "text", "not_allowed"],
    ["a type that does not exist", withType("button", {}), "type", "enum"],
    [
      "a media link over http",
      withType("image", { link: "http://cdn.example.com/a.png" }),
      "image.link",
      "public_https",
    ],
    [
      "a media link to a private address",
      withType("video", { link: "https://10.0.0.7/v.mp4" }),
      "video.link",
      "public_https",
    ],
    [
      "a media link to a metadata host",
      withType("document", { link: "https://169.254.169.254/x" }),
      "document.link",
      "public_https",
    ],
    ["a caption over 1,024 characters", withType("image", { ...image, caption: long(1025) }), "image.caption", "max"],
    ["a caption on audio", withType("audio", { ...image, caption: "x" }), "audio.caption", "unknown_field"],
    ["a caption on a sticker", withType("sticker", { ...image, caption: "x" }), "sticker.caption", "unknown_field"],
    [
      "a file name over 240 characters",
      withType("document", { ...image, filename: long(241) }),
      "document.filename",
      "max",
    ],
    [
      "four reply buttons",
      withType("interactive", { ...INTERACTIVE_BUTTONS, buttons: buttons(4) }),
      "interactive.buttons",
      "max",
    ],
    ["no reply button", withType("interactive", { ...INTERACTIVE_BUTTONS, buttons: [] }), "interactive.buttons", "min"],
    [
      "a button title over 20 characters",
      withType("interactive", { ...INTERACTIVE_BUTTONS, buttons: [{ id: "a", title: long(21) }] }),
      "interactive.buttons.0.title",
      "max",
    ],
    [
      "a button id over 256 characters",
      withType("interactive", { ...INTERACTIVE_BUTTONS, buttons: [{ id: long(257), title: "A" }] }),
      "interactive.buttons.0.id",
      "max",
    ],
    [
      "two buttons with one title",
      withType("interactive", {
        ...INTERACTIVE_BUTTONS,
        buttons: [
          { id: "a", title: "Yes" },
          { id: "b", title: "Yes" },
        ],
      }),
      "interactive.buttons.1.title",
      "unique",
    ],
    [
      "a buttons body over 1,024 characters",
      withType("interactive", { ...INTERACTIVE_BUTTONS, body: long(1025) }),
      "interactive.body",
      "max",
    ],
    [
      "a footer over 60 characters",
      withType("interactive", { ...INTERACTIVE_CTA, footer: long(61) }),
      "interactive.footer",
      "max",
    ],
    [
      "a text header over 60 characters",
      withType("interactive", { ...INTERACTIVE_CTA, header: { type: "text", text: long(61) } }),
      "interactive.header.text",
      "max",
    ],
    ["a list body over 4,096 characters", list({ body: long(4097) }), "interactive.body", "max"],
    ["a list button over 20 characters", list({ button: long(21) }), "interactive.button", "max"],
    [
      "eleven rows in a list",
      list({
        sections: [
          { title: "A", rows: rows(6) },
          { title: "B", rows: rows(5, 6) },
        ],
      }),
      "interactive.sections",
      "max",
    ],
    [
      "eleven sections",
      list({ sections: Array.from({ length: 11 }, (_, i) => ({ title: `S${i}`, rows: rows(1, i) })) }),
      "interactive.sections",
      "max",
    ],
    [
      "two sections, one untitled",
      list({ sections: [{ title: "A", rows: rows(1) }, { rows: rows(1, 1) }] }),
      "interactive.sections.1.title",
      "required",
    ],
    [
      "one row id twice",
      list({
        sections: [
          { title: "A", rows: rows(1) },
          { title: "B", rows: rows(1) },
        ],
      }),
      "interactive.sections.1.rows.0.id",
      "unique",
    ],
    [
      "a row title over 24 characters",
      list({ sections: [{ rows: [{ id: "a", title: long(25) }] }] }),
      "interactive.sections.0.rows.0.title",
      "max",
    ],
    [
      "a row description over 72 characters",
      list({ sections: [{ rows: [{ id: "a", title: "A", description: long(73) }] }] }),
      "interactive.sections.0.rows.0.description",
      "max",
    ],
    [
      "a row id over 200 characters",
      list({ sections: [{ rows: [{ id: long(201), title: "A" }] }] }),
      "interactive.sections.0.rows.0.id",
      "max",
    ],
    [
      "a call-to-action URL that is not http(s)",
      withType("interactive", { ...INTERACTIVE_CTA, button: { text: "Go", url: "javascript:alert(1)" } }),
      "interactive.button.url",
      "url",
    ],
    [
      "a call-to-action label over 20 characters",
      withType("interactive", { ...INTERACTIVE_CTA, button: { text: long(21), url: "https://a.example.com" } }),
      "interactive.button.text",
      "max",
    ],
    [
      "an interactive type that does not exist",
      withType("interactive", { type: "carousel", body: "x" }),
      "interactive.type",
      "invalid_union",
    ],
    [
      "a media header on a list",
      list({ header: { type: "image", link: "https://cdn.example.com/a.png" } }),
      "interactive.header.type",
      "enum",
    ],
    [
      "a location name over 256 characters",
      withType("location", { latitude: 0, longitude: 0, name: long(257) }),
      "location.name",
      "max",
    ],
    [
      "a birthday that is not YYYY-MM-DD",
      withType("contacts", [{ ...CONTACT, birthday: "21/04/1990" }]),
      "contacts.0.birthday",
      "invalid_format",
    ],
    ["a latitude beyond 90", withType("location", { latitude: 91, longitude: 0 }), "location.latitude", "max"],
    ["a longitude below -180", withType("location", { latitude: 0, longitude: -181 }), "location.longitude", "min"],
    ["a location without longitude", withType("location", { latitude: 0 }), "location.longitude", "required"],
    ["no contact card", withType("contacts", []), "contacts", "min"],
    [
      "a card without a formatted name",
      withType("contacts", [{ name: { firstName: "Ana" } }]),
      "contacts.0.name.formattedName",
      "required",
    ],
    [
      "eleven contact cards",
      withType(
        "contacts",
        Array.from({ length: 11 }, () => CONTACT),
      ),
      "contacts",
      "max",
    ],
    [
      "a reaction of two emoji",
      withType("reaction", { messageId: crypto.randomUUID(), emoji: "👍👍" }),
      "reaction.emoji",
      "emoji",
    ],
    [
      "a reaction of text",
      withType("reaction", { messageId: crypto.randomUUID(), emoji: "ok" }),
      "reaction.emoji",
      "emoji",
    ],
  ];

  for (const [what, body, path, rule] of cases) {
    it(`${what}: 400 naming ${path} (${rule}); no record, no quota, the key stays free`, async () => {
      const t = await createTenant();
      const key = crypto.randomUUID();
      const err = await expectError(
        await sendV2(t.key, { channelNumberId: t.numberId, to: TEST_CONTACT, ...body }, key),
        400,
        "invalid_request",
      );
      expect(err.error.details).toContainEqual(expect.objectContaining({ path, rule }));
      expect((await json<{ data: unknown[] }>(await apiV2("/messages", t.key))).data).toEqual([]);
      expect(await usedMessages(t.key)).toBe(0);
      await created(
        await sendV2(t.key, { channelNumberId: t.numberId, to: TEST_CONTACT, ...withType("image", image) }, key),
      );
    });
  }
});

describe("v1 beside the rich types", () => {
  it("refuses each of them exactly as before (type is text in v1), storing nothing", async () => {
    const t = await createTenant();
    for (const [type, sent] of [...KINDS, ["reaction", { messageId: crypto.randomUUID(), emoji: "👍" }] as const]) {
      const err = await expectError(
        await send(t.key, crypto.randomUUID(), { channelNumberId: t.numberId, to: TEST_CONTACT, type, [type]: sent }),
        400,
        "invalid_request",
      );
      expect(err.error.details).toEqual([
        expect.objectContaining({ path: "type", message: 'type must be "text": only text messages exist in v1.' }),
        expect.objectContaining({ path: "text", rule: "required" }),
        expect.objectContaining({ path: type, rule: "unknown_field" }),
      ]);
    }
    expect(await usedMessages(t.key)).toBe(0);
  });
});

describe("rich messages on a sandbox number", () => {
  it("are accepted for a test contact and reported delivered, then read, as a text is", async () => {
    clock.set(Date.now());
    vi.useRealTimers();
    const t = await createTenant();
    const jobId = await created(
      await sendV2(t.key, {
        channelNumberId: t.numberId,
        to: TEST_CONTACT,
        ...{ type: "interactive", interactive: INTERACTIVE_BUTTONS },
      }),
    );
    await vi.waitFor(
      async () =>
        expect(await json(await apiV2(`/messages/${jobId}`, t.key))).toMatchObject({
          type: "interactive",
          // API v2: the read is a status of its own.
          status: "read",
          deliveredAt: expect.any(String),
          readAt: expect.any(String),
          interactive: INTERACTIVE_BUTTONS,
        }),
      { timeout: 12_000, interval: 200 },
    );
  });

  it("are refused before queueing for anyone outside the window who is not a test contact", async () => {
    const t = await createTenant();
    const err = await expectError(
      await sendV2(t.key, {
        channelNumberId: t.numberId,
        to: "5511955554444",
        type: "image",
        image: { link: "https://cdn.example.com/a.png" },
      }),
      400,
      "service_window_closed",
    );
    expect(err.error.details).toEqual([expect.objectContaining({ path: "to", rule: "window_closed" })]);
    expect(await usedMessages(t.key)).toBe(0);
  });
});
