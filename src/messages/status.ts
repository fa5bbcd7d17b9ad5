import { z } from "@hono/zod-openapi";

// A message's statuses, the changes that lead to them, its error, and what reports about it carry:
// the words the engine, the operator's adapters and every view share.

/** An outbound message's statuses, in the order its lifecycle goes through them (`failed` is final). */
export const MESSAGE_STATUSES = ["queued", "processing", "sent", "failed"] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/**
 * An outbound message's statuses in API v2: v1's, with the operator's delivery and read reports as
 * statuses of their own (`queued → processing → sent → delivered → read`, or `failed`). Derived from
 * the record (its v1 status and its delivery and read times), never stored: v1 keeps its four.
 */
export const MESSAGE_STATUSES_V2 = ["queued", "processing", "sent", "delivered", "read", "failed"] as const;
export type MessageStatusV2 = (typeof MESSAGE_STATUSES_V2)[number];

/**
 * A message's v2 status from what its record keeps: a sent message the operator reported read is
 * `read` (whether or not it reported the delivery first: a read message was delivered), one it
 * reported delivered is `delivered`. A failed message stays `failed` whatever was reported after
 * the failure (a user on several devices).
 */
export function statusV2Of(s: {
  status: MessageStatus;
  deliveredAt: string | number | null;
  readAt: string | number | null;
}): MessageStatusV2 {
  if (s.status !== "sent") return s.status;
  if (s.readAt !== null) return "read";
  return s.deliveredAt !== null ? "delivered" : "sent";
}

/** Who wrote a message: the business (a send) or a user (to one of its numbers). */
export const DIRECTIONS = ["outbound", "inbound"] as const;
export type Direction = (typeof DIRECTIONS)[number];

/**
 * What happened to a message, each at most once: the changes a record goes through (an outbound
 * one's lifecycle, an inbound one's arrival), and the kinds of event it has.
 */
export const EVENT_KINDS = ["processing", "sent", "delivered", "read", "failed", "received"] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

/** The changes an outbound record can go through, each at most once. */
export type OutboundChange = Exclude<EventKind, "received">;

/**
 * The status a record has after each change of `kinds`, in the order they were committed (a
 * delivery or read leaves it as it was): what each status event says, and its `previousStatus`.
 */
export function statusesAfter(kinds: readonly EventKind[]): MessageStatus[] {
  let status: MessageStatus = "queued";
  return kinds.map((k) => {
    if (k === "processing" || k === "sent" || k === "failed") status = k;
    else if (status === "queued" || status === "processing") status = "sent";
    return status;
  });
}

export const MessageError = z
  .object({
    code: z.string().openapi({ example: "service_window_closed", description: "Our normalized error code." }),
    message: z.string(),
    retriable: z.boolean().openapi({ description: "Whether sending the same content again later may succeed." }),
    // `upstreamCode` and its description are the published contract (both OpenAPI documents), so they keep "upstream".
    upstreamCode: z.string().nullable().openapi({ description: "The upstream operator's own error code, if any." }),
  })
  .openapi("MessageError");

/** A failed message's error: our code, the operator's, and whether sending it again may succeed. */
export type NormalizedError = z.infer<typeof MessageError>;

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

/** What the workspace knows of a message the number asks about. */
export interface StatusResult {
  known: boolean;
  status: MessageStatus | null;
}

/** An operator status for one of our messages (from its webhooks, or the sandbox's simulation of them). */
export interface OperatorStatus {
  upstreamMessageId: string;
  jobId: string | null;
  status: "sent" | "delivered" | "read" | "failed";
  at: number;
  errorCode: string | null;
  errorMessage: string | null;
  /** The operator's `error_data.details`, kept in our error message. */
  errorDetails?: string | null;
  /** The operator's id of the recipient (`recipient_id`): matches a report without our jobId to its message. */
  recipientId?: string | null;
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
