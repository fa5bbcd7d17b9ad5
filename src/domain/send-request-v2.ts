import { z } from "@hono/zod-openapi";
import { OUTBOUND_KINDS_V2, type OutboundContent } from "../messages/content";
import { exactlyOneRecipient, SendMessageRequest, TextContent } from "./send-request";
import { TemplateContent } from "./template-send";
import { MEDIA_CONTENT, MEDIA_KINDS, mediaContent, type MediaKind } from "../messages/kinds/media";
import { InteractiveContent, interactiveContent } from "../messages/kinds/interactive";
import { LocationContent, locationContent } from "../messages/kinds/location";
import { ContactsContent, contactsContent } from "../messages/kinds/contacts";
import { ReactionContent } from "../messages/kinds/reaction";

const { channelNumberId, to, toUserId } = SendMessageRequest.shape;

const onlyFor = (kind: string) => `Required for \`type: ${kind}\`; not allowed otherwise.`;

/**
 * `POST /api/v2/messages`: v1's send (same fields and rules) plus a `type` and the object of that
 * type under its name: `template`, a media (`image`, `video`, `audio`, `document`, `sticker`, by
 * link), `interactive`, `location`, `contacts` or `reaction`. A text send reads exactly as in v1,
 * and binds its Idempotency-Key the same way. One object (not a union of one per type), so that
 * a missing or misplaced field is named with its rule (`required`, `not_allowed`) whatever the type.
 */
export const SendMessageRequestV2 = z
  .strictObject(
    {
      channelNumberId,
      to,
      toUserId,
      type: z
        .enum(OUTBOUND_KINDS_V2, { error: `type must be one of: ${OUTBOUND_KINDS_V2.join(", ")}.` })
        .default("text")
        .openapi({ description: "`text` (the default), `template`, or the type of a rich message." }),
      text: TextContent.optional().openapi({ description: onlyFor("text") }),
      template: TemplateContent.optional().openapi({ description: onlyFor("template") }),
      image: MEDIA_CONTENT.image.optional().openapi({ description: onlyFor("image") }),
      video: MEDIA_CONTENT.video.optional().openapi({ description: onlyFor("video") }),
      audio: MEDIA_CONTENT.audio.optional().openapi({ description: onlyFor("audio") }),
      document: MEDIA_CONTENT.document.optional().openapi({ description: onlyFor("document") }),
      sticker: MEDIA_CONTENT.sticker.optional().openapi({ description: onlyFor("sticker") }),
      interactive: InteractiveContent.optional().openapi({ description: onlyFor("interactive") }),
      location: LocationContent.optional().openapi({ description: onlyFor("location") }),
      contacts: ContactsContent.optional().openapi({ description: onlyFor("contacts") }),
      reaction: ReactionContent.optional().openapi({ description: onlyFor("reaction") }),
    },
    { error: "The body must be a JSON object." },
  )
  .superRefine((r, ctx) => {
    exactlyOneRecipient(r, ctx);
    for (const kind of OUTBOUND_KINDS_V2) {
      const given = r[kind] !== undefined;
      if (kind === r.type && !given)
        ctx.addIssue({
          code: "custom",
          path: [kind],
          message: `This field is required for type "${r.type}".`,
          params: { rule: "required" },
        });
      if (kind !== r.type && given)
        ctx.addIssue({
          code: "custom",
          path: [kind],
          message: `${kind} is not allowed with type "${r.type}".`,
          params: { rule: "not_allowed" },
        });
    }
  })
  .openapi("SendMessageRequestV2", {
    description:
      "Exactly one of `to` and `toUserId`. `type: text` (the default) with `text`, as in v1; or another `type` with " +
      "the object of that name (`template`, `image`, `video`, `audio`, `document`, `sticker`, `interactive`, " +
      "`location`, `contacts`, `reaction`).",
  });
export type SendMessageRequestV2 = z.infer<typeof SendMessageRequestV2>;

const isMedia = (type: string): type is MediaKind => (MEDIA_KINDS as readonly string[]).includes(type);

/**
 * What a v2 send records when nothing needs looking up; null for a template (checked against the
 * number's templates first), a reaction (its message's operator id is looked up first) and a media
 * send by `mediaId` (its stored file is looked up first).
 */
export function ownContentOf(request: SendMessageRequestV2): OutboundContent | null {
  // The schema guarantees the object named by `type`.
  const { type } = request;
  if (type === "template" || type === "reaction") return null;
  if (isMedia(type)) {
    const media = request[type];
    if (!media) throw new Error(`a validated ${type} send has its ${type}`);
    return media.mediaId === undefined ? mediaContent(type, media) : null;
  }
  if (type === "interactive" && request.interactive) return interactiveContent(request.interactive);
  if (type === "location" && request.location) return locationContent(request.location);
  if (type === "contacts" && request.contacts) return contactsContent(request.contacts);
  return { type: "text", body: request.text?.body ?? "", content: null, details: null };
}

/** Whether a send of this type needs the recipient's 24-hour window open: every kind but a template. */
export const needsOpenWindow = (type: SendMessageRequestV2["type"]): boolean => type !== "template";
