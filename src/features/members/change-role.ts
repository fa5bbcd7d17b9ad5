import type { RateLimited } from "../../domain/limit-check";
import type { Role } from "../../lib/roles";
import { isoNow } from "../../lib/clock";
import { spendMemberChange, type Stores } from "./member-change-budget";
import { changeRole, type MemberRow } from "./store";

/** Gives a member another role, unless it is the last owner's (`member: null`: unknown, or last owner). */
export async function changeMemberRole(
  env: Stores,
  workspaceId: string,
  memberId: string,
  role: Role,
): Promise<{ ok: true; member: MemberRow | null } | RateLimited> {
  const spent = await spendMemberChange(env, workspaceId);
  if (!spent.ok) return spent;
  return { ok: true, member: await changeRole(env.DB, workspaceId, memberId, role, isoNow()) };
}
