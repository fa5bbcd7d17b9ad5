import { z } from "@hono/zod-openapi";
import { OUTBOUND_KINDS_V2 } from "./content";
import { InboundMessage, OutboundMessage, type Message } from "./message";
import { isOutbound, toMessageView, type MessageRow } from "./record";
import { MEDIA_CONTENT } from "./kinds/media";
import { InteractiveContent } from "./kinds/interactive";
import { LocationContent } from "./kinds/location";
import { ContactsContent } from "./kinds/contacts";
import { ReactionContent } from "./kinds/reaction";

// The message as API v2 shows it: v1's view (messages/message.ts, which v1's document and events
// keep) with v2's types, and each rich kind's fields under its type's name, as they were sent.

const KIND_VIEWS = {
  ...MEDIA_CONTENT,
  interactive: InteractiveContent,
  location: LocationContent,
  contacts: ContactsContent,
  reaction: ReactionContent,
} as const;
const RICH_KINDS = Object.keys(KIND_VIEWS) as (keyof typeof KIND_VIEWS)[];
const onlyFor = (kind: string) => `\`type: ${kind}\` only: what was sent.`;

export const OutboundMessageV2 = OutboundMessage.extend({
  type: z.enum(OUTBOUND_KINDS_V2).openapi({
    description:
      "`text`, `template`, or a rich message's type; its `text.body` is a summary for what shows text only " +
      '(`"[image] caption"`, `"[reaction] 👍"`), and its fields are under the type\'s name.',
  }),
  image: MEDIA_CONTENT.image.optional().openapi({ description: onlyFor("image") }),
  video: MEDIA_CONTENT.video.optional().openapi({ description: onlyFor("video") }),
  audio: MEDIA_CONTENT.audio.optional().openapi({ description: onlyFor("audio") }),
  document: MEDIA_CONTENT.document.optional().openapi({ description: onlyFor("document") }),
  sticker: MEDIA_CONTENT.sticker.optional().openapi({ description: onlyFor("sticker") }),
  interactive: InteractiveContent.optional().openapi({ description: onlyFor("interactive") }),
  location: LocationContent.optional().openapi({ description: onlyFor("location") }),
  contacts: ContactsContent.optional().openapi({ description: onlyFor("contacts") }),
  reaction: ReactionContent.optional().openapi({ description: onlyFor("reaction") }),
}).openapi("OutboundMessageV2");
export type OutboundMessageV2 = z.infer<typeof OutboundMessageV2>;

export const MessageV2 = z.discriminatedUnion("direction", [OutboundMessageV2, InboundMessage]).openapi("MessageV2");
export type MessageV2 = z.infer<typeof MessageV2>;

export const MessageListV2 = z
  .object({ data: z.array(MessageV2), nextCursor: z.string().nullable() })
  .openapi("MessageListV2");

const parse = (json: string | null): unknown => {
  if (json === null) return undefined;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
};

/**
 * What a rich kind's view shows: the request's object as its `details` kept it, or the `content`
 * itself for the kinds whose operator object is in the request's words (media, location).
 */
function kindFieldOf(row: MessageRow): unknown {
  const details = parse(row.details);
  if (details && typeof details === "object" && row.type in details)
    return (details as Record<string, unknown>)[row.type];
  return parse(row.content);
}

/** A record as API v2 shows it: v1's view, with a rich message's type and fields. */
export function toMessageViewV2(row: MessageRow): MessageV2 {
  const view: Message = toMessageView(row);
  if (view.direction !== "outbound" || !isOutbound(row)) return view;
  const kind = RICH_KINDS.find((k) => k === row.type);
  if (!kind) return view;
  // Read back through its schema: a record of another shape shows no fields rather than wrong ones.
  const fields = KIND_VIEWS[kind].safeParse(kindFieldOf(row));
  return { ...view, type: kind, ...(fields.success ? { [kind]: fields.data } : {}) };
}
