import type { NormalizedError, OperatorStatus } from "../messages/status";

export interface OutboundText {
  jobId: string;
  /** E.164 digits, or a business-scoped user id (messages/recipient.ts tells them apart). */
  to: string;
  /** 1 for the first try of this message. */
  attempt: number;
  /** The operator's message type (`text`, `template`, `image`, `interactive`, …). */
  type: string;
  /** The operator's object of that type, sent under the type's name (messages/content.ts operatorPayloadOf). */
  payload: Record<string, unknown> | unknown[];
}

/**
 * What one call to the operator ended in:
 * - `accepted`: the operator took the message (its own id; the recipient id it resolved the number to, if given);
 * - `retryable`: the request certainly did not reach the operator, or the operator said it did not process it;
 * - `permanent`: the operator refused the message for good;
 * - `unknown`: the request may have reached the operator but no usable answer came back (timeout, connection
 *   lost, a gateway error): never sent again; the operator's status webhook settles it.
 */
export type SendResult =
  | { kind: "accepted"; upstreamMessageId: string; recipientId?: string; later?: SimulatedStatus[] }
  | {
      kind: "retryable";
      operatorCode: string | null;
      message: string;
      retryAfterMs?: number;
      /** Floor of the next delay (long back-off for account-level rate limits). */
      minDelayMs?: number;
      /** Attempts allowed for this class of error, if fewer than the default. */
      maxAttempts?: number;
      /** `number`: the operator throttles the whole number, so every message waits, not only this one. */
      scope?: "message" | "number";
      /** The operator's per-recipient pair rate: back off 4^n seconds, this conversation only. */
      pairRate?: boolean;
    }
  | { kind: "permanent"; error: NormalizedError }
  /** An account or credential problem: every message would fail alike, so the number pauses and the message waits. */
  | { kind: "number_blocked"; error: NormalizedError }
  | { kind: "unknown"; message: string; later?: SimulatedStatus[] };

/** A status the sandbox will report later, as the operator's webhook would. */
export interface SimulatedStatus {
  afterMs: number;
  status: OperatorStatus["status"];
  errorCode?: string;
  errorMessage?: string;
}

/**
 * A read mark of an inbound message at the operator (`status: "read"` on its message id), which
 * marks the conversation's earlier messages read too; `typing` adds the typing indicator, shown
 * until the business replies or for about 25 seconds.
 */
export interface ReadMark {
  /** The operator's id of the inbound message. */
  upstreamMessageId: string;
  typing: boolean;
}

/** What a read mark's call ended in: taken, or refused (or lost) with the normalized error. */
export type ReadMarkResult = { kind: "marked" } | { kind: "refused"; error: NormalizedError };

/**
 * Asked by a send whose message call comes later than the call's start (its file went to the
 * operator first): resolves once the number's pace lets the message call be made, its slot taken;
 * the request must start in the same synchronous step.
 */
export type BeforeMessageCall = () => Promise<void>;

export interface OperatorAdapter {
  send(message: OutboundText, beforeMessageCall?: BeforeMessageCall): Promise<SendResult>;
  markRead(mark: ReadMark): Promise<ReadMarkResult>;
}
