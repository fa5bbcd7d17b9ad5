import type { components } from "./generated/openapi-v2.js";

// One builder per kind of a v2 send: the wire type (SendMessageRequestV2) has every kind's object
// as an optional field; a builder's result has exactly its own, so a kind without its content,
// or with another kind's, does not compile.

type Schemas = components["schemas"];
type SendMessageInputV2 = Schemas["SendMessageRequestV2"];

/** A kind of v2 message: `text`, `template`, `image`, … `reaction`. */
export type MessageKindV2 = NonNullable<SendMessageInputV2["type"]>;

/** Who a message goes to: one of your numbers, and the recipient's phone (`to`) or user id (`toUserId`). */
export type RecipientV2 = { channelNumberId: string } & (
  { to: string; toUserId?: never } | { toUserId: string; to?: never }
);

/** A v2 send of one kind: its `type` and the object of that name (what `messageV2.<kind>` builds). */
export type SendMessageOfKind<K extends MessageKindV2> = RecipientV2 & { type: K } & {
  [F in K]-?: NonNullable<SendMessageInputV2[F]>;
};

export type ImageContent = Schemas["ImageContent"];
export type VideoContent = Schemas["VideoContent"];
export type AudioContent = Schemas["AudioContent"];
export type DocumentContent = Schemas["DocumentContent"];
export type StickerContent = Schemas["StickerContent"];
/** Reply buttons (`type: "button"`), a list (`"list"`) or a call-to-action URL button (`"cta_url"`). */
export type InteractiveContent = Schemas["InteractiveContent"];
export type LocationContent = Schemas["LocationContent"];
/** One or more contact cards. */
export type ContactsContent = Schemas["ContactsContent"];
/** An emoji on an inbound message (by our id); `""` removes it. */
export type ReactionContent = Schemas["ReactionContent"];

/**
 * Builders of v2 sends, one per kind, each typed by its own schema:
 * `client.v2.messages.send(messageV2.image({ channelNumberId, to }, { link, caption }))`.
 * They only shape the request; the API checks it (a 400 names each rule).
 */
export const messageV2 = {
  text: (recipient: RecipientV2, body: string): SendMessageOfKind<"text"> => ({
    ...recipient,
    type: "text",
    text: { body },
  }),
  template: (recipient: RecipientV2, template: Schemas["TemplateContent"]): SendMessageOfKind<"template"> => ({
    ...recipient,
    type: "template",
    template,
  }),
  image: (recipient: RecipientV2, image: ImageContent): SendMessageOfKind<"image"> => ({
    ...recipient,
    type: "image",
    image,
  }),
  video: (recipient: RecipientV2, video: VideoContent): SendMessageOfKind<"video"> => ({
    ...recipient,
    type: "video",
    video,
  }),
  audio: (recipient: RecipientV2, audio: AudioContent): SendMessageOfKind<"audio"> => ({
    ...recipient,
    type: "audio",
    audio,
  }),
  document: (recipient: RecipientV2, document: DocumentContent): SendMessageOfKind<"document"> => ({
    ...recipient,
    type: "document",
    document,
  }),
  sticker: (recipient: RecipientV2, sticker: StickerContent): SendMessageOfKind<"sticker"> => ({
    ...recipient,
    type: "sticker",
    sticker,
  }),
  interactive: (recipient: RecipientV2, interactive: InteractiveContent): SendMessageOfKind<"interactive"> => ({
    ...recipient,
    type: "interactive",
    interactive,
  }),
  location: (recipient: RecipientV2, location: LocationContent): SendMessageOfKind<"location"> => ({
    ...recipient,
    type: "location",
    location,
  }),
  contacts: (recipient: RecipientV2, contacts: ContactsContent): SendMessageOfKind<"contacts"> => ({
    ...recipient,
    type: "contacts",
    contacts,
  }),
  reaction: (recipient: RecipientV2, reaction: ReactionContent): SendMessageOfKind<"reaction"> => ({
    ...recipient,
    type: "reaction",
    reaction,
  }),
} satisfies { [K in MessageKindV2]: (recipient: RecipientV2, content: never) => SendMessageOfKind<K> };
