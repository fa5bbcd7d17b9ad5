import { z } from "@hono/zod-openapi";

/**
 * A business's read mark of an inbound message (API v2's `POST /messages/{id}/read`): when the
 * operator took it, and whether it showed the typing indicator. Kept on the inbound record itself,
 * no row of its own: the time in its `read_at` column (unused by inbound records otherwise), the
 * indicator as `typingIndicator: true` in its `details` JSON (16 bytes).
 */

export const READ_MARK_FIELDS = {
  readAt: z
    .string()
    .datetime()
    .nullable()
    .openapi({
      description:
        "When you marked the message read (`POST /messages/{id}/read`); null until then. The operator marks the " +
        "conversation's earlier messages read too, without a mark on them here.",
    }),
  typingIndicator: z.boolean().openapi({
    description:
      "Whether the read mark showed the typing indicator (`typing: true`): the user saw it until your reply, or for " +
      "about 25 seconds.",
  }),
};

export const ReadMark = z
  .object({
    messageId: z.string().uuid().openapi({ description: "The inbound message marked read." }),
    readAt: z.string().datetime().openapi({ description: "When the operator took the read mark." }),
    typingIndicator: READ_MARK_FIELDS.typingIndicator,
  })
  .openapi("ReadMark");
export type ReadMark = z.infer<typeof ReadMark>;

const TYPING_KEY = "typingIndicator";

/** The read mark of an inbound record's columns: its time (ms) and the typing indicator. */
export function readMarkOf(row: { read_at: number | null; details: string | null }): {
  readAt: string | null;
  typingIndicator: boolean;
} {
  return {
    readAt: row.read_at === null ? null : new Date(row.read_at).toISOString(),
    typingIndicator: row.read_at !== null && typingOf(row.details),
  };
}

function typingOf(details: string | null): boolean {
  if (!details) return false;
  try {
    const v: unknown = JSON.parse(details);
    return v !== null && typeof v === "object" && (v as Record<string, unknown>)[TYPING_KEY] === true;
  } catch {
    return false;
  }
}

/** A record's `details` JSON with the typing indicator noted (the other keys as they were). */
export function withTypingIndicator(details: string | null): string {
  let stored: Record<string, unknown> = {};
  try {
    const v: unknown = details ? JSON.parse(details) : {};
    if (v !== null && typeof v === "object" && !Array.isArray(v)) stored = v as Record<string, unknown>;
  } catch {
    // Unreadable details are left to the readers that skip them; the indicator is kept beside nothing.
  }
  return JSON.stringify({ ...stored, [TYPING_KEY]: true });
}
