import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../context";
import { ERROR_STATUS, type ErrorCode } from "./errors";
import { validationHook } from "./validation";

export const ErrorResponse = z
  .object({
    error: z.object({
      code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
      message: z.string(),
      requestId: z.string(),
      details: z
        .array(
          z.object({
            path: z.string(),
            rule: z.string(),
            message: z.string(),
            jobId: z.string().optional().openapi({ description: "On `idempotency_conflict`: the jobId the key is bound to." }),
          }),
        )
        .optional()
        .openapi({ description: "One entry per bad field." }),
    }),
  })
  .openapi("Error");

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: "Invalid request (`invalid_request`); `details` names each bad field.",
  401: "Missing or invalid API key (`unauthorized`).",
  403: "Forbidden (`forbidden`).",
  404: "Not found (`not_found`).",
  409: "Idempotency-Key reused with a different payload (`idempotency_conflict`).",
  429: "`rate_limit_exceeded` (with Retry-After) or `monthly_message_limit_exceeded`.",
  500: "Server error (`internal_error`).",
};

/** The error entries of a route's `responses`, all in the uniform envelope. */
export function errorResponses<const S extends readonly (keyof typeof ERROR_DESCRIPTIONS)[]>(...statuses: S) {
  return Object.fromEntries(
    statuses.map((s) => [s, { description: ERROR_DESCRIPTIONS[s]!, content: { "application/json": { schema: ErrorResponse } } }]),
  ) as { [K in S[number]]: { description: string; content: { "application/json": { schema: typeof ErrorResponse } } } };
}

export const jsonContent = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

export const newRouter = () => new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

export const bearerSecurity = [{ bearerAuth: [] }];
