import type { WindowState } from "../../domain/rate-window";

export interface AdmitCommand {
  jobId: string;
  workspaceId: string;
  channelNumberId: string;
  to: string;
  body: string;
  acceptedAt: number;
}

export type AdmitResult =
  | { ok: true; window: WindowState }
  | { ok: false; reason: "rate_limited"; window: WindowState }
  /** The jobId is already in the outbox with another payload (cannot happen unless two payloads share a jobId). */
  | { ok: false; reason: "conflict" };

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
}

export interface ContactWindow {
  phone: string;
  lastInboundAt: string | null;
  windowExpiresAt: string | null;
  windowOpen: boolean;
}

export type OutboxState = "queued" | "sending" | "unknown" | "sent" | "failed" | "orphan" | "dropped";

/** One outbox entry as the operator view and tests see it. */
export interface OutboxEntry {
  jobId: string;
  recipient: string;
  state: OutboxState;
  attempts: number;
  upstreamMessageId: string | null;
}
