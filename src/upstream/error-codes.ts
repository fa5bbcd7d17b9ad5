import type { NormalizedError, SendResult } from "./adapter";

// The operator's error codes that mean "try again later": throughput (130429),
// pair rate (131056), temporary unavailability (131000, 131016), generic (1, 2, 4).
const RETRYABLE_CODES = new Set(["1", "2", "4", "130429", "131000", "131016", "131056", "133004"]);

/** Operator code → our documented code. Anything not listed is `upstream_rejected`. */
const PERMANENT: Record<string, { code: string; message: string }> = {
  "131047": { code: "service_window_closed", message: "More than 24 hours since the recipient last wrote: the customer-service window is closed." },
  "131026": { code: "recipient_unreachable", message: "The message could not be delivered to the recipient." },
  "131030": { code: "recipient_not_allowed", message: "The recipient is not in the number's allowed list." },
  "131051": { code: "unsupported_message_type", message: "The operator does not support this message type." },
  "131031": { code: "account_restricted", message: "The business account is locked or restricted." },
  "368": { code: "account_restricted", message: "The business account is temporarily blocked for policy violations." },
  "100": { code: "invalid_parameters", message: "The operator refused a parameter of the message." },
  "131008": { code: "invalid_parameters", message: "A required parameter is missing." },
  "131009": { code: "invalid_parameters", message: "A parameter value is not valid." },
  "190": { code: "upstream_auth_failed", message: "The number's access token is invalid or expired." },
  "10": { code: "upstream_auth_failed", message: "The number's access token lacks permission." },
  "131021": { code: "invalid_parameters", message: "The recipient cannot be the sender." },
};

export function permanentError(upstreamCode: string | null, upstreamMessage?: string): NormalizedError {
  const known = upstreamCode ? PERMANENT[upstreamCode] : undefined;
  return {
    code: known?.code ?? "upstream_rejected",
    message: known?.message ?? upstreamMessage ?? "The operator refused the message.",
    retriable: false,
    upstreamCode,
  };
}

/** Classifies an operator HTTP answer (status and its `error.code`). */
export function classifyHttpFailure(status: number, upstreamCode: string | null, message: string, retryAfterMs?: number): SendResult {
  if (status === 429 || status >= 500 || (upstreamCode !== null && RETRYABLE_CODES.has(upstreamCode))) {
    return { kind: "retryable", upstreamCode, message, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  }
  return { kind: "permanent", error: permanentError(upstreamCode, message) };
}

/** Our own terminal errors, documented beside the operator's. */
export const OWN_ERRORS = {
  retriesExhausted: (last: string): NormalizedError => ({
    code: "upstream_retries_exhausted",
    message: `The operator kept answering with temporary errors (last: ${last}).`,
    retriable: true,
    upstreamCode: null,
  }),
  outcomeUnknown: (): NormalizedError => ({
    code: "upstream_outcome_unknown",
    message: "The operator did not answer and never reported a status; the message was not sent again to avoid a duplicate.",
    retriable: true,
    upstreamCode: null,
  }),
  numberDisconnected: (): NormalizedError => ({
    code: "number_disconnected",
    message: "The channel number was disconnected before the message left.",
    retriable: false,
    upstreamCode: null,
  }),
} as const;
