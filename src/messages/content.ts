import { z } from "@hono/zod-openapi";

// The kinds of content an outbound message carries, and how a record keeps each: its `type`, its
// `body` (the text a view, an event and an archive show), its `content` (the operator's payload of
// that kind, JSON) and its `details` (what a view shows of it beside the text, JSON).

/** What a send can carry: free-form text, or a template of the number's business account. */
export const OUTBOUND_KINDS = ["text", "template"] as const;
export type OutboundKind = (typeof OUTBOUND_KINDS)[number];

/**
 * What a v2 send can carry besides: media by link, interactive messages, a location, contact
 * cards and reactions (each kind's request, payload and summary in ./kinds/). v1's views, events
 * and documents keep OUTBOUND_KINDS.
 */
export const OUTBOUND_KINDS_V2 = [
  ...OUTBOUND_KINDS,
  "image",
  "video",
  "audio",
  "document",
  "sticker",
  "interactive",
  "location",
  "contacts",
  "reaction",
] as const;
export type OutboundKindV2 = (typeof OUTBOUND_KINDS_V2)[number];

/** A text's body, and any record's text (a template's rendered one), at most this many Unicode code points. */
export const MAX_BODY_CODE_POINTS = 4096;

/**
 * What a send records and the number sends: the record's `type`, `body` (a text's body, a
 * template's rendered text, another kind's summary), `content` (the operator's object of that
 * kind, JSON) and `details` (what a view shows of it beyond `content`, JSON). A text send has
 * neither of the last two.
 */
export interface OutboundContent {
  type: OutboundKindV2;
  body: string;
  content: string | null;
  details: string | null;
}

/** The operator's `template` object of a send (its own shape: name, language.code, typed components). */
export const OperatorTemplatePayload = z.object({
  name: z.string(),
  language: z.object({ code: z.string() }),
  components: z.array(z.record(z.string(), z.unknown())),
});
export type OperatorTemplatePayload = z.infer<typeof OperatorTemplatePayload>;

/**
 * What the number sends the operator for a record: its type and the object under that type's
 * name (`{"body"}` for a text, the record's `content` for every other kind); null when a record's
 * content cannot be read (it is never sent as something else).
 */
export function operatorPayloadOf(record: {
  type: string;
  body: string;
  content: string | null;
}): { type: string; payload: Record<string, unknown> | unknown[] } | null {
  if (record.type === "text") return { type: "text", payload: { body: record.body } };
  if (record.type === "template") {
    const template = templatePayloadOf(record);
    return template ? { type: "template", payload: template } : null;
  }
  if (record.content === null) return null;
  try {
    const parsed: unknown = JSON.parse(record.content);
    return parsed !== null && typeof parsed === "object"
      ? { type: record.type, payload: parsed as Record<string, unknown> | unknown[] }
      : null;
  } catch {
    return null;
  }
}

/** The operator payload a template record carries in `content` (null for any other record, or one unreadable: logged by the caller's failure). */
export function templatePayloadOf(record: { type: string; content: string | null }): OperatorTemplatePayload | null {
  if (record.type !== "template" || record.content === null) return null;
  const parsed = OperatorTemplatePayload.safeParse(JSON.parse(record.content));
  return parsed.success ? parsed.data : null;
}

/** What a template message's record keeps beside its rendered text (its `details` JSON), and what its views show. */
export const TemplateFacts = z
  .object({
    name: z.string().openapi({ example: "order_update" }),
    language: z.string().openapi({ example: "en_US" }),
    category: z.string().openapi({ example: "UTILITY" }),
    parameterFormat: z.string().openapi({ example: "POSITIONAL" }),
  })
  .openapi("MessageTemplateFacts", {
    description:
      "The template a message was sent with (its `text.body` is the template's text with the parameters filled in).",
  });
export type TemplateFacts = z.infer<typeof TemplateFacts>;

/** A record's template facts (null for a text message, or details of another shape). */
export function templateFactsOf(record: { type: string; details: string | null }): TemplateFacts | null {
  if (record.type !== "template" || record.details === null) return null;
  const parsed = z.object({ template: TemplateFacts }).safeParse(JSON.parse(record.details));
  return parsed.success ? parsed.data.template : null;
}
