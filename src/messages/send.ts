import type { ErrorCode, ErrorDetail } from "../lib/errors";
import type { OutboundContent } from "./content";

// What a send hands the engine, and what the engine answers: every client (the API of each
// version, the dashboard's test send) speaks these words.

/** The limit closest to refusing the next send, for the rate headers. */
export interface RateInfo {
  scope: "number" | "workspace";
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/** Who a send is for: exactly one of a phone number (`to`) and a user id (`toUserId`). */
export interface SendRecipient {
  channelNumberId: string;
  to?: string | undefined;
  toUserId?: string | undefined;
}

/**
 * A send the route found invalid against something only known at send time (a template's current
 * state): refused with this error once its Idempotency-Key is known not to be bound (a replay of
 * an accepted send still answers as a replay) and its number is known to be the workspace's.
 */
export interface SendRefusal {
  refused: { code: ErrorCode; message: string; details: ErrorDetail[] };
}

/** What a send records: its content, or the refusal found before the workspace was asked (a template's state). */
export type SendContent = OutboundContent | SendRefusal;

/** What a send hands the workspace object. */
export interface SendCommand {
  workspaceId: string;
  idempotencyKey: string;
  /** SHA-256 of the canonical JSON of the validated request. */
  fingerprint: string;
  request: SendRecipient;
  content: SendContent;
}

export type SendOutcome =
  | { kind: "created"; jobId: string; rate: RateInfo }
  | { kind: "duplicate"; jobId: string }
  | { kind: "conflict"; jobId: string }
  | { kind: "forbidden" }
  | ({ kind: "refused" } & SendRefusal["refused"])
  | { kind: "quota_exceeded"; limit: number }
  | { kind: "rate_limited"; scope: "number" | "workspace"; retryAfterMs: number; rate: RateInfo };
