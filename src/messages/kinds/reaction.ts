import { z } from "@hono/zod-openapi";
import type { OutboundContent } from "../content";

// A reaction: an emoji on a message the user sent (WhatsApp Cloud API, "Reaction messages":
// `{"message_id", "emoji"}`; an empty emoji removes the reaction). The request names the message
// by our id (an inbound message's `id`); the route resolves it to the operator's id before
// anything is queued. The operator refuses a reaction to a message older than 30 days, to one it
// cannot find or to a reaction (131009, after accepting the call), and reports a reaction `sent`
// only, never delivered or read.

/** One emoji: one grapheme with a pictographic, a flag's or a keycap's code point. */
const EMOJI = /\p{Extended_Pictographic}|\p{Regional_Indicator}|\u20E3/u;
const graphemes = (s: string): number =>
  [...new Intl.Segmenter(undefined, { granularity: "grapheme" }).segment(s)].length;

export const ReactionContent = z
  .strictObject(
    {
      messageId: z
        .string({ error: "reaction.messageId must be a string: the id of a message you received." })
        .uuid({ error: "reaction.messageId must be a message id (a UUID) of a message you received." })
        .openapi({ format: "uuid", description: "Our id of the inbound message to react to." }),
      emoji: z
        .string({ error: "reaction.emoji must be a string." })
        .refine((e) => e === "" || (graphemes(e) === 1 && EMOJI.test(e)), {
          error: 'reaction.emoji must be one emoji, or "" to remove the reaction.',
          params: { rule: "emoji" },
        })
        .openapi({ example: "👍", description: 'One emoji; `""` removes the reaction.' }),
    },
    { error: "reaction must be an object with a messageId and an emoji." },
  )
  .openapi("ReactionContent");
export type ReactionContent = z.infer<typeof ReactionContent>;

/** What a reaction records, once its message's operator id (`upstreamMessageId`) is known. */
export function reactionContent(r: ReactionContent, operatorMessageId: string): OutboundContent {
  return {
    type: "reaction",
    body: r.emoji === "" ? "[reaction removed]" : `[reaction] ${r.emoji}`,
    content: JSON.stringify({ message_id: operatorMessageId, emoji: r.emoji }),
    details: JSON.stringify({ reaction: r }),
  };
}
