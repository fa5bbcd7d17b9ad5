import type { SendResult } from "./adapter";
import type { NormalizedError } from "../messages/status";

/**
 * How we treat each of the operator's error codes (WhatsApp Cloud API, "Error
 * codes"; published with Meta's meaning in docs/customers/errors.md). The code decides;
 * the HTTP status only decides when no code came back.
 */
type Treatment =
  | { kind: "retry"; scope: "message" | "number"; minDelayMs?: number; maxAttempts?: number }
  | { kind: "pair_rate" }
  | { kind: "final"; code: string; message: string; retriableLater?: boolean }
  | { kind: "pause"; code: string; message: string };

const LONG_BACKOFF_MS = 60_000;

const TREATMENTS: Record<string, Treatment> = {
  // Not processed, try again: throughput and rate limits (the whole number waits) and temporary failures.
  "130429": { kind: "retry", scope: "number", minDelayMs: LONG_BACKOFF_MS },
  "4": { kind: "retry", scope: "number", minDelayMs: LONG_BACKOFF_MS },
  "80007": { kind: "retry", scope: "number", minDelayMs: LONG_BACKOFF_MS },
  "131000": { kind: "retry", scope: "message", maxAttempts: 3 },
  "131016": { kind: "retry", scope: "message" },
  "2": { kind: "retry", scope: "message" },
  "131057": { kind: "retry", scope: "message", minDelayMs: LONG_BACKOFF_MS },
  // Too many messages to one user: only this conversation waits.
  "131056": { kind: "pair_rate" },
  // Final for this message.
  "131047": {
    kind: "final",
    code: "service_window_closed",
    message: "More than 24 hours since the recipient last wrote: the customer-service window is closed.",
  },
  "131026": {
    kind: "final",
    code: "recipient_unreachable",
    message: "The message could not be delivered to the recipient.",
  },
  "131030": {
    kind: "final",
    code: "recipient_not_allowed",
    message: "The recipient is not in the number's allowed list.",
  },
  "131051": {
    kind: "final",
    code: "unsupported_message_type",
    message: "The operator does not support this message type.",
  },
  // A media message's file (API v2, sent by link): the operator fetches it when it takes the call
  // and reports what it could not fetch or accept (an unreachable link, a type or size beyond its
  // limits) as this code, with the reason in its details.
  "131053": {
    kind: "final",
    code: "media_upload_failed",
    message:
      "The operator could not fetch or accept the message's media (its link unreachable, or a type or size it does not take).",
  },
  "131062": {
    kind: "final",
    code: "user_id_recipient_not_supported",
    message:
      "The operator does not accept a user id (toUserId) as the recipient of this message: send it to a phone number.",
  },
  "100": { kind: "final", code: "invalid_parameters", message: "The operator refused a parameter of the message." },
  "131008": { kind: "final", code: "invalid_parameters", message: "A required parameter is missing." },
  "131009": { kind: "final", code: "invalid_parameters", message: "A parameter value is not valid." },
  "131021": { kind: "final", code: "invalid_parameters", message: "The recipient cannot be the sender." },
  "130472": {
    kind: "final",
    code: "recipient_in_experiment",
    message: "The operator withheld the message: the recipient is part of an operator experiment.",
  },
  "131050": {
    kind: "final",
    code: "recipient_opted_out",
    message: "The recipient chose not to receive marketing messages from this business.",
  },
  "131049": {
    kind: "final",
    code: "ecosystem_limited",
    message:
      "The operator did not deliver the message to protect the user's experience. Sending it again may succeed after 24 hours.",
    retriableLater: true,
  },
  // Template errors are final for the one message; none pauses the number: its other messages
  // (other templates, texts) go on. A template paused or deleted at the operator after our last
  // sync is refused here; the status webhook then updates our copy (src/features/templates/sync.ts).
  "132000": {
    kind: "final",
    code: "template_parameters_mismatch",
    message: "The operator's template takes another number of parameters (it may have changed since our last sync).",
  },
  "132001": {
    kind: "final",
    code: "template_not_found",
    message: "The template does not exist at the operator in this language (deleted, or not yet approved).",
  },
  "132005": {
    kind: "final",
    code: "template_text_too_long",
    message: "The template's text with its parameters filled in is longer than the operator allows.",
  },
  "132007": {
    kind: "final",
    code: "template_policy_violation",
    message: "The template's text with its parameters filled in violates the operator's format or character policy.",
  },
  "132012": {
    kind: "final",
    code: "template_parameter_format_mismatch",
    message: "The parameters do not match the template's format (positional or named, or their types).",
  },
  "132015": {
    kind: "final",
    code: "template_paused",
    message:
      "The operator paused the template for low quality; this message was not sent. Other messages are not affected.",
  },
  "132016": {
    kind: "final",
    code: "template_disabled",
    message: "The operator disabled the template; it can no longer be sent.",
  },
  // The account or the number's credentials: every message would fail the same way, so the number pauses.
  "0": {
    kind: "pause",
    code: "upstream_auth_failed",
    message: "The operator could not authenticate the number's access token.",
  },
  "190": { kind: "pause", code: "upstream_auth_failed", message: "The number's access token is invalid or expired." },
  "3": {
    kind: "pause",
    code: "upstream_capability",
    message: "The operator app lacks the capability to send messages.",
  },
  "10": { kind: "pause", code: "upstream_permission_denied", message: "The number's access token lacks permission." },
  "368": {
    kind: "pause",
    code: "account_restricted",
    message: "The business account is temporarily blocked for policy violations.",
  },
  "131031": { kind: "pause", code: "account_restricted", message: "The business account is locked or restricted." },
  "131042": { kind: "pause", code: "account_payment_issue", message: "The business account has a payment problem." },
  "131045": {
    kind: "pause",
    code: "number_not_registered",
    message: "The phone number is not registered with the operator.",
  },
  "131048": {
    kind: "pause",
    code: "account_spam_limited",
    message: "The number is rate limited by the operator for spam.",
  },
  "133010": {
    kind: "pause",
    code: "number_not_registered",
    message: "The phone number is not registered on the operator's platform.",
  },
  "33": {
    kind: "pause",
    code: "number_deleted",
    message: "The operator says the business phone number has been deleted.",
  },
  "131005": {
    kind: "pause",
    code: "upstream_permission_denied",
    message: "The operator denied access: the number's access token lacks a permission or it was revoked.",
  },
  "131037": {
    kind: "pause",
    code: "display_name_not_approved",
    message: "The number's display name must be approved by the operator before it can send.",
  },
};

/** The operator's API permission range (200–299): a permission not granted or removed, for the whole number. */
const API_PERMISSION: Treatment = {
  kind: "pause",
  code: "upstream_permission_denied",
  message: "The number's access token lacks an API permission, or it was removed.",
};

/**
 * A "try again" code that arrives as a final failure (a `failed` status webhook: the operator
 * itself gave up on the message): nothing of ours retries it, but sending it again may succeed.
 */
const TEMPORARY_FAILURE = {
  code: "upstream_temporary_failure",
  message: "The operator failed the message with a temporary error; sending it again later may succeed.",
} as const;

/** Template and parameter errors (132000–132999) are final for the message; API permissions (200–299) pause the number. */
function treatmentOf(code: string): Treatment | undefined {
  const known = TREATMENTS[code];
  if (known) return known;
  const n = Number(code);
  if (Number.isInteger(n) && n >= 200 && n < 300) return API_PERMISSION;
  if (Number.isInteger(n) && n >= 132000 && n < 133000)
    return { kind: "final", code: "template_error", message: "The operator refused the message template." };
  return undefined;
}

const PAIR_RATE_BASE_MS = 4_000;
const PAIR_RATE_MAX_MS = 15 * 60_000;

/** Whether the operator's code is about the number's account or credentials (every message would fail alike): it pauses the number. */
export const isAccountLevel = (operatorCode: string | null): boolean =>
  operatorCode !== null && treatmentOf(operatorCode)?.kind === "pause";

/** 4^n seconds after the n-th pair-rate refusal (4 s, 16 s, 64 s, …), capped at 15 minutes. */
export const pairRateDelayMs = (attempt: number): number =>
  Math.min(PAIR_RATE_MAX_MS, PAIR_RATE_BASE_MS * 4 ** Math.max(0, attempt - 1));

const withDetails = (message: string, details: string | undefined): string =>
  details ? `${message} (${details})` : message;

/**
 * The error a message ends with for the operator's code: a refusal of our call, or a `failed`
 * status webhook. A "try again" code can only end a message through the webhook (our calls retry
 * it): `upstream_temporary_failure`, retriable.
 */
export function permanentError(
  operatorCode: string | null,
  operatorMessage?: string,
  details?: string,
): NormalizedError {
  const t = operatorCode ? treatmentOf(operatorCode) : undefined;
  if (t && (t.kind === "retry" || t.kind === "pair_rate")) {
    return {
      code: TEMPORARY_FAILURE.code,
      message: withDetails(TEMPORARY_FAILURE.message, details),
      retriable: true,
      upstreamCode: operatorCode,
    };
  }
  if (t && (t.kind === "final" || t.kind === "pause")) {
    return {
      code: t.code,
      message: withDetails(t.message, details),
      retriable: t.kind === "final" ? t.retriableLater === true : true,
      upstreamCode: operatorCode,
    };
  }
  return {
    code: "upstream_rejected",
    message: withDetails(operatorMessage ?? "The operator refused the message.", details),
    retriable: false,
    upstreamCode: operatorCode,
  };
}

export interface OperatorErrorBody {
  code: string | null;
  message: string;
  details?: string;
  isTransient?: boolean;
}

/**
 * Classifies an operator answer that was not a success. An answer that carries
 * the operator's error object means the operator processed the request and did
 * not accept the message, so it is safe to decide by the code. An answer
 * without one (a gateway's 502/504, an empty 500) may come from in front of the
 * operator after it took the message: its outcome is unknown and it is never
 * retried, except 429, which is always "not processed".
 */
export function classifyOperatorError(
  status: number,
  code: string | null,
  message: string,
  opts: { details?: string; isTransient?: boolean; retryAfterMs?: number } = {},
): SendResult {
  const retryAfter = opts.retryAfterMs !== undefined ? { retryAfterMs: opts.retryAfterMs } : {};
  if (code !== null) {
    const t = treatmentOf(code);
    if (t?.kind === "retry") {
      return {
        kind: "retryable",
        operatorCode: code,
        message: withDetails(message, opts.details),
        scope: t.scope,
        ...retryAfter,
        ...(t.minDelayMs !== undefined ? { minDelayMs: t.minDelayMs } : {}),
        ...(t.maxAttempts !== undefined ? { maxAttempts: t.maxAttempts } : {}),
      };
    }
    if (t?.kind === "pair_rate")
      return {
        kind: "retryable",
        operatorCode: code,
        message: withDetails(message, opts.details),
        scope: "message",
        pairRate: true,
        ...retryAfter,
      };
    if (t?.kind === "pause") return { kind: "number_blocked", error: permanentError(code, message, opts.details) };
    if (t?.kind === "final") return { kind: "permanent", error: permanentError(code, message, opts.details) };
    // A code we do not know: the operator's own hint decides, then the status (it answered, so it did not accept it).
    if (opts.isTransient || status === 429 || status >= 500)
      return {
        kind: "retryable",
        operatorCode: code,
        message: withDetails(message, opts.details),
        scope: "message",
        ...retryAfter,
      };
    return { kind: "permanent", error: permanentError(code, message, opts.details) };
  }
  if (status === 429)
    return {
      kind: "retryable",
      operatorCode: null,
      message,
      scope: "number",
      minDelayMs: LONG_BACKOFF_MS,
      ...retryAfter,
    };
  if (status >= 500)
    return {
      kind: "unknown",
      message: `${message}: no operator error came back, so the message may have been accepted.`,
    };
  return { kind: "permanent", error: permanentError(null, message) };
}

/**
 * The error a refused read mark answers with: the operator's code normalized as for a message. A
 * read mark is never retried by us, and marking again is harmless, so a "try again" answer and a
 * lost one are retriable.
 */
export function readMarkError(result: SendResult): NormalizedError {
  switch (result.kind) {
    case "permanent":
    case "number_blocked":
      return result.error;
    case "retryable":
      return {
        code: TEMPORARY_FAILURE.code,
        message: `The operator could not mark the message read now (${result.message}); try again later.`,
        retriable: true,
        upstreamCode: result.operatorCode,
      };
    case "unknown":
      return {
        code: "upstream_unavailable",
        message: `${result.message} Marking a message read again is harmless: try again.`,
        retriable: true,
        upstreamCode: null,
      };
    case "accepted":
      throw new Error("an accepted call is no refusal");
  }
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
    message:
      "The operator's answer was lost and it never reported a status; the message was not sent again to avoid a duplicate.",
    retriable: true,
    upstreamCode: null,
  }),
  heldTooLong: (): NormalizedError => ({
    code: "held_too_long",
    message:
      "The message could not leave within 24 hours of its acceptance (its number was paused, or the operator's limits held it back); it was not sent.",
    retriable: true,
    upstreamCode: null,
  }),
  unreadableContent: (type: string): NormalizedError => ({
    code: type === "template" ? "template_error" : "invalid_parameters",
    message: `The message's ${type} payload could not be read; it was not sent.`,
    retriable: false,
    upstreamCode: null,
  }),
  numberDisconnected: (): NormalizedError => ({
    code: "number_disconnected",
    message: "The channel number was disconnected before the message left.",
    retriable: false,
    upstreamCode: null,
  }),
} as const;
