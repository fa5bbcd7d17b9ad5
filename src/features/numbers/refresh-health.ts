import { markUnverified, recordOperatorCheck, storedProfileOf, type ChannelNumberRow } from "../../db/channel-numbers";
import { OPERATOR_REFRESH_MS } from "../../domain/number-health";
import { isoNow, now } from "../../lib/clock";
import { openOperatorCredentials } from "../../lib/sealed-secrets";
import { fetchNumberProfile } from "../../operator/account";

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
  const { accessToken } = await openOperatorCredentials(env, row);
  const answer = await fetchNumberProfile(env, row.upstream_phone_number_id, accessToken);
  const at = isoNow();
  const result = answer.ok ? { profile: storedProfileOf(answer.value) } : { error: answer.reason.slice(0, 300) };
  const checked = (await recordOperatorCheck(env.DB, row.id, at, result)) ?? row;
  // The token itself refused: the number's binding is unverified until an owner replaces it (number-binding.ts).
  if (!answer.ok && answer.problem === "refused" && answer.field === "upstream.accessToken")
    return (await markUnverified(env.DB, row.id, at, result.error ?? answer.reason)) ?? checked;
  return checked;
}
