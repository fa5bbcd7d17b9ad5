import { getConnectedNumber } from "../../db/channel-numbers";
import type { Caller } from "../../domain/actor";
import { findByUuid } from "../../lib/job-id";
import { spendWorkspaceHourly, type Spent } from "../../domain/limit-check";

/**
 * Every change of a workspace's numbers may call the operator three times:
 * limited per workspace, whoever asks, before anything else.
 */
export function spendChange(env: Env, workspaceId: string): Promise<Spent> {
  return spendWorkspaceHourly(env, workspaceId, "numberChange", "number changes");
}

/** A connected number of the caller's workspace; foreign, disconnected and malformed ids read as missing. */
export const ownNumber = (env: Env, caller: Caller, id: string) =>
  findByUuid(id, (stored) => getConnectedNumber(env.DB, caller.workspaceId, stored));
