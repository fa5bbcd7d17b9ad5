import { z } from "zod";
import { log } from "../lib/log";

// The operator's webhook payload, as far as we read it. Unknown fields pass
// through: the operator adds fields over time and must never be refused for it.
// The envelope is read loosely and each status or message is validated on its
// own, so that one malformed item never drops its siblings.

// Read level by level (entries, then each change) so that one malformed entry
// or change never drops the others in the same payload.
const Envelope = z.looseObject({ entry: z.array(z.unknown()) });

/**
 * A Unix time in seconds. The operator's messages webhook reference writes `timestamp` as a string
 * ("1749416383"), its other webhooks write times as integers (`entry.time`, `restriction_info.expiration`),
 * and payloads relayed or re-serialized on the way carry it as a number: both read alike. A value of
 * neither kind reads as absent (the time it arrived), never as a reason to drop the message.
 */
const UnixSeconds = z.union([z.string(), z.number()]).optional().catch(undefined);

/**
 * An id of digits (a phone number, `wa_id`, `phone_number_id`): a string in the operator's reference,
 * and a JSON number once a relay has re-serialized it; read as the same string. Phone numbers (at most
 * 15 digits) and the operator's numeric ids fit a double exactly.
 */
const Digits = z.union([z.string(), z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).transform(String)]);

const Entry = z.looseObject({ id: z.union([z.string(), z.number()]).optional(), changes: z.array(z.unknown()) });
const Change = z.looseObject({ field: z.string().optional(), value: z.unknown() });
const MessagesValue = z.looseObject({
  metadata: z.looseObject({ phone_number_id: Digits }).optional(),
  statuses: z.array(z.unknown()).optional(),
  messages: z.array(z.unknown()).optional(),
  contacts: z.array(z.unknown()).optional(),
  errors: z.array(z.unknown()).optional(),
});

/** An error object of the operator's webhooks: a status's `errors[]`, or a change's `value.errors`. */
export const StatusError = z.looseObject({
  code: z.union([z.number(), z.string()]).optional(),
  title: z.string().optional(),
  message: z.string().optional(),
  error_data: z.looseObject({ details: z.string().optional() }).optional(),
});

export const OperatorStatusReport = z.looseObject({
  id: z.string().min(1),
  status: z.string(),
  timestamp: UnixSeconds,
  recipient_id: Digits.optional().catch(undefined),
  biz_opaque_callback_data: z.string().optional(),
  errors: z.array(StatusError).optional(),
});
export type OperatorStatusReport = z.infer<typeof OperatorStatusReport>;

/** A field the operator may send as an empty string for "none": read as absent. */
const Given = z
  .string()
  .optional()
  .catch(undefined)
  .transform((v) => (v === "" ? undefined : v));

/** As Given, for a phone number, which a relay may have turned into a JSON number. */
const GivenDigits = Digits.optional()
  .catch(undefined)
  .transform((v) => (v === "" ? undefined : v));

/**
 * An inbound message. `from` (the phone number) may be withheld, as an empty string or not at all,
 * for users with a username: `from_user_id` (their business-scoped user id) identifies them then.
 * Whether either is there is decided with the sender's `contacts[]` entry (inbound-message.ts).
 */
export const OperatorInbound = z.looseObject({
  id: z.string().min(1),
  from: GivenDigits,
  from_user_id: Given,
  timestamp: UnixSeconds,
  type: z.string(),
  text: z.looseObject({ body: z.string() }).optional(),
  /** What the message replies to (`id`, `from`), or that it was forwarded. */
  context: z
    .looseObject({
      id: Given,
      from: Given,
      forwarded: z.boolean().optional().catch(undefined),
      frequently_forwarded: z.boolean().optional().catch(undefined),
    })
    .optional()
    .catch(undefined),
  /** The click-to-chat ad or post the user came from. */
  referral: z.record(z.string(), z.unknown()).optional().catch(undefined),
  // `emoji` is kept as sent (an empty one is the user removing the reaction): the record's content is
  // the operator's part unchanged; inbound-message.ts reads "" and absent alike.
  reaction: z
    .looseObject({ message_id: Given, emoji: z.string().optional().catch(undefined) })
    .optional()
    .catch(undefined),
  /** `type: system`: the user changed number (`wa_id` the new one) or user id (`user_id` the new one). */
  system: z
    .looseObject({
      type: Given,
      body: Given,
      wa_id: GivenDigits,
      user_id: Given,
      previous_user_id: Given,
    })
    .optional()
    .catch(undefined),
});
export type OperatorInbound = z.infer<typeof OperatorInbound>;

/** The sender's entry of `contacts[]`: their phone number (`wa_id`), user id and profile. */
export const OperatorContact = z.looseObject({
  wa_id: GivenDigits,
  user_id: Given,
  profile: z.looseObject({ name: Given, username: Given }).optional().catch(undefined),
});
export type OperatorContact = z.infer<typeof OperatorContact>;

/** Short operator words (events, tiers, states): bounded, never free text. */
const Word = z.string().min(1).max(64);

/**
 * `phone_number_quality_update` (the business account's webhook, `entry.id` its WABA id): the number
 * is named by its display number only. `event` is FLAGGED / UNFLAGGED (the quality rating reached
 * Low / left it) or UPGRADE / DOWNGRADE / ONBOARDING (the messaging limit changed); `current_limit`
 * is the tier (TIER_250, TIER_1K, …, TIER_UNLIMITED). Newer versions add `old_limit` and
 * `max_daily_conversation_per_phone_number`; anything else passes through unread.
 */
export const OperatorQualityUpdate = z.looseObject({
  display_phone_number: z.union([z.string(), z.number()]).transform(String),
  event: Word.optional(),
  current_limit: Word.optional(),
  old_limit: Word.optional(),
  max_daily_conversation_per_phone_number: z.number().optional(),
});
export type OperatorQualityUpdate = z.infer<typeof OperatorQualityUpdate>;

/**
 * `account_update`: an event about the whole business account (`entry.id`), e.g.
 * DISABLED_UPDATE with `ban_info`, ACCOUNT_RESTRICTION with `restriction_info`, ACCOUNT_VIOLATION with
 * `violation_info`, ACCOUNT_DELETED, ACCOUNT_OFFBOARDED, PARTNER_REMOVED with `waba_info`.
 */
export const OperatorAccountUpdate = z.looseObject({
  event: Word,
  ban_info: z.looseObject({ waba_ban_state: Word.optional(), waba_ban_date: z.string().max(64).optional() }).optional(),
  // The operator's reference shows `expiration` as a Unix time (an integer); partners relay it as a string.
  restriction_info: z
    .array(
      z.looseObject({
        restriction_type: Word.optional(),
        expiration: z.union([z.number().int().nonnegative(), z.string().max(64)]).optional(),
      }),
    )
    .max(50)
    .optional(),
  violation_info: z.looseObject({ violation_type: Word.optional() }).optional(),
  // PARTNER_* events name the customer's account here (`entry.id` may then be the partner's own).
  waba_info: z
    .looseObject({ waba_id: z.union([z.string().regex(/^\d{1,32}$/), z.number().int()]).optional() })
    .optional(),
});
export type OperatorAccountUpdate = z.infer<typeof OperatorAccountUpdate>;

/**
 * `message_template_status_update` (the business account's webhook, `entry.id` its WABA id): a
 * template's review state changed. `event` is the new state (APPROVED, REJECTED, PAUSED,
 * DISABLED, PENDING_DELETION, …); the template is named by `message_template_name` and
 * `message_template_language`. Other fields (`reason`, `disable_info`, …) pass through unread.
 */
export const OperatorTemplateUpdate = z.looseObject({
  event: Word,
  message_template_name: z.string().min(1).max(512),
  message_template_language: z.string().min(1).max(20).optional(),
});
export type OperatorTemplateUpdate = z.infer<typeof OperatorTemplateUpdate>;

/** One unit of work from an operator payload, queued on its own (a queue message holds at most 128 KB). */
export type OperatorItem =
  | { kind: "status"; phoneNumberId: string; status: unknown }
  /** `contact`: the sender's entry of the payload's `contacts[]` (absent for `system` messages). */
  | { kind: "message"; phoneNumberId: string; message: unknown; contact?: unknown }
  /** A number's quality or limit changed; `wabaId` is the entry's id (null when the operator left it out). */
  | { kind: "quality"; wabaId: string | null; update: unknown }
  | { kind: "account"; wabaId: string | null; update: unknown }
  | { kind: "template"; wabaId: string | null; update: unknown }
  /** `value.errors` of a `messages` change: about the number (or, without its id, the business account), not one message. */
  | { kind: "errors"; wabaId: string | null; phoneNumberId: string | null; errors: unknown[] }
  /** A change of a field this service does not apply (e.g. `standby`): logged and shown on the number's health. */
  | { kind: "field"; wabaId: string | null; phoneNumberId: string | null; field: string };

/** The fields applied here; any other is an OperatorItem of kind `field`. */
const APPLIED_FIELDS = new Set([
  "messages",
  "phone_number_quality_update",
  "account_update",
  "message_template_status_update",
]);

/**
 * Splits a verified payload into its statuses, messages, quality and account
 * updates, the numbers' `errors`, and the changes of other fields; null when it
 * is not an operator payload at all. Entries and changes of no readable shape
 * are skipped, and logged (how many of each, and the WABA ids: never content).
 */
export function splitPayload(raw: unknown): OperatorItem[] | null {
  const parsed = Envelope.safeParse(raw);
  if (!parsed.success) return null;
  const items: OperatorItem[] = [];
  const skipped = { entries: 0, changes: 0, values: 0, withoutNumber: 0, wabaIds: new Set<string>() };
  for (const rawEntry of parsed.data.entry) {
    const entry = Entry.safeParse(rawEntry);
    if (!entry.success) {
      skipped.entries++;
      continue;
    }
    const wabaId = entry.data.id === undefined ? null : String(entry.data.id);
    const skip = (what: "changes" | "values" | "withoutNumber") => {
      skipped[what]++;
      if (wabaId !== null) skipped.wabaIds.add(wabaId.slice(0, 32));
    };
    for (const rawChange of entry.data.changes) {
      const change = Change.safeParse(rawChange);
      if (!change.success) {
        skip("changes");
        continue;
      }
      const { field, value } = change.data;
      if (field === "phone_number_quality_update") {
        items.push({ kind: "quality", wabaId, update: value });
        continue;
      }
      if (field === "account_update") {
        items.push({ kind: "account", wabaId, update: value });
        continue;
      }
      if (field === "message_template_status_update") {
        items.push({ kind: "template", wabaId, update: value });
        continue;
      }
      const messages = MessagesValue.safeParse(value);
      const phoneNumberId = messages.success ? messages.data.metadata?.phone_number_id : undefined;
      // A change without a field is read as `messages` (what every such change has been so far).
      if (field !== undefined && !APPLIED_FIELDS.has(field)) {
        items.push({ kind: "field", wabaId, phoneNumberId: phoneNumberId ?? null, field: field.slice(0, 64) });
        continue;
      }
      if (!messages.success) {
        skip("values");
        continue;
      }
      const errors = messages.data.errors ?? [];
      if (errors.length > 0) items.push({ kind: "errors", wabaId, phoneNumberId: phoneNumberId ?? null, errors });
      if (!phoneNumberId) {
        // Statuses and messages that name no number of ours can be applied nowhere.
        if ((messages.data.statuses?.length ?? 0) + (messages.data.messages?.length ?? 0) > 0) skip("withoutNumber");
        continue;
      }
      for (const status of messages.data.statuses ?? []) items.push({ kind: "status", phoneNumberId, status });
      for (const message of messages.data.messages ?? [])
        items.push({
          kind: "message",
          phoneNumberId,
          message,
          ...contactOf(message, messages.data.contacts, messages.data.messages?.length ?? 0),
        });
    }
  }
  const { wabaIds, ...counts } = skipped;
  if (counts.entries + counts.changes + counts.values + counts.withoutNumber > 0)
    log("warn", "operator payload parts not understood; dropped", { ...counts, wabaIds: [...wabaIds].join(",") });
  return items;
}

/**
 * The entry of `contacts` that describes a message's sender: the one naming its phone number or
 * user id, or, in a payload of one message and one contact, that contact (the message may name
 * its sender nowhere else: the operator's documents disagree on where the ids go).
 */
function contactOf(message: unknown, contacts: unknown[] | undefined, messages: number): { contact?: unknown } {
  if (!contacts || contacts.length === 0) return {};
  const m = message && typeof message === "object" ? (message as Record<string, unknown>) : {};
  // Ids compare as text: a relay may have turned the digits of one side into a number.
  const text = (v: unknown) => (typeof v === "string" || typeof v === "number" ? String(v) : undefined);
  const names = (c: unknown, field: string, value: unknown) =>
    text(value) !== undefined &&
    text(value) !== "" &&
    c &&
    typeof c === "object" &&
    text((c as Record<string, unknown>)[field]) === text(value);
  const found = contacts.find((c) => names(c, "wa_id", m.from) || names(c, "user_id", m.from_user_id));
  if (found !== undefined) return { contact: found };
  return contacts.length === 1 && messages === 1 ? { contact: contacts[0] } : {};
}

/** The operator's timestamps are unix seconds, as strings or numbers (UnixSeconds). */
export const operatorTime = (ts: string | number | undefined, fallback: number): number => {
  const seconds = Number(ts);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : fallback;
};
