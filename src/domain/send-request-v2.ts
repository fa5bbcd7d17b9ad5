import { z } from "@hono/zod-openapi";
import type { OutboundContent } from "../messages/content";
import { exactlyOneRecipient, SendMessageRequest, TextContent } from "./send-request";
import { TemplateContent } from "./template-send";

const { channelNumberId, to, toUserId } = SendMessageRequest.shape;

/**
 * `POST /api/v2/messages`: v1's send (same fields and rules) plus `type: "template"` with its
 * `template`. A text send reads exactly as in v1, and binds its Idempotency-Key the same way.
 */
export const SendMessageRequestV2 = z
  .strictObject(
    {
      channelNumberId,
      to,
      toUserId,
      type: z
        .enum(["text", "template"], { error: 'type must be "text" or "template".' })
        .default("text")
        .openapi({ description: "`text` (the default) or `template`." }),
      text: TextContent.optional().openapi({ description: "Required for `type: text`; not allowed otherwise." }),
      template: TemplateContent.optional().openapi({
        description: "Required for `type: template`; not allowed otherwise.",
      }),
    },
    { error: "The body must be a JSON object." },
  )
  .superRefine((r, ctx) => {
    exactlyOneRecipient(r, ctx);
    const need = r.type === "template" ? "template" : "text";
    const other = need === "template" ? "text" : "template";
    if (r[need] === undefined)
      ctx.addIssue({
        code: "custom",
        path: [need],
        message: `This field is required for type "${r.type}".`,
        params: { rule: "required" },
      });
    if (r[other] !== undefined)
      ctx.addIssue({
        code: "custom",
        path: [other],
        message: `${other} is not allowed with type "${r.type}".`,
        params: { rule: "not_allowed" },
      });
  })
  .openapi("SendMessageRequestV2", {
    description:
      "Exactly one of `to` and `toUserId`. `type: text` (the default) with `text`, as in v1; or `type: template` with `template`.",
  });
export type SendMessageRequestV2 = z.infer<typeof SendMessageRequestV2>;

/**
 * What a v2 send records when nothing needs looking up: every kind but a template, which is
 * checked against the number's templates first (null).
 */
export function ownContentOf(request: SendMessageRequestV2): OutboundContent | null {
  // The schema guarantees `text` for type text and `template` for type template.
  if (request.type === "template" && request.template) return null;
  return { type: "text", body: request.text?.body ?? "", content: null, details: null };
}
