import { describe, expect, it } from "vitest";
import { admin, api, expectError } from "../helpers/http";
import { createTenant, type Tenant } from "../helpers/fixtures";
import { send, textMessage, usedMessages } from "../helpers/send";
import { expectRuntimeLog } from "../helpers/runtime-log";
import { fakeClockPerTest } from "../helpers/clock";

// Every test starts at the same moment, with numbers of its own: no test's sends
// count against another's 2-per-second number limit.
fakeClockPerTest(Date.UTC(2031, 4, 10), () => Date.UTC(2031, 4, 10));

/** The workspace under test, fresh for each test. */
const scaleTenant = () => createTenant({ plan: "scale" });

const emoji = "😀";

/** Every refusal is a 400 that names the field, binds no key and changes nothing. */
async function expectRefused(
  t: Tenant,
  body: unknown,
  path: string,
  init: RequestInit = {},
  idem = crypto.randomUUID(),
) {
  const before = await usedMessages(t.key);
  const res = await send(t.key, idem, body, init);
  const err = await expectError(res, 400, "invalid_request");
  expect(err.error.details?.map((d) => d.path)).toContain(path);
  expect(await usedMessages(t.key)).toBe(before);
  return err;
}

describe("POST /messages validation", () => {
  it("explains that a leading + must be dropped", async () => {
    const t = await scaleTenant();
    const err = await expectRefused(t, { ...textMessage(t.numberId), to: "+5511999998888" }, "to");
    expect(err.error.details?.find((d) => d.path === "to")?.message).toMatch(/drop the leading '\+'/i);
  });

  it.each([
    ["letters", "55abc99"],
    ["33 digits", "1".repeat(33)],
    ["empty", ""],
    ["leading 0", "05511999998888"],
    ["a number, not a string", 5511999998888],
    ["spaces", "55 11 99999"],
  ])("refuses `to` with %s", async (_, to) => {
    const t = await scaleTenant();
    await expectRefused(t, { ...textMessage(t.numberId), to }, "to");
  });

  it("accepts 32 digits", async () => {
    const t = await scaleTenant();
    expect((await send(t.key, crypto.randomUUID(), { ...textMessage(t.numberId), to: "1".repeat(32) })).status).toBe(
      201,
    );
  });

  it.each([
    ["empty", ""],
    ["4097 characters", "a".repeat(4097)],
    ["4097 emoji", emoji.repeat(4097)],
    ["null", null],
    ["a number", 42],
  ])("refuses text.body %s", async (_, body) => {
    const t = await scaleTenant();
    await expectRefused(t, { ...textMessage(t.numberId), text: { body } }, "text.body");
  });

  it("counts code points: 4096 emoji (8192 UTF-16 units) are accepted", async () => {
    const t = await scaleTenant();
    const res = await send(t.key, crypto.randomUUID(), textMessage(t.numberId, emoji.repeat(4096)));
    expect(res.status).toBe(201);
  });

  it("refuses type image", async () => {
    const t = await scaleTenant();
    await expectRefused(t, { ...textMessage(t.numberId), type: "image" }, "type");
  });

  it("refuses unknown top-level and nested fields, naming them", async () => {
    const t = await scaleTenant();
    const err = await expectRefused(t, { ...textMessage(t.numberId), priority: "high", callbackUrl: "x" }, "priority");
    expect(err.error.details?.map((d) => d.path)).toContain("callbackUrl");
    await expectRefused(t, { ...textMessage(t.numberId), text: { body: "x", preview_url: true } }, "text.preview_url");
  });

  it.each([
    ["truncated JSON", "{", "(body)"],
    ["an array", "[]", "(body)"],
    ["null", "null", "(body)"],
    ["a string", '"x"', "(body)"],
  ])("refuses a body that is %s", async (_, raw, path) => {
    const t = await scaleTenant();
    const res = await api("/messages", t.key, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Idempotency-Key": crypto.randomUUID() },
      body: raw,
    });
    const err = await expectError(res, 400, "invalid_request");
    if (raw !== "{") expect(err.error.details?.map((d) => d.path)).toContain(path);
  });

  it("refuses form-encoded bodies", async () => {
    const t = await scaleTenant();
    const res = await api("/messages", t.key, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", "Idempotency-Key": crypto.randomUUID() },
      body: `channelNumberId=${t.numberId}&to=5511999998888&text=hi`,
    });
    const err = await expectError(res, 400, "invalid_request");
    expect(err.error.details?.[0]?.path).toBe("header.content-type");
  });

  it("refuses a 200 KB body", async () => {
    const t = await scaleTenant();
    const res = await send(t.key, crypto.randomUUID(), { ...textMessage(t.numberId), padding: "x".repeat(200 * 1024) });
    const err = await expectError(res, 400, "invalid_request");
    expect(err.error.details?.[0]?.rule).toBe("max_size");
  });

  it.each([
    ["missing", null],
    ["empty", ""],
    ["256 characters", "k".repeat(256)],
    ["non-ASCII", "clé-é"],
    ["a control character", "abc\u0001"],
  ])("refuses an Idempotency-Key that is %s", async (_, key) => {
    const t = await scaleTenant();
    // The runtime warns when a header value is not ASCII: expected for that case, so captured and checked.
    const warning =
      key !== null && /[\u0080-\uFFFF]/.test(key)
        ? await expectRuntimeLog(/header value for "Idempotency-Key" contains non-ASCII/)
        : null;
    const before = await usedMessages(t.key);
    const res = await send(
      t.key,
      null,
      textMessage(t.numberId),
      key === null ? {} : { headers: { "Idempotency-Key": key } },
    );
    const err = await expectError(res, 400, "invalid_request");
    expect(err.error.details?.[0]?.path).toBe("header.idempotency-key");
    expect(await usedMessages(t.key)).toBe(before);
    if (warning) {
      expect(await warning.seen()).toHaveLength(1);
      await warning.end();
    }
  });

  it("accepts a 255-character printable ASCII key", async () => {
    const t = await scaleTenant();
    expect((await send(t.key, "~".repeat(255), textMessage(t.numberId))).status).toBe(201);
  });

  it("refuses a channelNumberId that is not a UUID with 400", async () => {
    const t = await scaleTenant();
    await expectRefused(t, { ...textMessage(t.numberId), channelNumberId: "number-1" }, "channelNumberId");
  });

  it("refuses an unknown, foreign or disconnected number with 403", async () => {
    const [t, other, disconnected] = await Promise.all([scaleTenant(), createTenant(), createTenant()]);
    await admin(`/channel-numbers/${disconnected.numberId}`, { method: "DELETE" });
    for (const [key, numberId] of [
      [t.key, crypto.randomUUID()],
      [t.key, other.numberId],
      [disconnected.key, disconnected.numberId],
    ] as const) {
      await expectError(await send(key, crypto.randomUUID(), textMessage(numberId)), 403, "forbidden");
    }
  });

  it("a refused request binds no key: the same key succeeds once the request is fixed", async () => {
    const [t, other] = await Promise.all([scaleTenant(), createTenant()]);
    const key = crypto.randomUUID();
    await expectError(await send(t.key, key, { ...textMessage(t.numberId), to: "+55119" }), 400, "invalid_request");
    await expectError(await send(t.key, key, textMessage(other.numberId)), 403, "forbidden");
    const ok = await send(t.key, key, textMessage(t.numberId));
    expect(ok.status).toBe(201);
  });
});

describe("validation details", () => {
  it("tell a missing field from a field of the wrong type", async () => {
    const t = await scaleTenant();
    const missing = await expectError(
      await send(t.key, crypto.randomUUID(), { channelNumberId: t.numberId, text: { body: "x" } }),
      400,
      "invalid_request",
    );
    // `to` may be replaced by `toUserId`: the message says which two fields can fill the gap.
    expect(missing.error.details).toContainEqual({
      path: "to",
      rule: "required",
      message: expect.stringMatching(/^This field is required: give to .*toUserId/),
    });
    const wrong = await expectError(
      await send(t.key, crypto.randomUUID(), { ...textMessage(t.numberId), to: 5511999998888 }),
      400,
      "invalid_request",
    );
    expect(wrong.error.details).toContainEqual({ path: "to", rule: "type", message: "to must be a string of digits." });
  });
});
