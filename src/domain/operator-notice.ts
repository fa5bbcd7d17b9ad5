import { z } from "@hono/zod-openapi";

// What the operator said about a number that no message record takes, as the number's health
// shows it (features/numbers/operator-notices.ts records it).

export const OperatorNotice = z
  .object({
    field: z.string().openapi({
      description:
        "The webhook field: e.g. `standby`, or `messages` for the `errors` the operator sent about the number.",
    }),
    message: z
      .string()
      .openapi({ description: "What it said, in words (the operator's title and details for errors)." }),
    upstreamCode: z.string().nullable().openapi({ description: "The operator's error code, for `errors`." }),
    at: z.string().datetime().openapi({ description: "When it arrived." }),
  })
  .openapi("OperatorNotice");
export type OperatorNotice = z.infer<typeof OperatorNotice>;

/** The stored notice, or null (none yet, or unreadable). */
export function noticeOf(raw: string | null): OperatorNotice | null {
  if (!raw) return null;
  try {
    const parsed = OperatorNotice.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
