import type { components } from "./generated/openapi.js";

type ErrorEnvelope = components["schemas"]["Error"]["error"];

/**
 * A code of the API's error envelope, or `unexpected_response` for an answer that is not one. A 502
 * (API v2's read marks) carries the operator's error normalized as a message's `error.code`
 * (`upstream_auth_failed`, `upstream_unavailable` …, see the errors guide): any string, so that a code
 * added later still types.
 */
export type ErrorCode = ErrorEnvelope["code"] | "unexpected_response" | (string & Record<never, never>);
export type ErrorDetail = NonNullable<ErrorEnvelope["details"]>[number];

/** Base class of every error this SDK throws. */
export class MessagingError extends Error {
  override name = "MessagingError";
}

/** The API answered with an error status (after any retries). */
export class ApiError extends MessagingError {
  override name = "ApiError";
  readonly status: number;
  readonly code: ErrorCode;
  /** The `X-Request-Id` of the failed request: quote it to support. */
  readonly requestId: string | null;
  /** One entry per bad field on validation errors; empty otherwise. */
  readonly details: ErrorDetail[];
  /** `Retry-After` in seconds, when the API sent one. */
  readonly retryAfterSeconds: number | null;
  /**
   * On a 502 that carries the operator's error: whether the same call later may succeed (`false`:
   * the SDK does not retry it). `null` when the answer does not say.
   */
  readonly retriable: boolean | null;
  /** On a 502 that carries the operator's error: the operator's own code, if it sent one. */
  readonly upstreamCode: string | null;

  constructor(init: {
    status: number;
    code: ErrorCode;
    message: string;
    requestId: string | null;
    details?: ErrorDetail[];
    retryAfterSeconds?: number | null;
    retriable?: boolean | null;
    upstreamCode?: string | null;
  }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.details = init.details ?? [];
    this.retryAfterSeconds = init.retryAfterSeconds ?? null;
    this.retriable = init.retriable ?? null;
    this.upstreamCode = init.upstreamCode ?? null;
  }
}

/** No answer from the API: network failures or timeouts until the retries or the deadline ran out. */
export class ConnectionError extends MessagingError {
  override name = "ConnectionError";
  /** How many requests were made. */
  readonly attempts: number;

  constructor(message: string, options: { cause: unknown; attempts: number }) {
    super(message, { cause: options.cause });
    this.attempts = options.attempts;
  }
}

/** v1's envelope, or API v2's read-mark refusal (a 502), which adds the operator's `retriable` and `upstreamCode`. */
type Envelope = ErrorEnvelope & { retriable?: unknown; upstreamCode?: unknown };

const isEnvelope = (body: unknown): body is { error: Envelope } =>
  typeof body === "object" &&
  body !== null &&
  "error" in body &&
  typeof (body as { error: unknown }).error === "object" &&
  typeof (body as { error: { code?: unknown } }).error?.code === "string";

/** `Retry-After` as seconds: delta-seconds or an HTTP date. */
export function retryAfterSeconds(response: Response, now = Date.now()): number | null {
  const raw = response.headers.get("retry-after");
  if (raw === null) return null;
  if (/^\d+$/.test(raw.trim())) return Number(raw.trim());
  const at = Date.parse(raw);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/** The typed error for a non-2xx answer (`body` is what openapi-fetch parsed, JSON or text). */
export function apiErrorFrom(response: Response, body: unknown): ApiError {
  const requestId = response.headers.get("x-request-id");
  const retryAfter = retryAfterSeconds(response);
  if (isEnvelope(body)) {
    return new ApiError({
      status: response.status,
      code: body.error.code,
      message: body.error.message,
      requestId: body.error.requestId ?? requestId,
      details: body.error.details,
      retryAfterSeconds: retryAfter,
      retriable: typeof body.error.retriable === "boolean" ? body.error.retriable : null,
      upstreamCode: typeof body.error.upstreamCode === "string" ? body.error.upstreamCode : null,
    });
  }
  return new ApiError({
    status: response.status,
    code: "unexpected_response",
    message: `HTTP ${response.status} without the API's error envelope${typeof body === "string" && body ? `: ${body.slice(0, 200)}` : ""}`,
    requestId,
    retryAfterSeconds: retryAfter,
  });
}
