import type { MessageStatus } from "../../messages/status";

/** What the number needs to call the operator: the record's own payload. */
export interface ClaimPayload {
  to: string;
  type: string;
  body: string;
  content: string | null;
}

export type ClaimResult =
  /** The call is this number's to make, once: attempt `attempt` of the record's payload. */
  | { kind: "go"; payload: ClaimPayload }
  /**
   * The send that handed this entry is still committing (ask again shortly), or its retry is not
   * due before `until` (the operator's Retry-After, as the retry's answer stored it).
   */
  | { kind: "wait"; until?: number }
  /** No such record and no send in progress: the entry belongs to a send that failed; drop it unsent. */
  | { kind: "never" }
  /** Already sent or failed (an operator report, an expiry): nothing to call. */
  | { kind: "settled"; status: MessageStatus }
  /** A claim at or beyond this attempt was granted before and never answered: a call may have left. */
  | { kind: "claimed_before"; attempts: number };

/** One entry of a number's work list (records with work left, oldest first). */
export interface WorkItem {
  jobId: string;
  recipient: string;
  acceptedAt: number;
  attempts: number;
  answered: number;
  nextAttemptAt: number | null;
  /** When its first call was claimed (processing_at). */
  firstAttemptAt: number | null;
}

export interface Usage {
  period: { start: string; end: string };
  messagesUsed: number;
}

/** One day of a workspace's counts (UTC), for usage history. */
export interface DailyUsage {
  day: string;
  accepted: number;
  sent: number;
  failed: number;
  received: number;
}

/** What the webhook consumer reports about one attempt to deliver an event. */
export interface DeliveryReport {
  eventId: string;
  /** The event's type, number and subject (the message it is about, or its own id): the delivery log's key. */
  eventType: string;
  channelNumberId: string;
  subject: string;
  webhookId: string | null;
  attempt: number;
  attemptedAt: number;
  /** `deferred`: not tried, because an earlier event to the same endpoint failed in the same run; it waits with that one. */
  outcome: "delivered" | "failed" | "refused" | "deferred" | "dead" | "no_webhook";
  statusCode: number | null;
  latencyMs: number | null;
  error: string | null;
  /** When the queue will try again (failed attempts only). */
  nextRetryAt: number | null;
}
