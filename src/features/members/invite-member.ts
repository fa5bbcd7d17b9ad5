import { hashInvitationToken, INVITATION_TTL_MS, MAX_MEMBERS_PER_WORKSPACE } from "../../domain/members";
import type { RateLimited } from "../../domain/limit-check";
import type { Role } from "../../lib/roles";
import { now } from "../../lib/clock";
import { randomBytes, toBase64Url } from "../../lib/crypto";
import { deleteSessionsOfInvitedStatement } from "../sign-in/store";
import { spendMemberChange, type Stores } from "./member-change-budget";
import { countMembers, findMemberByEmail, upsertInvitedMemberStatement, type MemberRow } from "./store";

export type InviteResult =
  | { ok: true; member: MemberRow; token: string; expiresAt: string }
  | { ok: false; reason: "too_many_members" | "last_owner" }
  | RateLimited;

/**
 * Invites `email` to the workspace with `role`, returning a single-use token
 * (its hash is stored) valid for 7 days. Inviting an existing member again
 * resets them: new role, password cleared, earlier link and every session
 * revoked. Only this workspace's members are consulted: the answer is the
 * same whatever exists in other workspaces (an email may belong to several).
 * Limited per workspace, whoever asks.
 */
export async function inviteMember(env: Stores, workspaceId: string, email: string, role: Role): Promise<InviteResult> {
  const spent = await spendMemberChange(env, workspaceId);
  if (!spent.ok) return spent;
  const db = env.DB;
  const existing = await findMemberByEmail(db, workspaceId, email);
  if (!existing && (await countMembers(db, workspaceId)) >= MAX_MEMBERS_PER_WORKSPACE)
    return { ok: false, reason: "too_many_members" };

  const token = toBase64Url(randomBytes(32));
  const invitationHash = await hashInvitationToken(token);
  const at = now();
  const expiresAt = new Date(at + INVITATION_TTL_MS).toISOString();
  const [upserted] = await db.batch<MemberRow>([
    upsertInvitedMemberStatement(db, {
      id: crypto.randomUUID(),
      workspaceId,
      email,
      role,
      invitationHash,
      expiresAt,
      at: new Date(at).toISOString(),
    }),
    deleteSessionsOfInvitedStatement(db, workspaceId, email, invitationHash),
  ]);
  const member = upserted?.results[0];
  // Refused by the statement: the workspace's last owner would lose the role.
  if (!member) return { ok: false, reason: "last_owner" };
  return { ok: true, member, token, expiresAt };
}
