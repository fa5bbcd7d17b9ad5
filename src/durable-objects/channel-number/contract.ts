import type { WindowState } from "../../domain/rate-window";

export interface AdmitCommand {
  jobId: string;
  workspaceId: string;
  channelNumberId: string;
  to: string;
  acceptedAt: number;
  /**
   * The workspace's acceptance times for this number in the last second: the number's window is
   * kept in memory, and after a restart it starts from these.
   */
  recent?: number[];
  /**
   * The workspace instance handing it (random per instance). What an earlier instance handed and
   * never committed (it died in between) is not in `recent`: its slots in the window go.
   */
  instance?: string;
}

export type AdmitResult =
  { ok: true; window: WindowState } | { ok: false; reason: "rate_limited"; window: WindowState };

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

/** The sender of an inbound message, for its window: its key (phone number, or user id without one) and, beside a phone number, its user id. */
export interface InboundContact {
  from: string;
  at: number;
  userId?: string;
}

/** A user's phone number or user id changed from `from` to `to` (an operator `system` message at `at`). */
export interface IdentityMove {
  from: string;
  to: string;
  at: number;
}

export interface ContactWindow {
  phone: string;
  lastInboundAt: string | null;
  windowExpiresAt: string | null;
  windowOpen: boolean;
}
