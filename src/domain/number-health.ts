import { z } from "@hono/zod-openapi";
import { OperatorNotice } from "./operator-notice";

/** The operator is asked about a live number at most this often (its quality rating and tier change over days). */
export const OPERATOR_REFRESH_MS = 60 * 60 * 1000;

export const NumberHealth = z
  .object({
    state: z.enum(["active", "paused", "disconnected"]).openapi({
      description:
        "`active`: messages are leaving. `paused`: the operator refused the number's account or credentials; sends wait in order " +
        "(see `sending`). `disconnected`: shown in the dashboard only (the API answers 404 for a disconnected number).",
    }),
    pausedSince: z.string().datetime().nullable(),
    pausedReason: z.string().nullable().openapi({ description: "Why it is paused, with the operator's code." }),
    lastOperatorError: z.string().nullable().openapi({
      description:
        "The operator's refusal of the last hourly check (e.g. an expired token), or its ban or restriction of the business account (from its webhooks); null once a check succeeds.",
    }),
    unverifiedSince: z
      .string()
      .datetime()
      .nullable()
      .openapi({
        description:
          "Live numbers: when the operator first refused the number's access token (HTTP 401 or code 190, on any call made with it); " +
          "null while it has not. While set, inbound messages are recorded without their content (type, sender and time only), and a " +
          "caller who proves control of the number with the operator (`POST /channel-numbers` with a working token) connects it to " +
          "their workspace, disconnecting it here. Replacing the token (`PATCH /channel-numbers/{id}`) clears it.",
      }),
    lastOperatorNotice: OperatorNotice.nullable().openapi({
      description:
        "The operator's last webhook about the number that changes nothing here but should be seen: a field this service does not apply " +
        "(e.g. `standby`: another app controls the number's conversations) or the `errors` it sent about the number. Replaced by the next; never cleared.",
    }),
    verifiedName: z
      .string()
      .nullable()
      .openapi({ description: "Live numbers: the business name the operator verified." }),
    qualityRating: z.string().nullable().openapi({
      description:
        "Live numbers: the operator's quality rating (`GREEN`, `YELLOW`, `RED`, …), from the hourly check and its quality webhooks.",
    }),
    messagingLimitTier: z.string().nullable().openapi({
      description:
        "Live numbers: the operator's messaging limit tier (e.g. `TIER_1K`), from the hourly check and its quality webhooks.",
    }),
    checkedAt: z.string().datetime().nullable().openapi({
      description:
        "When the operator was last asked (at most hourly, when the number is read) or its quality webhook arrived; null for sandbox numbers.",
    }),
    sendsToday: z.number().int().openapi({
      description: "Sends accepted from this number today (UTC); the counts reach it up to a minute behind.",
    }),
  })
  .openapi("NumberHealth");

export type NumberHealthView = z.infer<typeof NumberHealth>;
