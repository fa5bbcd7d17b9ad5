import { z } from "@hono/zod-openapi";

/**
 * A user's answer to an interactive message or a template's button, as typed fields (API v2):
 * which button or list row they chose (its id and title), or what they sent back from a Flow.
 * Read from the operator's payload the record keeps as its `content` (inbound-message.ts
 * `contentOf`), so no field of its own is stored and every record, old ones included, shows it.
 * The message it answers is the record's `replyTo` (the operator's `context`), as for a reply.
 */

export const ANSWER_TYPES = ["button_reply", "list_reply", "button", "nfm_reply"] as const;

const Text = z.string().nullable();

export const FlowReply = z
  .object({
    name: Text.openapi({ description: "The operator's name of the reply (`flow` for a Flow).", example: "flow" }),
    body: Text.openapi({ description: "The text the user saw in the chat (`Sent`).", example: "Sent" }),
    response: z
      .record(z.string(), z.unknown())
      .nullable()
      .openapi({
        description:
          "What the Flow sent back (the operator's `response_json`, parsed: its `flow_token` and the Flow's fields); null " +
          "when it is not a JSON object (the operator's text is in `content`).",
        example: { flow_token: "booking-1042", date: "2026-12-01" },
      }),
  })
  .openapi("FlowReply");
export type FlowReply = z.infer<typeof FlowReply>;

export const InboundAnswer = z
  .object({
    type: z.enum(ANSWER_TYPES).openapi({
      description:
        "`button_reply`: a reply button of an interactive message; `list_reply`: a row of a list message; `button`: a " +
        "quick-reply button of a template message; `nfm_reply`: a Flow the user completed.",
      example: "button_reply",
    }),
    id: Text.openapi({
      description: "The chosen button's or row's id, as you sent it; for a template's button, its payload.",
      example: "confirm",
    }),
    title: Text.openapi({
      description: "The chosen button's or row's title; for a template's button, its text.",
      example: "Confirm",
    }),
    description: Text.openapi({ description: "A list row's description, when it had one." }),
    flow: FlowReply.nullable().openapi({ description: "For `nfm_reply`: the Flow's reply." }),
  })
  .openapi("InboundAnswer", {
    description:
      "A user's answer to your buttons, list or Flow (types `interactive` and `button`); the message it answers is " +
      "`replyTo`. A field the operator left out is null.",
  });
export type InboundAnswer = z.infer<typeof InboundAnswer>;

const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
const obj = (v: unknown): Record<string, unknown> | null =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

function parsedObject(json: string | null): Record<string, unknown> | null {
  if (json === null) return null;
  try {
    return obj(JSON.parse(json));
  } catch {
    return null;
  }
}

/**
 * The answer an inbound message of `type` carries in `content` (the operator's part of that type),
 * or null: another type, an interactive reply of a kind not listed, or a part of no readable shape.
 */
export function answerOf(type: string, content: Record<string, unknown> | null): InboundAnswer | null {
  if (content === null) return null;
  const none = { id: null, title: null, description: null, flow: null };
  if (type === "button") {
    // A template's quick-reply button: `{payload, text}`.
    const payload = str(content.payload);
    const text = str(content.text);
    return payload === null && text === null ? null : { ...none, type: "button", id: payload, title: text };
  }
  if (type !== "interactive") return null;
  const kind = content.type;
  if (kind === "button_reply" || kind === "list_reply") {
    const part = obj(content[kind]);
    if (!part) return null;
    return {
      ...none,
      type: kind,
      id: str(part.id),
      title: str(part.title),
      description: kind === "list_reply" ? str(part.description) : null,
    };
  }
  if (kind === "nfm_reply") {
    const part = obj(content.nfm_reply);
    if (!part) return null;
    return {
      ...none,
      type: "nfm_reply",
      flow: { name: str(part.name), body: str(part.body), response: parsedObject(str(part.response_json)) },
    };
  }
  return null;
}
