import { z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { issuesToDetails } from "../../../src/lib/validation";

const Body = z.strictObject({
  to: z.string(),
  count: z.number().int().min(1).max(3),
  kind: z.enum(["text", "template"]),
  text: z.strictObject({ body: z.string().min(1) }).optional(),
  tags: z.array(z.string()).optional(),
  code: z
    .string()
    .refine((v) => v.startsWith("x"), { error: "code starts with x.", params: { rule: "prefix" } })
    .optional(),
});

const detailsOf = (data: unknown, prefix?: string) => {
  const parsed = Body.safeParse(data);
  if (parsed.success) throw new Error("expected a failure");
  return issuesToDetails(parsed.error.issues, prefix, data);
};

describe("validation failures as the uniform error's details", () => {
  it("tell a missing field (required) from one of the wrong type (type)", () => {
    expect(detailsOf({ count: "2", kind: "text" })).toEqual([
      { path: "to", rule: "required", message: "This field is required." },
      { path: "count", rule: "type", message: expect.any(String) },
    ]);
    // A field sent as null is there, of the wrong type.
    expect(detailsOf({ to: null, count: 1, kind: "text" })[0]).toMatchObject({ path: "to", rule: "type" });
  });

  it("name bounds, enums and custom rules by their rule, at their full path", () => {
    const details = detailsOf({ to: "1", count: 9, kind: "image", text: { body: "" }, tags: [1], code: "y" });
    expect(details.map((d) => [d.path, d.rule])).toEqual([
      ["count", "max"],
      ["kind", "enum"],
      ["text.body", "min"],
      ["tags.0", "type"],
      ["code", "prefix"],
    ]);
    expect(details.find((d) => d.path === "code")?.message).toBe("code starts with x.");
  });

  it("give each unknown field its own entry, nested ones at their path", () => {
    const details = detailsOf({ to: "1", count: 1, kind: "text", extra: 1, text: { body: "b", colour: "red" } });
    expect(details.sort((a, b) => a.path.localeCompare(b.path))).toEqual([
      { path: "extra", rule: "unknown_field", message: 'Unknown field "extra". Remove it.' },
      { path: "text.colour", rule: "unknown_field", message: 'Unknown field "colour". Remove it.' },
    ]);
  });

  it("prefix the part of the request (query, path, header), and call a whole body (body)", () => {
    expect(detailsOf({ to: "1", count: 1, kind: "text", extra: 1 }, "query")[0]?.path).toBe("query.extra");
    const notAnObject = Body.safeParse("text");
    expect(issuesToDetails(notAnObject.error?.issues ?? [], undefined, "text")).toEqual([
      { path: "(body)", rule: "type", message: expect.any(String) },
    ]);
  });
});
