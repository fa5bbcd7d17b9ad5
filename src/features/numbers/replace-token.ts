import { replaceCredentialsAndProfile, storedProfileOf, type ChannelNumberRow } from "../../db/channel-numbers";
import type { Caller } from "../../domain/actor";
import type { RateLimited } from "../../domain/limit-check";
import { numberChanged } from "../../engine/numbers";
import { isoNow } from "../../lib/clock";
import { sealOperatorCredentials } from "../../lib/sealed-secrets";
import type { ThrottleDecision } from "../../lib/throttle-client";
import { fetchNumberProfile, verifyAndSubscribe, type OperatorProfile } from "../../operator/account";
import { ownNumber, spendChange } from "./change-budget";
import type { Refused, Unavailable } from "./connect-number";

export type ReplaceOutcome =
  | { ok: true; row: ChannelNumberRow; profile: OperatorProfile; limit: ThrottleDecision }
  | Refused
  | Unavailable
  | { ok: false; problem: "not_found" }
  | { ok: false; problem: "sandbox" }
  | RateLimited;

/** Replaces a live number's access token once the operator confirmed it controls the number (and re-subscribes its account). */
export async function replaceNumberToken(
  env: Env,
  caller: Caller,
  numberId: string,
  accessToken: string,
): Promise<ReplaceOutcome> {
  const spent = await spendChange(env, caller.workspaceId);
  if (!spent.ok) return spent;
  const row = await ownNumber(env, caller, numberId);
  if (!row) return { ok: false, problem: "not_found" };
  if (row.upstream_type !== "cloud" || !row.upstream_phone_number_id) return { ok: false, problem: "sandbox" };
  // Numbers the admin API connected without a business account id: only the number's record is checked.
  const verified = row.waba_id
    ? await verifyAndSubscribe(env, { phoneNumberId: row.upstream_phone_number_id, wabaId: row.waba_id, accessToken })
    : await fetchNumberProfile(env, row.upstream_phone_number_id, accessToken);
  if (!verified.ok) return verified;
  const p = verified.value;
  const sealed = await sealOperatorCredentials(env, row.id, { accessToken });
  const updated = await replaceCredentialsAndProfile(env.DB, row.id, sealed, storedProfileOf(p), isoNow());
  if (!updated) return { ok: false, problem: "not_found" };
  // A number paused by a refused token sends again at once.
  await numberChanged(env, row.id);
  return { ok: true, row: updated, profile: p, limit: spent.decision };
}
