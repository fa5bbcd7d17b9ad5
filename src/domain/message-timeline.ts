import { z } from "@hono/zod-openapi";
import { MessageError, type Message } from "./message";

export const TimelineEntry = z
  .object({
    status: z
      .enum(["queued", "processing", "outcome_unknown", "sent", "delivered", "read", "failed", "received"])
      .openapi({
        description: "`outcome_unknown`: the operator's answer was lost; its status report settles the message later.",
      }),
    at: z.string().datetime(),
    error: MessageError.nullable(),
  })
  .openapi("MessageTimelineEntry");

export const MessageTimeline = z.array(TimelineEntry).openapi("MessageTimeline");

type Entry = z.infer<typeof TimelineEntry>;

/** What happened to a message, oldest first, from the timestamps its record keeps. */
export function timelineOf(m: Message): Entry[] {
  if (m.direction === "inbound") return [{ status: "received", at: m.receivedAt, error: null }];
  const entries: (Entry | null)[] = [
    { status: "queued", at: m.createdAt, error: null },
    m.processingAt ? { status: "processing", at: m.processingAt, error: null } : null,
    m.outcomeUnknownSince ? { status: "outcome_unknown", at: m.outcomeUnknownSince, error: null } : null,
    m.sentAt ? { status: "sent", at: m.sentAt, error: null } : null,
    m.deliveredAt ? { status: "delivered", at: m.deliveredAt, error: null } : null,
    m.readAt ? { status: "read", at: m.readAt, error: null } : null,
    m.failedAt ? { status: "failed", at: m.failedAt, error: m.error } : null,
  ];
  // A delivery or read of a failed message was reported after its failure (a user on several devices): it comes after it.
  const key = (e: Entry): string =>
    m.status === "failed" && m.failedAt && (e.status === "delivered" || e.status === "read") && e.at < m.failedAt
      ? m.failedAt
      : e.at;
  return entries
    .filter((e): e is Entry => e !== null)
    .sort((a, b) => {
      const [ka, kb] = [key(a), key(b)];
      if (ka !== kb) return ka < kb ? -1 : 1;
      const reached = (e: Entry) => e.status === "delivered" || e.status === "read";
      if (m.status === "failed" && a.status === "failed" && reached(b)) return -1;
      if (m.status === "failed" && b.status === "failed" && reached(a)) return 1;
      return 0;
    });
}
