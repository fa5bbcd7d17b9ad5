import type { SendMessageRequest } from "../../domain/send-request";
import type { MessageStatus } from "../../domain/message";
import type { NormalizedError } from "../../upstream/adapter";
import type { ErrorCode, ErrorDetail } from "../../lib/errors";

/**
 * What a send records and the number sends: the record's `type`, `body` (a text's body, or a
 * template's rendered text), `content` (a template's operator payload, JSON) and `details`
 * (a template's facts, JSON). A text send has neither of the last two.
 */
export interface OutboundContent {
  type: "text" | "template";
  body: string;
  content: string | null;
  details: string | null;
}

/**
 * A send the route found invalid against something only known at send time (a template's current
 * state): refused with this error once its Idempotency-Key is known not to be bound (a replay of
 * an accepted send still answers as a replay) and its number is known to be the workspace's.
 */
export interface SendRefusal {
  refused: { code: ErrorCode; message: string; details: ErrorDetail[] };
}
import type { StoredMedia } from "../../domain/inbound-media";

/** What the send route hands the workspace object. */
export interface SendCommand {
  workspaceId: string;
  idempotencyKey: string;
  /** SHA-256 of the canonical JSON of the validated request. */
  fingerprint: string;
  request: Pick<SendMessageRequest, "channelNumberId" | "to" | "toUserId">;
  content: OutboundContent | SendRefusal;
}

/** The limit closest to refusing the next send, for the rate headers. */
export interface RateInfo {
  scope: "number" | "workspace";
  limit: number;
  remaining: number;
  resetSeconds: number;
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
