import type { Refused } from "../features/numbers/connect-number";
import { ApiError } from "../lib/errors";

/**
 * The uniform 400 (a refusal naming the field) or 500 (the operator could not answer) of an operator
 * outcome: the public API and the admin API connect numbers through the same checks.
 */
export function operatorError(
  outcome: Refused | { problem: "unavailable"; reason: string },
  pathOf: (field: Refused["field"]) => string = (field) => field,
): ApiError {
  if (outcome.problem === "unavailable") return new ApiError("internal_error", outcome.reason);
  return new ApiError("invalid_request", "The operator did not confirm the number; nothing was stored.", {
    details: [{ path: pathOf(outcome.field), rule: "upstream_verification", message: outcome.reason }],
  });
}
