import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/** Every error code the API can answer with, and the HTTP status it maps to. */
export const ERROR_STATUS = {
  invalid_request: 400,
  // API v2 template sends, checked against the number's templates before anything is queued.
  template_not_found: 400,
  template_language_not_found: 400,
  template_not_approved: 400,
  template_paused: 400,
  template_parameters_invalid: 400,
  // API v2 sends of every kind but text and template, outside the recipient's 24-hour window.
  service_window_closed: 400,
  unauthorized: 401,
  forbidden: 403,
  // The API key's role is below the one the route declares (`x-key-role`): nothing was done.
  insufficient_role: 403,
  not_found: 404,
  method_not_allowed: 405,
  idempotency_conflict: 409,
  rate_limit_exceeded: 429,
  monthly_message_limit_exceeded: 429,
  internal_error: 500,
} as const satisfies Record<string, ContentfulStatusCode>;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * Codes only API v2 answers with: v1's document lists every other code, and stays as it was;
 * v2's lists these too (routes/v2/api.ts).
 */
export const V2_ONLY_ERROR_CODES: readonly ErrorCode[] = ["service_window_closed"];

export interface ErrorDetail {
  path: string;
  rule: string;
  message: string;
  /** The message an Idempotency-Key is bound to (on `idempotency_conflict`). */
  jobId?: string;
}

export interface ErrorBody {
  error: {
    code: ErrorCode;
    message: string;
    requestId: string;
    details?: ErrorDetail[];
  };
}

/** The one error type routes throw; `onError` renders it as the uniform envelope. */
export class ApiError extends HTTPException {
  readonly code: ErrorCode;
  readonly details: ErrorDetail[] | undefined;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { details?: ErrorDetail[]; headers?: Record<string, string> } = {},
  ) {
    super(ERROR_STATUS[code], { message });
    this.code = code;
    this.details = options.details;
    this.headers = options.headers ?? {};
  }
}

export const notFound = (what = "Resource") => new ApiError("not_found", `${what} not found.`);

/** `value` when there is one; otherwise the route answers 404, naming `what`. */
export function foundOr404<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw notFound(what);
  return value;
}

export function errorBody(code: ErrorCode, message: string, requestId: string, details?: ErrorDetail[]): ErrorBody {
  return { error: { code, message, requestId, ...(details?.length ? { details } : {}) } };
}
