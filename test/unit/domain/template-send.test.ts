import { describe, expect, it } from "vitest";
import { normalizeTemplate, OperatorTemplate, placeholdersOf, type StoredTemplate } from "../../../src/domain/template";
import { PARAMETER_LIMITS, prepareTemplate, templateSendContent } from "../../../src/domain/template-send";
import { MAX_BODY_CODE_POINTS } from "../../../src/messages/content";

// The pure parts of a template send: reading the operator's template, and fitting a request's
// parameters to it (the operator's payload, the rendered text, or the details of what is wrong).

const template = (raw: Record<string, unknown>): StoredTemplate => ({
  ...normalizeTemplate(
    OperatorTemplate.parse({ name: "t", language: "en_US", status: "APPROVED", category: "UTILITY", ...raw }),
  )!,
  account: "waba",
  syncedAt: null,
});

describe("placeholders", () => {
  it("are listed once each; positional ones by number, named ones in order of appearance", () => {
    expect(placeholdersOf("{{2}} and {{1}} and {{2}} and {{10}}", "POSITIONAL")).toEqual(["1", "2", "10"]);
    expect(placeholdersOf("{{ b }} {{a}} {{b}}", "NAMED")).toEqual(["b", "a"]);
  });
});

describe("normalizeTemplate", () => {
  it("keeps what a send fills in and drops the rest; a template without a body is not kept", () => {
    const t = template({
      parameter_format: "NAMED",
      components: [
        { type: "HEADER", format: "TEXT", text: "Hi {{name}}", example: { header_text_named_params: [] } },
        { type: "BODY", text: "Order {{order}} ships {{day}}." },
        { type: "FOOTER", text: "Reply STOP" },
        {
          type: "BUTTONS",
          buttons: [
            { type: "PHONE_NUMBER", text: "Call", phone_number: "+15550001111" },
            { type: "URL", text: "Track", url: "https://x.test/{{1}}" },
          ],
        },
      ],
    });
    expect(t.spec).toEqual({
      header: { format: "TEXT", text: "Hi {{name}}", params: ["name"] },
      body: { text: "Order {{order}} ships {{day}}.", params: ["order", "day"] },
      footer: "Reply STOP",
      buttons: [
        { index: 0, type: "PHONE_NUMBER", text: "Call", url: null, params: [] },
        { index: 1, type: "URL", text: "Track", url: "https://x.test/{{1}}", params: ["1"] },
      ],
    });
    expect(
      normalizeTemplate(
        OperatorTemplate.parse({ name: "x", language: "en", status: "APPROVED", category: "UTILITY", components: [] }),
      ),
    ).toBeNull();
  });
});

describe("prepareTemplate", () => {
  it("builds the operator's components (named parameters carry their names) and the rendered text", () => {
    const t = template({
      parameter_format: "NAMED",
      components: [
        { type: "HEADER", format: "TEXT", text: "Hi {{name}}" },
        { type: "BODY", text: "Order {{order}} ships {{day}}." },
        { type: "BUTTONS", buttons: [{ type: "URL", text: "Track", url: "https://x.test/{{1}}" }] },
      ],
    });
    const p = prepareTemplate(t, {
      name: "t",
      language: "en_US",
      parameters: { header: "Ana", body: { day: "Friday", order: "#7" }, buttons: [{ index: 0, value: "7" }] },
    });
    expect(p).toEqual({
      ok: true,
      payload: {
        name: "t",
        language: { code: "en_US" },
        components: [
          { type: "header", parameters: [{ type: "text", text: "Ana", parameter_name: "name" }] },
          {
            type: "body",
            parameters: [
              { type: "text", text: "#7", parameter_name: "order" },
              { type: "text", text: "Friday", parameter_name: "day" },
            ],
          },
          { type: "button", sub_type: "url", index: "0", parameters: [{ type: "text", text: "7" }] },
        ],
      },
      rendered: "Hi Ana\n\nOrder #7 ships Friday.",
      facts: { name: "t", language: "en_US", category: "UTILITY", parameterFormat: "NAMED" },
    });
  });

  it("allows the operator's longer body value only when the body is the whole template, counting code points", () => {
    const alone = template({ components: [{ type: "BODY", text: "{{1}}" }] });
    const withFooter = template({
      components: [
        { type: "BODY", text: "{{1}}" },
        { type: "FOOTER", text: "f" },
      ],
    });
    const long = "😀".repeat(PARAMETER_LIMITS.body + 1);
    expect(prepareTemplate(alone, { name: "t", language: "en_US", parameters: { body: [long] } }).ok).toBe(true);
    // Whatever the operator allows, the rendered text is bounded like a text message's body.
    expect(
      prepareTemplate(alone, {
        name: "t",
        language: "en_US",
        parameters: { body: ["😀".repeat(MAX_BODY_CODE_POINTS + 1)] },
      }),
    ).toEqual({ ok: false, details: [expect.objectContaining({ path: "template.parameters", rule: "max" })] });
    expect(prepareTemplate(withFooter, { name: "t", language: "en_US", parameters: { body: [long] } })).toEqual({
      ok: false,
      details: [expect.objectContaining({ path: "template.parameters.body.0", rule: "max" })],
    });
    expect(
      prepareTemplate(withFooter, {
        name: "t",
        language: "en_US",
        parameters: { body: ["😀".repeat(PARAMETER_LIMITS.body)] },
      }).ok,
    ).toBe(true);
  });

  it("refuses a value for a button or header that takes none, and a button the template does not have", () => {
    const t = template({
      components: [
        { type: "BODY", text: "Hello" },
        { type: "BUTTONS", buttons: [{ type: "PHONE_NUMBER", text: "Call" }] },
      ],
    });
    const p = prepareTemplate(t, {
      name: "t",
      language: "en_US",
      parameters: {
        header: "x",
        buttons: [
          { index: 0, value: "a" },
          { index: 3, value: "b" },
        ],
      },
    });
    expect(p.ok ? [] : p.details.map((d) => `${d.path} ${d.rule}`)).toEqual([
      "template.parameters.header not_expected",
      "template.parameters.buttons.0 not_expected",
      "template.parameters.buttons.3 unknown",
    ]);
  });
});

describe("templateSendContent", () => {
  it("records the rendered text, the operator payload and the facts; refuses by status", () => {
    const t = template({ components: [{ type: "BODY", text: "Hi {{1}}" }] });
    const ok = templateSendContent([t], { name: "t", language: "en_US", parameters: { body: ["Ana"] } }, true);
    expect(ok).toEqual({
      type: "template",
      body: "Hi Ana",
      content: JSON.stringify({
        name: "t",
        language: { code: "en_US" },
        components: [{ type: "body", parameters: [{ type: "text", text: "Ana" }] }],
      }),
      details: JSON.stringify({
        template: { name: "t", language: "en_US", category: "UTILITY", parameterFormat: "POSITIONAL" },
      }),
    });
    const code = (status: string) => {
      const r = templateSendContent([{ ...t, status }], { name: "t", language: "en_US" }, true);
      return "refused" in r ? r.refused.code : null;
    };
    expect([code("PAUSED"), code("REJECTED"), code("DISABLED"), code("PENDING")]).toEqual([
      "template_paused",
      "template_not_approved",
      "template_not_approved",
      "template_not_approved",
    ]);
  });
});
