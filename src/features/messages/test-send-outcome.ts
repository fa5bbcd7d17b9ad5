import type { ErrorDetail } from "../../lib/errors";
import type { SendOutcome } from "../../messages/send";

/** The statuses a dashboard test send answers a refusal with (the API's for the same outcome). */
export type TestSendRefusal = 400 | 403 | 409 | 429;

/**
 * What a dashboard test send (a template's, or a sandbox number's media and buttons) shows of the
 * engine's answer to its send: the one reading of a send outcome for a form, so that both forms
 * refuse alike and a changed form gets a fresh key.
 */
export function readTestSendOutcome<R>(
  outcome: SendOutcome,
  to: {
    accepted: (jobId: string, duplicate: boolean) => R;
    refused: (status: TestSendRefusal, message: string, details?: ErrorDetail[], key?: string) => R;
  },
): R {
  switch (outcome.kind) {
    case "created":
      return to.accepted(outcome.jobId, false);
    case "duplicate":
      return to.accepted(outcome.jobId, true);
    case "refused":
      if (outcome.code === "forbidden") return to.refused(403, "This number is no longer connected to the workspace.");
      return to.refused(400, `Not sent (${outcome.code}): ${outcome.message}`, outcome.details);
    case "forbidden":
      return to.refused(403, "This number is no longer connected to the workspace.");
    case "conflict":
      // Only a changed form reuses a key with another payload: a fresh key is offered with the form.
      return to.refused(409, "This form was already used for another test: send it again.", [], crypto.randomUUID());
    case "quota_exceeded":
      return to.refused(429, `Not sent: the plan's monthly quota of ${outcome.limit} messages is used up.`);
    case "rate_limited":
      return to.refused(
        429,
        outcome.scope === "number"
          ? "Not sent: this number sends at most 2 messages a second. Try again in a moment."
          : "Not sent: the workspace sends at most 1200 messages a minute. Try again in a moment.",
      );
  }
}
