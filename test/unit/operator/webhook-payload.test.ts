import { afterEach, describe, expect, it, vi } from "vitest";
import { operatorTime, splitPayload } from "../../../src/operator/webhook-payload";

const change = (field: string | undefined, value: unknown) => (field === undefined ? { value } : { field, value });
const payload = (...changes: unknown[]) => ({ object: "whatsapp_business_account", entry: [{ id: "waba1", changes }] });

afterEach(() => {
  vi.restoreAllMocks();
});

describe("an operator payload split into what we apply", () => {
  it("is nothing when it is not an operator payload at all", () => {
    expect(splitPayload(null)).toBeNull();
    expect(splitPayload({ entry: "x" })).toBeNull();
    expect(splitPayload({ entry: [] })).toEqual([]);
  });

  it("gives each status and message its number; a number id sent as a JSON number reads as its digits", () => {
    const value = {
      metadata: { phone_number_id: 1234567890 },
      statuses: [{ id: "s1" }, { id: "s2" }],
      messages: [{ id: "m1", from: "5511" }],
      contacts: [{ wa_id: "5511", profile: { name: "A" } }],
    };
    expect(splitPayload(payload(change("messages", value)))).toEqual([
      { kind: "status", phoneNumberId: "1234567890", status: { id: "s1" } },
      { kind: "status", phoneNumberId: "1234567890", status: { id: "s2" } },
      {
        kind: "message",
        phoneNumberId: "1234567890",
        message: { id: "m1", from: "5511" },
        contact: { wa_id: "5511", profile: { name: "A" } },
      },
    ]);
  });

  it("routes quality, account and template changes by field, with the entry's id; other fields are named", () => {
    const items = splitPayload(
      payload(
        change("phone_number_quality_update", { q: 1 }),
        change("account_update", { a: 1 }),
        change("message_template_status_update", { t: 1 }),
        change("standby", { metadata: { phone_number_id: "42" } }),
      ),
    );
    expect(items).toEqual([
      { kind: "quality", wabaId: "waba1", update: { q: 1 } },
      { kind: "account", wabaId: "waba1", update: { a: 1 } },
      { kind: "template", wabaId: "waba1", update: { t: 1 } },
      { kind: "field", wabaId: "waba1", phoneNumberId: "42", field: "standby" },
    ]);
  });

  it("reads a change without a field as messages, and passes on a change's errors even without a number", () => {
    const items = splitPayload(
      payload(change(undefined, { metadata: { phone_number_id: "7" }, statuses: [{ id: "s" }] }), {
        field: "messages",
        value: { errors: [{ code: 131000 }] },
      }),
    );
    expect(items).toEqual([
      { kind: "status", phoneNumberId: "7", status: { id: "s" } },
      { kind: "errors", wabaId: "waba1", phoneNumberId: null, errors: [{ code: 131000 }] },
    ]);
  });

  it("skips what it cannot read or apply, logs how much (never content), and keeps the siblings", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const items = splitPayload({
      entry: [
        "not an entry",
        {
          id: 99,
          changes: [
            "not a change",
            change("messages", { statuses: "not a list" }),
            change("messages", { statuses: [{ id: "secret text" }] }),
            change("messages", { metadata: { phone_number_id: "1" }, statuses: [{ id: "kept" }] }),
          ],
        },
      ],
    });
    expect(items).toEqual([{ kind: "status", phoneNumberId: "1", status: { id: "kept" } }]);
    expect(warn).toHaveBeenCalledTimes(1);
    const line = JSON.parse(String(warn.mock.calls[0]?.[0])) as Record<string, unknown>;
    expect(line).toMatchObject({ entries: 1, changes: 1, values: 1, withoutNumber: 1, wabaIds: "99" });
    expect(JSON.stringify(line)).not.toContain("secret text");
  });
});

describe("the sender's contact of a message", () => {
  const value = (messages: unknown[], contacts: unknown[]) => ({
    metadata: { phone_number_id: "1" },
    messages,
    contacts,
  });
  const contactsOf = (v: unknown) =>
    (splitPayload(payload(change("messages", v))) ?? []).map((i) => (i.kind === "message" ? i.contact : "?"));

  it("is the contact naming its phone number or its user id, compared as text", () => {
    const byPhone = { wa_id: 5511, profile: { name: "P" } };
    const byUser = { user_id: "US.123", profile: { name: "U" } };
    expect(contactsOf(value([{ from: "5511" }, { from_user_id: "US.123" }], [byUser, byPhone]))).toEqual([
      byPhone,
      byUser,
    ]);
  });

  it("is the only contact of a payload of one message that names no sender, and none otherwise", () => {
    const only = { profile: { name: "O" } };
    expect(contactsOf(value([{ id: "m" }], [only]))).toEqual([only]);
    expect(contactsOf(value([{ id: "m1" }, { id: "m2" }], [only]))).toEqual([undefined, undefined]);
    expect(contactsOf(value([{ from: "" }], [{ wa_id: "" }, { wa_id: "9" }]))).toEqual([undefined]);
  });
});

describe("the operator's times", () => {
  it("are unix seconds as a string or a number; anything else is the fallback", () => {
    expect(operatorTime("1749416383", 0)).toBe(1_749_416_383_000);
    expect(operatorTime(1749416383, 0)).toBe(1_749_416_383_000);
    expect(operatorTime(undefined, 7)).toBe(7);
    expect(operatorTime("soon", 7)).toBe(7);
    expect(operatorTime("0", 7)).toBe(7);
    expect(operatorTime(-5, 7)).toBe(7);
  });
});
