import type { Hook } from "@hono/zod-openapi";
import type { z } from "@hono/zod-openapi";
import { ApiError, type ErrorDetail } from "./errors";
import type { AppEnv } from "../context";

type Issue = z.core.$ZodIssue;

// zod 4 leaves the offending input out of its issues, so it is read back from
// the request data to tell a missing field from one of the wrong type.
function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let current = data;
  for (const key of path) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

function describe(issue: Issue, data: unknown): { rule: string; message: string } {
  switch (issue.code) {
    case "unrecognized_keys":
      return { rule: "unknown_field", message: `Unknown field(s): ${issue.keys.join(", ")}. Remove them.` };
    case "invalid_type":
      return valueAt(data, issue.path) === undefined
        ? { rule: "required", message: "This field is required." }
        : { rule: "type", message: issue.message };
    case "too_small":
      return { rule: "min", message: issue.message };
    case "too_big":
      return { rule: "max", message: issue.message };
    case "invalid_value":
      return { rule: "enum", message: issue.message };
    default:
      return {
        rule: issue.code === "custom" ? String(issue.params?.rule ?? "invalid") : issue.code,
        message: issue.message,
      };
  }
}

/** Flattens zod issues into the `details` entries of the uniform error. */
export function issuesToDetails(issues: readonly Issue[], prefix?: string, data?: unknown): ErrorDetail[] {
  return issues.flatMap((issue) => {
    const base = [prefix, ...issue.path.map(String)].filter(Boolean).join(".");
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({
        path: [base, key].filter(Boolean).join("."),
        rule: "unknown_field",
        message: `Unknown field "${key}". Remove it.`,
      }));
    }
    return [{ path: base || "(body)", ...describe(issue, data) }];
  });
}

const TARGET_PREFIX: Record<string, string | undefined> = {
  json: undefined,
  query: "query",
  param: "path",
  header: "header",
};

/** Validation failures of every route become one 400 `invalid_request` naming each bad field. */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (result) => {
  if (!result.success) {
    const details = issuesToDetails(
      result.error.issues,
      TARGET_PREFIX[result.target],
      "data" in result ? result.data : undefined,
    );
    throw new ApiError("invalid_request", "The request is invalid. See details for each field.", { details });
  }
};
