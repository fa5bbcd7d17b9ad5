import { z } from "@hono/zod-openapi";
import { OUTBOUND_KINDS_V2 } from "./content";
import { InboundMessage, OutboundMessage, type Message } from "./message";
import { isOutbound, toMessageView, type MessageRow } from "./record";
import { MESSAGE_STATUSES_V2, statusV2Of } from "./status";
import { MEDIA_CONTENT } from "./kinds/media";
import { InteractiveContent } from "./kinds/interactive";
import { LocationContent } from "./kinds/location";
import { ContactsContent } from "./kinds/contacts";
import { ReactionContent } from "./kinds/reaction";
import { INBOUND_V2_FIELDS, inboundV2FieldsOf } from "./inbound-v2";

// The message as API v2 shows it: v1's view (messages/message.ts, which v1's document and events
// keep) with v2's types, v2's statuses (`delivered` and `read` of their own), and each rich kind's
// fields under its type's name, as they were sent.

const KIND_VIEWS = {
  ...MEDIA_CONTENT,
  interactive: InteractiveContent,
  location: LocationContent,
  contacts: ContactsContent,
  reaction: ReactionContent,
} as const;
const RICH_KINDS = Object.keys(KIND_VIEWS) as (keyof typeof KIND_VIEWS)[];
const onlyFor = (kind: string) => `\`type: ${kind}\` only: what was sent.`;

// v1's fields spread into a new object rather than `.extend`ed: an extended schema is documented as
// `allOf` with v1's, whose narrower enums (`type`, `status`) would then refuse v2's values.
export const OutboundMessageV2 = z
  .object({
    ...OutboundMessage.shape,
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
    status: z.enum(MESSAGE_STATUSES_V2).openapi({
      description:
        "`queued` → `processing` → `sent` → `delivered` → `read`, or `failed`. `sent`: the operator accepted the message; " +
        "`delivered` and `read`: the operator reported it so. A read report that comes before the delivery report makes it " +
        "`read` at once (and sets `deliveredAt`: a read message was delivered). If the operator reports that it could not " +
        "deliver a sent message, it becomes `failed` (with `error`); `failed` is final: a delivery or read reported after a " +
        "failure (a user on several devices) is recorded in `deliveredAt` / `readAt`, the status stays `failed`.",
    }),
    deliveredAt: z.string().datetime().nullable().openapi({
      description: "When the operator reported delivery; its read time if it reported the message read first.",
    }),
    reaction: ReactionContent.optional().openapi({ description: onlyFor("reaction") }),
  })
  .openapi("OutboundMessageV2");
export type OutboundMessageV2 = z.infer<typeof OutboundMessageV2>;

/** An inbound message in v2: v1's view, with the user's answer to your buttons or list and your read mark. */
export const InboundMessageV2 = z.object({ ...InboundMessage.shape, ...INBOUND_V2_FIELDS }).openapi("InboundMessageV2");
export type InboundMessageV2 = z.infer<typeof InboundMessageV2>;

export const MessageV2 = z.discriminatedUnion("direction", [OutboundMessageV2, InboundMessageV2]).openapi("MessageV2");
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

/**
 * A message's v2 view from its v1 view (a view, not a record: an archived day keeps its messages
 * as v1 showed them): `delivered` and `read` as statuses, and the delivery a read report implies;
 * an inbound message's answer (read from its content). A v1 view has no read mark: it reads as none.
 */
export function withStatusV2(m: Message): MessageV2 {
  if (m.direction === "inbound") return { ...m, ...inboundV2FieldsOf(m, { read_at: null, details: null }) };
  return { ...m, status: statusV2Of(m), deliveredAt: m.deliveredAt ?? m.readAt };
}

/**
 * A record as API v2 shows it: v1's view, with v2's status and a rich message's type and fields;
 * an inbound message's answer and read mark (inbound-v2.ts). `v1`: the record's v1 view, when the
 * caller has it already (the archive writes both).
 */
export function toMessageViewV2(row: MessageRow, v1: Message = toMessageView(row)): MessageV2 {
  if (v1.direction === "inbound") return { ...v1, ...inboundV2FieldsOf(v1, row) };
  const view = withStatusV2(v1);
  if (view.direction !== "outbound" || !isOutbound(row)) return view;
  const kind = RICH_KINDS.find((k) => k === row.type);
  if (!kind) return view;
  // Read back through its schema: a record of another shape shows no fields rather than wrong ones.
  const fields = KIND_VIEWS[kind].safeParse(kindFieldOf(row));
  return { ...view, type: kind, ...(fields.success ? { [kind]: fields.data } : {}) };
}
