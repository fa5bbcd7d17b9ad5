import { describe, expect, it } from "vitest";
import { MAX_JSON_BODY_BYTES } from "../../src/middleware/json-body";
import { admin, api, expectError, json } from "../helpers/http";
import { createTenant, createWorkspace, type Tenant } from "../helpers/fixtures";
import { send, textMessage, usedMessages } from "../helpers/send";

// JSON.stringify escapes a lone surrogate as \udXXX, which JSON.parse turns back into one.
const LONE_HIGH = "\uD800";
const LONE_LOW = "\uDC00";

describe("ill-formed Unicode is refused in every string of every JSON body", () => {
  it.each([
    ["text.body of lone surrogates", (numberId: string) => textMessage(numberId, LONE_HIGH.repeat(4096)), "text.body"],
    ["a lone low surrogate inside text", (numberId: string) => textMessage(numberId, `ok ${LONE_LOW} ok`), "text.body"],
    ["to", (numberId: string) => textMessage(numberId, "hi", `5511${LONE_HIGH}`), "to"],
    [
      "channelNumberId",
      (numberId: string) => ({ ...textMessage(numberId), channelNumberId: `${numberId}${LONE_HIGH}` }),
      "channelNumberId",
    ],
    ["an unknown field's value", (numberId: string) => ({ ...textMessage(numberId), note: LONE_LOW }), "note"],
  ])("POST /messages: %s → 400 naming the field, nothing sent or counted", async (_, body, path) => {
    const t = await createTenant();
    const before = await usedMessages(t.key);
    const res = await send(t.key, crypto.randomUUID(), body(t.numberId));
    const err = await expectError(res, 400, "invalid_request");
    expect(err.error.details).toEqual([
      { path, rule: "well_formed_unicode", message: expect.stringMatching(/lone UTF-16 surrogate/) },
    ]);
    expect(await usedMessages(t.key)).toBe(before);
  });

  it("names a field whose name is ill-formed, and a string inside an array", async () => {
    const t = await createTenant();
    const key = await expectError(
      await send(t.key, crypto.randomUUID(), { ...textMessage(t.numberId), [`x${LONE_HIGH}`]: 1 }),
      400,
      "invalid_request",
    );
    expect(key.error.details?.[0]).toMatchObject({ path: "x\uFFFD (field name)", rule: "well_formed_unicode" });
    const nested = await expectError(
      await send(t.key, crypto.randomUUID(), {
        ...textMessage(t.numberId),
        text: { body: "a", parts: ["ok", LONE_LOW] },
      }),
      400,
      "invalid_request",
    );
    expect(nested.error.details?.[0]).toMatchObject({ path: "text.parts.1", rule: "well_formed_unicode" });
  });

  it("accepts well-formed text with surrogate pairs (emoji), counted as code points", async () => {
    const t = await createTenant();
    const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, "👍".repeat(4096)));
    expect(res.status).toBe(201);
  });

  it.each([
    [
      "POST /webhooks url",
      (t: Tenant) =>
        api("/webhooks", t.key, {
          method: "POST",
          json: { channelNumberId: t.numberId, url: `https://hooks.example.com/${LONE_HIGH}` },
        }),
      "url",
    ],
    [
      "POST /sandbox/inbound text.body",
      (t: Tenant) =>
        api("/sandbox/inbound", t.key, {
          method: "POST",
          json: { channelNumberId: t.numberId, from: "5511977776666", text: { body: LONE_LOW } },
        }),
      "text.body",
    ],
    [
      "admin: workspace name",
      () => admin("/workspaces", { method: "POST", json: { name: `Acme${LONE_HIGH}`, plan: "free" } }),
      "name",
    ],
    [
      "admin: API key name",
      async () =>
        admin(`/workspaces/${await createWorkspace()}/api-keys`, { method: "POST", json: { name: LONE_LOW } }),
      "name",
    ],
    [
      "admin: displayPhoneNumber",
      async () =>
        admin(`/workspaces/${await createWorkspace()}/channel-numbers`, {
          method: "POST",
          json: { displayPhoneNumber: `1555${LONE_HIGH}`, upstream: { type: "sandbox" } },
        }),
      "displayPhoneNumber",
    ],
  ])("%s → 400 naming the field", async (_, request, path) => {
    const err = await expectError(await request(await createTenant()), 400, "invalid_request");
    expect(err.error.details?.[0]).toMatchObject({ path, rule: "well_formed_unicode" });
  });
});

describe("the 64 KiB body limit", () => {
  /** A valid send to `numberId` whose JSON is padded with whitespace to exactly `bytes` bytes. */
  const padded = (numberId: string, bytes: number) => {
    const text = JSON.stringify(textMessage(numberId, "padded"));
    return text + " ".repeat(bytes - new TextEncoder().encode(text).byteLength);
  };

  it("accepts a body of exactly 64 KiB", async () => {
    const t = await createTenant();
    const res = await api("/messages", t.key, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Idempotency-Key": crypto.randomUUID() },
      body: padded(t.numberId, MAX_JSON_BODY_BYTES),
    });
    expect(MAX_JSON_BODY_BYTES).toBe(65_536);
    expect(res.status).toBe(201);
  });

  it("refuses 64 KiB plus one byte, naming the limit, and sends nothing", async () => {
    const t = await createTenant();
    const before = await usedMessages(t.key);
    const res = await api("/messages", t.key, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Idempotency-Key": crypto.randomUUID() },
      body: padded(t.numberId, MAX_JSON_BODY_BYTES + 1),
    });
    const err = await expectError(res, 400, "invalid_request");
    expect(err.error.details).toEqual([{ path: "(body)", rule: "max_size", message: "At most 65536 bytes." }]);
    expect(await usedMessages(t.key)).toBe(before);
  });

  it("refuses 64 KiB plus one byte sent without Content-Length (chunked)", async () => {
    const t = await createTenant();
    const body = new TextEncoder().encode(padded(t.numberId, MAX_JSON_BODY_BYTES + 1));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < body.byteLength; i += 8192) controller.enqueue(body.subarray(i, i + 8192));
        controller.close();
      },
    });
    const res = await api("/messages", t.key, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Idempotency-Key": crypto.randomUUID() },
      body: stream,
      // @ts-expect-error: a streaming request body needs duplex "half" (workerd knows it; the DOM types do not)
      duplex: "half",
    });
    const err = await expectError(res, 400, "invalid_request");
    expect(err.error.details?.[0]?.rule).toBe("max_size");
    expect(await json(await api("/me", t.key))).toBeTruthy();
  });
});
