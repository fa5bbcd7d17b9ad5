import type { RateLimited } from "../../domain/limit-check";
import { spendMemberChange, type Stores } from "./member-change-budget";
import { deleteMember } from "./store";

/** Removes a member and its sessions, unless it is the last owner (`removed: false`). */
export async function removeMember(
  env: Stores,
  workspaceId: string,
  memberId: string,
): Promise<{ ok: true; removed: boolean } | RateLimited> {
  const spent = await spendMemberChange(env, workspaceId);
  if (!spent.ok) return spent;
  return { ok: true, removed: await deleteMember(env.DB, workspaceId, memberId) };
}
