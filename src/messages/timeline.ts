import { z } from "@hono/zod-openapi";
import type { Message } from "./message";
import { MessageError } from "./status";

// A message's timeline: its changes, in the order they were committed, as the API and the dashboard show them.

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

/** One change of a message, as its record orders it (message-events.ts `changesOf`): `at` never before the change before. */
export interface CommittedChange {
  kind: "processing" | "sent" | "delivered" | "read" | "failed" | "received";
  at: number;
}

/**
 * What happened to a message, oldest first: its changes in the order they were committed (the
 * record's sequence, the order its events follow), each at the time its event says; an unknown
 * outcome after the claim it followed. Without `changes`: from the timestamps alone.
 */
export function timelineOf(m: Message, changes?: readonly CommittedChange[]): Entry[] {
  if (m.direction === "inbound") return [{ status: "received", at: m.receivedAt, error: null }];
  if (changes) {
    const entries: Entry[] = [{ status: "queued", at: m.createdAt, error: null }];
    for (const c of changes) {
      if (c.kind === "received") continue;
      entries.push({ status: c.kind, at: new Date(c.at).toISOString(), error: c.kind === "failed" ? m.error : null });
      if (c.kind === "processing" && m.outcomeUnknownSince)
        entries.push({ status: "outcome_unknown", at: m.outcomeUnknownSince, error: null });
    }
    return entries;
  }
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
