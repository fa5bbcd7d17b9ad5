import { describe, expect, it } from "vitest";
import { ApiError } from "../src/index.js";
import { baseUrl, createTenant } from "./helpers/tenant.js";

// client.v2 against the Worker: a template sent from a sandbox number to someone who never
// wrote to it (outside the 24-hour window, where text is refused), and the number's templates.

/** Not a test contact and never wrote: the sandbox refuses it free-form text, not templates. */
const STRANGER = "5511955554444";

describe("client.v2 against the Worker", () => {
  it("sends a template outside the window and reads it back as a template message", async () => {
    const t = await createTenant();
    const client = t.client();
    const sent = await client.v2.messages.send({
      channelNumberId: t.numberId,
      to: STRANGER,
      type: "template",
      template: {
        name: "appointment_reminder",
        language: "en_US",
        parameters: { body: { first_name: "Ana", date: "May 2", time: "10:00" } },
      },
    });
    expect(sent.status).toBe("created");
    const message = await client.v2.messages.get(sent.jobId);
    expect(message).toMatchObject({
      id: sent.jobId,
      type: "template",
      to: STRANGER,
      text: { body: "Hello Ana, see you on May 2 at 10:00." },
      template: { name: "appointment_reminder", language: "en_US", category: "UTILITY", parameterFormat: "NAMED" },
    });
    const templates = await client.v2.messages.list({ type: "template" }).toArray();
    expect(templates.map((m) => m.id)).toEqual([sent.jobId]);
    // v1 reads the same message, and its client is unchanged.
    expect((await client.messages.get(sent.jobId)).id).toBe(sent.jobId);
  });

  it("a template that does not fit is refused before anything is queued, naming the field", async () => {
    const t = await createTenant();
    const client = t.client();
    const refused = await client.v2.messages
      .send({
        channelNumberId: t.numberId,
        to: STRANGER,
        type: "template",
        template: { name: "order_update", language: "en_US", parameters: { body: ["Ana"] } },
      })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 400, code: "template_parameters_invalid" });
    expect((refused as ApiError).details.map((d) => d.path)).toContain("template.parameters.body");
    const paused = await client.v2.messages
      .send({
        channelNumberId: t.numberId,
        to: STRANGER,
        type: "template",
        template: { name: "spring_sale", language: "en_US", parameters: { body: ["20%"] } },
      })
      .catch((e: unknown) => e);
    expect(paused).toMatchObject({ status: 400, code: "template_paused" });
    expect(await client.v2.messages.list({ type: "template" }).toArray()).toEqual([]);
  });

  it("lists the number's templates and gets one by name", async () => {
    const t = await createTenant();
    // A base URL given with v1's root still reaches v2.
    const client = t.client({ baseUrl: `${baseUrl}/api/v1` });
    const all = await client.v2.templates.list({ channelNumberId: t.numberId, limit: 2 }).toArray();
    expect(all.map((x) => `${x.name} ${x.language} ${x.status}`)).toEqual([
      "appointment_reminder en_US APPROVED",
      "order_update en_US APPROVED",
      "order_update pt_BR APPROVED",
      "spring_sale en_US PAUSED",
    ]);
    expect(all[0]).toMatchObject({ parameterFormat: "NAMED", source: "sandbox", channelNumberIds: [t.numberId] });
    const approved = await client.v2.templates.list({ status: "APPROVED", language: "pt_BR" }).toArray();
    expect(approved.map((x) => x.name)).toEqual(["order_update"]);
    const one = await client.v2.templates.get("order_update");
    expect(one.translations.map((x) => x.language)).toEqual(["en_US", "pt_BR"]);
    expect(one.translations[0]!.body.parameters).toEqual(["1", "2", "3"]);
    const unknown = await client.v2.templates.get("no_such_template").catch((e: unknown) => e);
    expect(unknown).toMatchObject({ status: 404, code: "not_found" });
  });
});
