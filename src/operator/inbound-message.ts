import type { IdentityMove } from "../messages/inbound";
import type { InboundDetails, Referral } from "../messages/inbound-details";
import { isPhoneNumber } from "../messages/recipient";
import { OperatorContact, type OperatorInbound } from "./webhook-payload";

/**
 * Reading an operator message beyond its text: who sent it, what it links to, and what a `system`
 * message changes. Parsing only; where each fact goes is operator-webhook-events.ts's business.
 */

/** The sender of an inbound message. `key` is what records and windows know them by: the phone number, else the user id. */
export interface Sender {
  key: string;
  phone: string | null;
  userId: string | null;
  profileName: string | null;
  username: string | null;
}

/**
 * The sender, from the message and its `contacts[]` entry. An empty `from` / `wa_id` is no phone
 * number (users with a username), and a value that is not digits is not one either (it is kept as
 * the sender's key when nothing else names them). Null when nothing names the sender (then the
 * message is dropped: it cannot be answered or counted).
 */
export function senderOf(m: OperatorInbound, rawContact: unknown): Sender | null {
  const parsed = OperatorContact.safeParse(rawContact);
  const contact = parsed.success ? parsed.data : OperatorContact.parse({});
  const phoneOf = (v: string | undefined) => (v !== undefined && isPhoneNumber(v) ? v : undefined);
  const phone = phoneOf(m.from) ?? phoneOf(contact.wa_id) ?? null;
  // A `system` message about a changed user id names the user by the id the customer knew.
  const userId = m.from_user_id ?? contact.user_id ?? m.system?.previous_user_id ?? null;
  // A `from` of no known shape still names the sender (an operator change must not drop messages).
  const key = phone ?? userId ?? m.from ?? contact.wa_id ?? null;
  if (key === null) return null;
  return {
    key,
    phone,
    userId,
    profileName: contact.profile?.name ?? null,
    username: contact.profile?.username ?? null,
  };
}

const REFERRAL_FIELDS: Record<keyof Referral, string> = {
  sourceType: "source_type",
  sourceId: "source_id",
  sourceUrl: "source_url",
  headline: "headline",
  body: "body",
  mediaType: "media_type",
  imageUrl: "image_url",
  videoUrl: "video_url",
  thumbnailUrl: "thumbnail_url",
  ctwaClid: "ctwa_clid",
};

function referralOf(raw: Record<string, unknown>): Partial<Referral> {
  const out: Partial<Referral> = {};
  for (const [ours, theirs] of Object.entries(REFERRAL_FIELDS) as [keyof Referral, string][]) {
    const v = raw[theirs];
    if (typeof v === "string" && v !== "") out[ours] = v;
  }
  return out;
}

/**
 * What the record keeps beyond the content (messages/inbound-details.ts): the sender's user id and
 * profile, and the operator ids of what the message replies or reacts to (the workspace resolves
 * them to ours when it records the message).
 */
export function detailsOf(m: OperatorInbound, sender: Sender): InboundDetails {
  const d: InboundDetails = {};
  if (sender.userId !== null) d.fromUserId = sender.userId;
  if (sender.profileName !== null) d.profileName = sender.profileName;
  if (sender.username !== null) d.username = sender.username;
  if (m.context?.id) d.replyTo = { upstreamMessageId: m.context.id };
  if (m.context?.frequently_forwarded) d.forwarded = "frequently_forwarded";
  else if (m.context?.forwarded) d.forwarded = "forwarded";
  // The operator removes a reaction with no emoji, or an empty one: both are stored as null.
  if (m.type === "reaction" && m.reaction?.message_id)
    d.reaction = { upstreamMessageId: m.reaction.message_id, emoji: m.reaction.emoji || null };
  if (m.referral) d.referral = referralOf(m.referral);
  if (m.type === "system" && m.system) {
    d.system = {
      type: m.system.type ?? "unknown",
      body: m.system.body ?? null,
      previousPhone: sender.phone,
      previousUserId: m.system.previous_user_id ?? sender.userId,
      newPhone: m.system.wa_id !== undefined && isPhoneNumber(m.system.wa_id) ? m.system.wa_id : null,
      newUserId: m.system.user_id ?? null,
    };
  }
  return d;
}

/** The ids a `system` message says the user left, each with the one that replaces it. */
export function movesOf(details: InboundDetails, at: number): IdentityMove[] {
  const c = details.system;
  if (!c) return [];
  const moves: IdentityMove[] = [];
  if (c.previousPhone && c.newPhone && c.previousPhone !== c.newPhone)
    moves.push({ from: c.previousPhone, to: c.newPhone, at });
  if (c.previousUserId && c.newUserId && c.previousUserId !== c.newUserId)
    moves.push({ from: c.previousUserId, to: c.newUserId, at });
  return moves;
}

/**
 * The operator's payload of a non-text message, as an object: its part named by the type, unchanged,
 * or wrapped under the type's name when that part is not an object (`contacts` is a list).
 */
export function contentOf(type: string, rest: Record<string, unknown>): Record<string, unknown> | null {
  if (type === "text") return null;
  const part = rest[type];
  if (part === undefined) return rest;
  return part !== null && typeof part === "object" && !Array.isArray(part)
    ? (part as Record<string, unknown>)
    : { [type]: part };
}
