import { z } from "@hono/zod-openapi";

export const MAX_BODY_CODE_POINTS = 4096;

// Counted in Unicode code points, not UTF-16 units: an emoji is one character.
const codePoints = (s: string): number => [...s].length;

export const SendMessageRequest = z
  .strictObject({
    channelNumberId: z
      .string({ error: "channelNumberId must be a string (a number id from GET /channel-numbers)." })
      .uuid({ error: "channelNumberId must be a UUID taken from GET /channel-numbers." })
      .openapi({ format: "uuid", description: "Id of a connected number, from GET /channel-numbers." }),
    to: z
      .string({ error: "to must be a string of digits." })
      .min(1, { error: "to is empty: give the recipient in E.164 digits, for example 5511999998888." })
      .max(32, { error: "to has more than 32 characters." })
      .refine((v) => !v.startsWith("+"), { error: "Drop the leading '+': send E.164 digits only, for example 5511999998888.", params: { rule: "no_plus" } })
      .refine((v) => v.startsWith("+") || /^\d+$/.test(v), { error: "to must contain digits only.", params: { rule: "digits_only" } })
      .refine((v) => !v.startsWith("0"), { error: "to must not start with 0: begin with the country code.", params: { rule: "e164" } })
      .openapi({ example: "5511999998888", description: "Recipient in E.164, digits only (no '+'), at most 32 characters." }),
    type: z
      .literal("text", { error: "type must be \"text\": only text messages exist in v1." })
      .default("text")
      .openapi({ description: "Only `text` in v1." }),
    text: z.strictObject(
      {
        body: z
          .string({ error: "text.body must be a string." })
          .refine((v) => codePoints(v) >= 1, { error: "text.body is empty.", params: { rule: "min" } })
          .refine((v) => codePoints(v) <= MAX_BODY_CODE_POINTS, {
            error: `text.body is longer than ${MAX_BODY_CODE_POINTS} characters (Unicode code points).`,
            params: { rule: "max" },
          })
          .openapi({ description: "1 to 4096 Unicode code points." }),
      },
      { error: "text must be an object with a body." },
    ),
  }, { error: "The body must be a JSON object." })
  .openapi("SendMessageRequest");
export type SendMessageRequest = z.infer<typeof SendMessageRequest>;

// Printable ASCII (0x21–0x7E plus space), 1 to 255 characters.
export const IDEMPOTENCY_KEY = /^[\x20-\x7E]{1,255}$/;

/** Canonical JSON (sorted keys) so that key order and whitespace never make two sends differ. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
