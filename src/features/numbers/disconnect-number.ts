import { disconnectOwnNumber, type ChannelNumberRow } from "../../db/channel-numbers";
import type { Caller } from "../../domain/actor";
import type { RateLimited } from "../../domain/limit-check";
import { numberChanged, workspaceChanged } from "../../engine/numbers";
import { isoNow } from "../../lib/clock";
import type { ThrottleDecision } from "../../lib/throttle-client";
import { ownNumber, spendChange } from "./change-budget";

export type DisconnectOutcome =
  { ok: true; row: ChannelNumberRow; limit: ThrottleDecision } | { ok: false; problem: "not_found" } | RateLimited;

/**
 * Disconnects a number of the caller's workspace. New sends naming it are refused
 * at once; messages still queued on it end `failed` with `number_disconnected`
 * (the number object's drain does this when told the number is gone), each with
 * its status webhook event: none is left pending in silence.
 */
export async function disconnectNumber(env: Env, caller: Caller, numberId: string): Promise<DisconnectOutcome> {
  const spent = await spendChange(env, caller.workspaceId);
  if (!spent.ok) return spent;
  const found = await ownNumber(env, caller, numberId);
  if (!found) return { ok: false, problem: "not_found" };
  const row = await disconnectOwnNumber(env.DB, caller.workspaceId, found.id, isoNow());
  if (!row) return { ok: false, problem: "not_found" };
  await workspaceChanged(env, caller.workspaceId);
  await numberChanged(env, row.id);
  return { ok: true, row, limit: spent.decision };
}
