import type { z } from "@hono/zod-openapi";
import type { MessageError } from "../domain/message";

export type NormalizedError = z.infer<typeof MessageError>;

export interface OutboundText {
  jobId: string;
  to: string;
  body: string;
  /** 1 for the first try of this message. */
  attempt: number;
}

/**
 * What one upstream call ended in. `unknown` means the request may have reached
 * the operator but no answer came back (a timeout): such a message is never sent
 * again; its status webhook or the unknown-outcome rule settles it.
 */
export type SendResult =
  | { kind: "accepted"; upstreamMessageId: string }
  | { kind: "retryable"; upstreamCode: string | null; message: string; retryAfterMs?: number }
  | { kind: "permanent"; error: NormalizedError }
  | { kind: "unknown"; message: string };

export interface UpstreamAdapter {
  send(message: OutboundText): Promise<SendResult>;
}
