import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../context";
import { ERROR_STATUS, V2_ONLY_ERROR_CODES, type ErrorBody, type ErrorCode } from "./errors";
import { validationHook } from "./validation";

export const ErrorResponse = z
  .object({
    error: z.object({
      // v1's codes; v2's document adds its own (withV2ErrorCodes).
      code: z.enum(
        (Object.keys(ERROR_STATUS) as ErrorCode[]).filter((c) => !V2_ONLY_ERROR_CODES.includes(c)) as [
          ErrorCode,
          ...ErrorCode[],
        ],
      ),
      message: z.string(),
      requestId: z.string(),
      details: z
        .array(
          z.object({
            path: z.string(),
            rule: z.string(),
            message: z.string(),
            jobId: z
              .string()
              .optional()
              .openapi({ description: "On `idempotency_conflict`: the jobId the key is bound to." }),
          }),
        )
        .optional()
        .openapi({ description: "One entry per bad field." }),
    }),
  })
  .openapi("Error");

type Registry = OpenAPIHono["openAPIRegistry"];
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/**
 * Response headers shared by many operations, registered once as components.
 * The rate-limit fields follow draft-ietf-httpapi-ratelimit-headers (RateLimit-Policy
 * and RateLimit); the three older RateLimit-* fields stay for the deprecation period
 * documented in docs/customers/limits.md.
 */
export function registerSharedComponents(registry: Registry): void {
  const integer = { type: "integer" as const, minimum: 0 };
  registry.registerComponent("headers", "X-Request-Id", {
    description:
      "Id of this request (ours, or the one you sent if it is 8–128 of `A–Z a–z 0–9 . _ : -`). Quote it to support.",
    schema: { type: "string", pattern: "^[A-Za-z0-9._:-]{8,128}$" },
    example: "req_6a4c0e3f2b9d4e71a8c5d2f1e0b3a7c9",
  });
  registry.registerComponent("headers", "Retry-After", {
    description:
      "Whole seconds (at least 1) until a retry can be admitted. Sent with `rate_limit_exceeded`, not with `monthly_message_limit_exceeded`.",
    schema: { ...integer, minimum: 1 },
    example: 1,
  });
  registry.registerComponent("headers", "RateLimit-Policy", {
    description:
      'The send rate limits (IETF draft RateLimit-Policy, a Structured Fields list): `"number";q=2;w=1` (per channel number, 2 sends ' +
      'in any 1-second window) and `"workspace";q=1200;w=60` (per workspace, 1200 sends in any 60-second window).',
    schema: { type: "string" },
    example: '"number";q=2;w=1, "workspace";q=1200;w=60',
  });
  registry.registerComponent("headers", "RateLimit", {
    description:
      "The limit closest to refusing (IETF draft RateLimit field): its policy name, `r` sends remaining in the window and `t` " +
      "seconds until the window is entirely free.",
    schema: { type: "string" },
    example: '"number";r=1;t=1',
  });
  const legacy = "Deprecated (use `RateLimit`); kept until the end of the deprecation period in the API guide.";
  registry.registerComponent("headers", "RateLimit-Limit", {
    description: `Sends allowed in the window of the limit closest to refusing. ${legacy}`,
    deprecated: true,
    schema: integer,
    example: 2,
  });
  registry.registerComponent("headers", "RateLimit-Remaining", {
    description: `Sends left in that window. ${legacy}`,
    deprecated: true,
    schema: integer,
    example: 1,
  });
  registry.registerComponent("headers", "RateLimit-Reset", {
    description: `Seconds until that window is entirely free. ${legacy}`,
    deprecated: true,
    schema: integer,
    example: 1,
  });
}

/** Every response of the API carries X-Request-Id (the request-id middleware sets it). */
export const requestIdHeader = { "X-Request-Id": headerRef("X-Request-Id") };

/** Sent with every accepted send and every `rate_limit_exceeded`. */
export const rateLimitHeaders = {
  ...requestIdHeader,
  "RateLimit-Policy": headerRef("RateLimit-Policy"),
  RateLimit: headerRef("RateLimit"),
  "RateLimit-Limit": headerRef("RateLimit-Limit"),
  "RateLimit-Remaining": headerRef("RateLimit-Remaining"),
  "RateLimit-Reset": headerRef("RateLimit-Reset"),
};

const EXAMPLE_REQUEST_ID = "req_6a4c0e3f2b9d4e71a8c5d2f1e0b3a7c9";
const example = (code: ErrorCode, message: string, details?: ErrorBody["error"]["details"]): ErrorBody => ({
  error: { code, message, requestId: EXAMPLE_REQUEST_ID, ...(details ? { details } : {}) },
});

const ERRORS: Record<number, { description: string; example: ErrorBody }> = {
  400: {
    description: "Invalid request (`invalid_request`); `details` names each bad field.",
    example: example("invalid_request", "The request is invalid. See details for each field.", [
      {
        path: "to",
        rule: "no_plus",
        message: "Drop the leading '+': send E.164 digits only, for example 5511999998888.",
      },
    ]),
  },
  401: {
    description: "Missing or invalid API key (`unauthorized`).",
    example: example("unauthorized", "Missing or invalid API key."),
  },
  403: {
    description:
      "Forbidden (`forbidden`); or the API key's role is below the operation's `x-key-role` (`insufficient_role`), and nothing was done.",
    example: example("forbidden", "channelNumberId is not a connected number of this workspace."),
  },
  404: { description: "Not found (`not_found`).", example: example("not_found", "Resource not found.") },
  409: {
    description: "Idempotency-Key reused with a different payload (`idempotency_conflict`).",
    example: example("idempotency_conflict", "This Idempotency-Key was already used with a different payload."),
  },
  429: {
    description:
      "`rate_limit_exceeded` (with Retry-After and the rate-limit headers) or `monthly_message_limit_exceeded`.",
    example: example(
      "rate_limit_exceeded",
      "Rate limit exceeded (2 messages per second per number). Retry after the Retry-After seconds.",
    ),
  },
  500: {
    description: "Server error (`internal_error`); safe to retry.",
    example: example("internal_error", "Something went wrong on our side. Quote the requestId to support."),
  },
};

type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 429 | 500;
interface ErrorEntry {
  description: string;
  headers: Record<string, { $ref: string }>;
  content: { "application/json": { schema: typeof ErrorResponse; example: ErrorBody } };
}

/** The error entries of a route's `responses`, all in the uniform envelope, with headers and an example. */
export function errorResponses<const S extends readonly ErrorStatus[]>(...statuses: S) {
  return Object.fromEntries(
    statuses.map((s) => {
      const { description, example } = ERRORS[s]!;
      const headers = s === 429 ? { ...rateLimitHeaders, "Retry-After": headerRef("Retry-After") } : requestIdHeader;
      const entry: ErrorEntry = {
        description,
        headers,
        content: { "application/json": { schema: ErrorResponse, example } },
      };
      return [s, entry];
    }),
  ) as { [K in S[number]]: ErrorEntry };
}

/** A JSON response: its schema, an example of its body, and the headers it carries (X-Request-Id always). */
export const jsonContent = <T extends z.ZodType>(
  schema: T,
  description: string,
  example?: z.output<T>,
  headers: Record<string, { $ref: string }> = requestIdHeader,
) => ({
  description,
  headers,
  content: { "application/json": { schema, ...(example === undefined ? {} : { example }) } },
});

/** A JSON request body with an example. */
export const jsonRequestBody = <T extends z.ZodType>(schema: T, example: z.input<T>) => ({
  required: true as const,
  content: { "application/json": { schema, example } },
});

export const newRouter = () => new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

export const bearerSecurity = [{ bearerAuth: [] }];
