import type { SendMessageRequest } from "../../domain/send-request";
import type { MessageStatus } from "../../domain/message";
import type { NormalizedError } from "../../upstream/adapter";

/** What the send route hands the workspace object. */
export interface SendCommand {
  workspaceId: string;
  idempotencyKey: string;
  /** SHA-256 of the canonical JSON of the validated request. */
  fingerprint: string;
  request: SendMessageRequest;
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
  | { kind: "quota_exceeded"; limit: number }
  | { kind: "rate_limited"; scope: "number" | "workspace"; retryAfterMs: number; rate: RateInfo };

/** A change reported by the number's outbox or by the operator; applying it twice changes nothing. */
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
}

export interface StatusResult {
  known: boolean;
  status: MessageStatus | null;
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
  at: number;
}

/** What the webhook consumer reports about one attempt to deliver an event. */
export interface DeliveryReport {
  eventId: string;
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
