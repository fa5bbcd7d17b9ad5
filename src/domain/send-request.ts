import { z } from "@hono/zod-openapi";
import { ApiError } from "../lib/errors";
import { MAX_BODY_CODE_POINTS } from "../messages/content";
import { E164_DIGITS, MAX_USER_ID_LENGTH, USER_ID } from "../messages/recipient";

// Counted in Unicode code points, not UTF-16 units: an emoji is one character.
const codePoints = (s: string): number => [...s].length;

/** `text` of a message (sent, or injected in the sandbox). */
export const TextContent = z.strictObject(
  {
    body: z
      .string({ error: "text.body must be a string." })
      .refine((v) => codePoints(v) >= 1, { error: "text.body is empty.", params: { rule: "min" } })
      .refine((v) => codePoints(v) <= MAX_BODY_CODE_POINTS, {
        error: `text.body is longer than ${MAX_BODY_CODE_POINTS} characters (Unicode code points).`,
        params: { rule: "max" },
      })
      // JSON Schema counts string length in code points, as the refinements above do.
      .openapi({
        minLength: 1,
        maxLength: MAX_BODY_CODE_POINTS,
        description: "1 to 4096 Unicode code points.",
        example: "Your order has shipped.",
      }),
  },
  { error: "text must be an object with a body." },
);

export const SendMessageRequest = z
  .strictObject(
    {
      channelNumberId: z
        .string({ error: "channelNumberId must be a string (a number id from GET /channel-numbers)." })
        .uuid({ error: "channelNumberId must be a UUID taken from GET /channel-numbers." })
        .openapi({ format: "uuid", description: "Id of a connected number, from GET /channel-numbers." }),
      to: z
        .string({ error: "to must be a string of digits." })
        .min(1, { error: "to is empty: give the recipient in E.164 digits, for example 5511999998888." })
        .max(32, { error: "to has more than 32 characters." })
        .refine((v) => !v.startsWith("+"), {
          error: "Drop the leading '+': send E.164 digits only, for example 5511999998888.",
          params: { rule: "no_plus" },
        })
        .refine((v) => v.startsWith("+") || /^\d+$/.test(v), {
          error: "to must contain digits only.",
          params: { rule: "digits_only" },
        })
        .refine((v) => !v.startsWith("0"), {
          error: "to must not start with 0: begin with the country code.",
          params: { rule: "e164" },
        })
        // The refinements above explain each mistake; together with min/max they accept exactly
        // E164_DIGITS, which the document states (test/api/openapi-contract.test.ts checks they agree).
        .optional()
        .openapi({
          example: "5511999998888",
          pattern: E164_DIGITS.source,
          description:
            "Recipient in E.164, digits only (no '+'), at most 32 characters. Required unless `toUserId` is given; never both.",
        }),
      toUserId: z
        .string({ error: "toUserId must be a string: the fromUserId of a message.received event." })
        .min(1, { error: "toUserId is empty: give the user id exactly as message.received's fromUserId." })
        .max(MAX_USER_ID_LENGTH, { error: `toUserId has more than ${MAX_USER_ID_LENGTH} characters.` })
        .regex(USER_ID, {
          error:
            "toUserId must be a user id exactly as message.received's fromUserId gives it (a country code, a dot, letters and digits, e.g. US.13491208655302741918). For a phone number use to.",
        })
        .optional()
        .openapi({
          example: "US.13491208655302741918",
          description:
            "Extension: the recipient's business-scoped user id, exactly as `message.received` gave it in `fromUserId` " +
            "(users who withhold their phone number behind a username). Give it instead of `to`, never with it.",
        }),
      type: z
        .literal("text", { error: 'type must be "text": only text messages exist in v1.' })
        .default("text")
        .openapi({ description: "Only `text` in v1." }),
      text: TextContent,
    },
    { error: "The body must be a JSON object." },
  )
  // Exactly one recipient. Runs only once every field is valid on its own (zod skips it otherwise).
  .superRefine((r, ctx) => exactlyOneRecipient(r, ctx))
  .openapi("SendMessageRequest", {
    description: "Exactly one of `to` and `toUserId` is required.",
  });
export type SendMessageRequest = z.infer<typeof SendMessageRequest>;

/** The rule of every version's send: exactly one of `to` and `toUserId`. */
export function exactlyOneRecipient(
  r: { to?: string | undefined; toUserId?: string | undefined },
  ctx: z.RefinementCtx,
): void {
  if (r.to !== undefined && r.toUserId !== undefined)
    ctx.addIssue({
      code: "custom",
      path: ["toUserId"],
      message: "Give either to (a phone number) or toUserId (a user id), not both.",
      params: { rule: "exclusive" },
    });
  if (r.to === undefined && r.toUserId === undefined)
    ctx.addIssue({
      code: "custom",
      path: ["to"],
      message:
        "This field is required: give to (E.164 digits), or toUserId for a user known only by the fromUserId of their messages.",
      params: { rule: "required" },
    });
}

// Printable ASCII (0x21–0x7E plus space), 1 to 255 characters.
export const IDEMPOTENCY_KEY = /^[\x20-\x7E]{1,255}$/;

const WHAT_TO_SEND =
  "Send a new key for every message, for example a random UUID (crypto.randomUUID()), and reuse the same key " +
  "unchanged when you retry that message after a timeout, a network error or a 5xx.";

export const IdempotencyKeyHeader = z.string().min(1).max(255).regex(IDEMPOTENCY_KEY).openapi({
  description:
    "1–255 printable ASCII characters. One new key per message (a UUID), reused unchanged on every retry of that message.",
  example: "6f1c2a7e-3b0d-4e59-9d7b-2f3c1a9e8b10",
});

/** The 400 for a missing or malformed Idempotency-Key, saying what to send instead. */
export function idempotencyKeyError(value: string | undefined): ApiError {
  if (value === undefined || value === "") {
    return new ApiError("invalid_request", `The Idempotency-Key header is required. ${WHAT_TO_SEND}`, {
      details: [{ path: "header.idempotency-key", rule: "required", message: WHAT_TO_SEND }],
    });
  }
  return new ApiError(
    "invalid_request",
    "The Idempotency-Key header is invalid: use 1 to 255 printable ASCII characters.",
    {
      details: [
        {
          path: "header.idempotency-key",
          rule: "format",
          message: `Use 1 to 255 printable ASCII characters. ${WHAT_TO_SEND}`,
        },
      ],
    },
  );
}

/** Canonical JSON (sorted keys) so that key order and whitespace never make two sends differ. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
