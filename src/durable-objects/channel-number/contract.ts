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

export interface ContactWindow {
  phone: string;
  lastInboundAt: string | null;
  windowExpiresAt: string | null;
  windowOpen: boolean;
}
