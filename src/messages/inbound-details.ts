import { z } from "@hono/zod-openapi";
import { isPhoneNumber } from "./recipient";

/**
 * What an inbound message tells beyond its content: who sent it (user id, profile), what it
 * answers or reacts to, the ad it came from, an identity change. Stored as the record's `details`
 * JSON under these same keys (the view's shape, links already resolved to our ids when the message
 * was recorded), so that the view and every rebuild of its event read the same facts.
 */

const Text = z.string().nullable();

export const ReplyTo = z
  .object({
    messageId: z
      .string()
      .uuid()
      .nullable()
      .openapi({
        description:
          "Our id of the message replied to (a send's `jobId`, or an inbound message's id). Null when it is not among " +
          "the conversation's messages of the last 7 days that we still hold in full (see `upstreamMessageId`).",
      }),
    upstreamMessageId: z.string().openapi({ description: "The operator's id of the message replied to." }),
  })
  .openapi("ReplyTo", { description: "The message this one replies to (quotes)." });
export type ReplyTo = z.infer<typeof ReplyTo>;

export const Reaction = z
  .object({
    messageId: z.string().uuid().nullable().openapi({
      description: "Our id of the message reacted to; null when it is not found, as for `replyTo`.",
    }),
    upstreamMessageId: z.string().openapi({ description: "The operator's id of the message reacted to." }),
    emoji: Text.openapi({ description: "The emoji; null when the user removed their reaction." }),
    // Optional in the schema so that v1's document only gains a field; every view and event has it.
    removed: z.boolean().optional().openapi({
      description:
        "True when the user removed their reaction (the operator sent no emoji, or an empty one; `emoji` is then null).",
    }),
  })
  .openapi("Reaction", { description: "For `type: reaction`: the message reacted to, and the emoji." });
export type Reaction = z.infer<typeof Reaction>;

export const Referral = z
  .object({
    sourceType: Text.openapi({ description: "`ad` or `post`: what the user clicked." }),
    sourceId: Text.openapi({ description: "The operator's id of the ad or post." }),
    sourceUrl: Text.openapi({ description: "Where the ad or post can be seen." }),
    headline: Text,
    body: Text,
    mediaType: Text.openapi({ description: "`image` or `video`, when the ad had one." }),
    imageUrl: Text,
    videoUrl: Text,
    thumbnailUrl: Text,
    ctwaClid: Text.openapi({ description: "The click id of a click-to-chat ad (for conversion reporting)." }),
  })
  .openapi("Referral", {
    description:
      "The ad or post the user clicked to start the conversation (click-to-chat ads). A field the operator left out is null.",
  });
export type Referral = z.infer<typeof Referral>;

export const IdentityChange = z
  .object({
    type: z.string().openapi({
      description:
        "`user_changed_number` (a new phone number, and with it a new user id) or `user_changed_user_id` (a new user id " +
        "only); another value if the operator adds kinds.",
      example: "user_changed_number",
    }),
    body: Text.openapi({ description: "The operator's sentence about the change." }),
    previousPhone: Text,
    previousUserId: Text,
    newPhone: Text,
    newUserId: Text,
  })
  .openapi("IdentityChange", {
    description:
      "A `system` message: the user changed their phone number or user id. Not the user writing: it opens no 24-hour " +
      "window. Sends to the previous phone number or user id go to the new one from then on (for 30 days).",
  });
export type IdentityChange = z.infer<typeof IdentityChange>;

export const FORWARDED = ["forwarded", "frequently_forwarded"] as const;

/** The fields every inbound view and `message.received` event carries beside `from`. */
export const INBOUND_EXTRA_FIELDS = {
  fromUserId: Text.openapi({
    description:
      "The sender's business-scoped user id (e.g. `US.13491208655302741918`) whenever the operator gives one: " +
      "reply to it with `toUserId` when `from` is null.",
  }),
  profileName: Text.openapi({ description: "The sender's profile name, when the operator gives it." }),
  username: Text.openapi({ description: "The sender's username, when they have one." }),
  // A named schema's nullable wrapper takes no metadata of its own: it would replace the component.
  replyTo: ReplyTo.nullable(),
  forwarded: z.enum(FORWARDED).nullable().openapi({
    description: "Set when the user forwarded the message (`frequently_forwarded`: forwarded many times).",
  }),
  reaction: Reaction.nullable(),
  referral: Referral.nullable(),
  system: IdentityChange.nullable(),
};

const StoredDetails = z.object({
  fromUserId: z.string().optional(),
  profileName: z.string().optional(),
  username: z.string().optional(),
  replyTo: ReplyTo.partial({ messageId: true }).optional(),
  forwarded: z.enum(FORWARDED).optional(),
  reaction: Reaction.partial({ messageId: true }).optional(),
  referral: Referral.partial().optional(),
  system: IdentityChange.partial().required({ type: true }).optional(),
});
/** The keys of a record's `details` that this module writes (others, e.g. media, are another module's). */
export type InboundDetails = z.infer<typeof StoredDetails>;

/** The sender's user id of stored details, if any. */
export const userIdOf = (details: Record<string, unknown>): string | undefined => keyOf(details, "fromUserId");

/** The links of stored details (what a message replies or reacts to), each absent when missing or malformed. */
export function linksOf(details: Record<string, unknown>): Pick<InboundDetails, "replyTo" | "reaction"> {
  return { replyTo: keyOf(details, "replyTo"), reaction: keyOf(details, "reaction") };
}

type Extras = { [K in keyof typeof INBOUND_EXTRA_FIELDS]: z.infer<(typeof INBOUND_EXTRA_FIELDS)[K]> };

const nullsOf = <T extends Record<string, unknown>>(keys: readonly (keyof T)[], v: Partial<T>): T =>
  Object.fromEntries(keys.map((k) => [k, v[k] ?? null])) as T;

const REFERRAL_KEYS = Object.keys(Referral.shape) as (keyof Referral)[];
const CHANGE_KEYS = Object.keys(IdentityChange.shape) as (keyof IdentityChange)[];

/** One key of stored details, or absent when missing or not of its shape (one bad key never hides the others). */
function keyOf<K extends keyof InboundDetails>(stored: Record<string, unknown>, key: K): InboundDetails[K] | undefined {
  const parsed = StoredDetails.shape[key].safeParse(stored[key]);
  return parsed.success ? (parsed.data as InboundDetails[K]) : undefined;
}

function storedOf(details: string | null | undefined): Record<string, unknown> {
  if (!details) return {};
  try {
    const v: unknown = JSON.parse(details);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * The sender fields and links of an inbound record's view. `from` is the record's counterpart when
 * it is a phone number; a counterpart that is not (a user without one) is its user id, which also
 * covers records made before user ids were kept in `details`.
 */
export function inboundExtrasOf(
  recipient: string,
  details: string | null | undefined,
): Extras & { from: string | null } {
  const d = storedOf(details);
  const phone = isPhoneNumber(recipient) ? recipient : null;
  const replyTo = keyOf(d, "replyTo");
  const reaction = keyOf(d, "reaction");
  const referral = keyOf(d, "referral");
  const system = keyOf(d, "system");
  return {
    from: phone,
    fromUserId: keyOf(d, "fromUserId") ?? (phone === null && recipient !== "" ? recipient : null),
    profileName: keyOf(d, "profileName") ?? null,
    username: keyOf(d, "username") ?? null,
    replyTo: replyTo ? { messageId: replyTo.messageId ?? null, upstreamMessageId: replyTo.upstreamMessageId } : null,
    forwarded: keyOf(d, "forwarded") ?? null,
    // Removal is read from the emoji (also for records made before `removed` was shown): the
    // operator's removal carries none, and a reaction that has one is never a removal.
    reaction: reaction
      ? {
          messageId: reaction.messageId ?? null,
          upstreamMessageId: reaction.upstreamMessageId,
          emoji: reaction.emoji,
          removed: reaction.emoji === null,
        }
      : null,
    referral: referral ? nullsOf(REFERRAL_KEYS, referral) : null,
    system: system ? nullsOf(CHANGE_KEYS, system) : null,
  };
}
