import { z } from "@hono/zod-openapi";
import { markUnverified, recordOperatorCheck, storedProfileOf, type ChannelNumberRow } from "../db/channel-numbers";
import { isoNow, now } from "../lib/clock";
import { openUpstreamCredentials } from "../lib/sealed-secrets";
import { fetchNumberProfile } from "../upstream/operator-account";
import { OperatorNotice } from "./operator-notices";

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

const isStale = (row: ChannelNumberRow): boolean =>
  row.upstream_type === "cloud" &&
  (row.operator_checked_at === null || now() - Date.parse(row.operator_checked_at) >= OPERATOR_REFRESH_MS);

/**
 * Asks the operator about a live number again when the last answer is an hour
 * old; the row as it is afterwards. A refusal is recorded as the number's last
 * operator error and never hides the last known rating and tier.
 */
export async function refreshIfStale(env: Env, row: ChannelNumberRow): Promise<ChannelNumberRow> {
  if (!isStale(row) || !row.upstream_phone_number_id) return row;
  const { accessToken } = await openUpstreamCredentials(env, row);
  const answer = await fetchNumberProfile(env, row.upstream_phone_number_id, accessToken);
  const at = isoNow();
  const result = answer.ok ? { profile: storedProfileOf(answer.value) } : { error: answer.reason.slice(0, 300) };
  const checked = (await recordOperatorCheck(env.DB, row.id, at, result)) ?? row;
  // The token itself refused: the number's binding is unverified until an owner replaces it (number-binding.ts).
  if (!answer.ok && answer.problem === "refused" && answer.field === "upstream.accessToken")
    return (await markUnverified(env.DB, row.id, at, result.error ?? answer.reason)) ?? checked;
  return checked;
}
