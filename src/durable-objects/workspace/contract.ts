import type { OutboundContent, SendMessageRequest, SendRefusal } from "../../domain/send-request";
import type { RateInfo } from "../../lib/rate-limit-fields";
import type { MessageStatus } from "../../domain/message";
import type { NormalizedError } from "../../upstream/adapter";
import type { StoredMedia } from "../../messages/inbound-media";

// What a send records and its rate info are defined on the floors below the objects
// (domain/send-request.ts, lib/rate-limit-fields.ts), whose modules read them too.
export type { OutboundContent, RateInfo, SendRefusal };

/** What the send route hands the workspace object. */
export interface SendCommand {
  workspaceId: string;
  idempotencyKey: string;
  /** SHA-256 of the canonical JSON of the validated request. */
  fingerprint: string;
  request: Pick<SendMessageRequest, "channelNumberId" | "to" | "toUserId">;
  content: OutboundContent | SendRefusal;
}

export type SendOutcome =
  | { kind: "created"; jobId: string; rate: RateInfo }
  | { kind: "duplicate"; jobId: string }
  | { kind: "conflict"; jobId: string }
  | { kind: "forbidden" }
  | ({ kind: "refused" } & SendRefusal["refused"])
  | { kind: "quota_exceeded"; limit: number }
  | { kind: "rate_limited"; scope: "number" | "workspace"; retryAfterMs: number; rate: RateInfo };

/**
 * A change to a message: the number's claim answered (`attempt`), a message the number gives up
 * on, or the operator's report. Applying it twice changes nothing.
 */
export interface StatusUpdate {
  jobId: string;
  at: number;
  status?: "processing" | "sent" | "failed";
  upstreamMessageId?: string;
  error?: NormalizedError;
  deliveredAt?: number;
  readAt?: number;
  /** The call's answer was lost: the message may or may not have reached the operator. */
  outcomeUnknown?: boolean;
  /** The claimed call this reports on (the number's answers only). */
  attempt?: number;
  /** The call certainly did not reach the operator and is tried again at this time (the claim's answer). */
  retryAt?: number;
  /** The claimed call never started (the number was paused meanwhile): the attempt is given back. */
  notSent?: boolean;
}

/**
 * An operator report without our jobId: the operator's id of the message, who it was about (the
 * operator's id and ours for them), when, and whether it is a failure (only a failure may settle an
 * unknown outcome, whose operator id we never learnt).
 */
export interface UnmatchedReport {
  upstreamMessageId: string;
  recipients: string[];
  at: number;
  failed: boolean;
}

export interface StatusResult {
  known: boolean;
  status: MessageStatus | null;
}

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

/** An inbound message from a user to one of the workspace's numbers. */
export interface InboundRecord {
  channelNumberId: string;
  upstreamMessageId: string;
  from: string;
  type: string;
  text: string | null;
  content: Record<string, unknown> | null;
  /** What the operator tells beyond the content (sender identity, links, media): stored as the record's `details`. */
  details?: Record<string, unknown> | null;
  /** The file of an image, audio, video, document or sticker: stored as `details.media`, and copied to R2. */
  media?: StoredMedia | null;
  at: number;
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
