import { z } from "@hono/zod-openapi";
import {
  MEMBER_ROLES,
  upsertInvitedMemberStatement,
  changeRole,
  countMembers,
  deleteMember,
  findMemberByEmail,
  type MemberRole,
  type MemberRow,
} from "../db/members";
import { deleteSessionsOfInvitedStatement } from "../db/dashboard-sessions";
import { isoNow, now } from "../lib/clock";
import { randomBytes, sha256Hex, toBase64Url } from "../lib/crypto";
import { spendWorkspaceHourly, type RateLimited, type Spent } from "./limit-check";

export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
export const MAX_MEMBERS_PER_WORKSPACE = 50;
/** NIST SP 800-63B: at least 8 (we ask 12), and long passphrases must fit. */
export const PASSWORD_MIN_CHARS = 12;
export const PASSWORD_MAX_CHARS = 256;

const INVITATION_TOKEN = /^[A-Za-z0-9_-]{43}$/;

export const MemberEmail = z
  .string({ error: "email must be a string." })
  .trim()
  .max(254, { error: "email is longer than 254 characters." })
  .email({ error: "email is not an email address." })
  .transform((e) => e.toLowerCase());

export const MemberRoleSchema = z.enum(MEMBER_ROLES, { error: "role must be owner, developer or viewer." });

export const isWellFormedInvitationToken = (token: string): boolean => INVITATION_TOKEN.test(token);
export const hashInvitationToken = (token: string): Promise<string> => sha256Hex(token);

export const invitationUrl = (origin: string, token: string): string => `${origin}/dashboard/invitations/${token}`;

export type InviteResult =
  | { ok: true; member: MemberRow; token: string; expiresAt: string }
  | { ok: false; reason: "too_many_members" | "last_owner" }
  | RateLimited;

type Stores = Pick<Env, "DB" | "THROTTLE">;

/** Every change of a workspace's members spends from its budget first, whoever asks (owner or operator). */
function spendMemberChange(env: Stores, workspaceId: string): Promise<Spent> {
  return spendWorkspaceHourly(env, workspaceId, "memberChange", "member changes");
}

/** Gives a member another role, unless it is the last owner's (`member: null`: unknown, or last owner). */
export async function changeMemberRole(
  env: Stores,
  workspaceId: string,
  memberId: string,
  role: MemberRole,
): Promise<{ ok: true; member: MemberRow | null } | RateLimited> {
  const spent = await spendMemberChange(env, workspaceId);
  if (!spent.ok) return spent;
  return { ok: true, member: await changeRole(env.DB, workspaceId, memberId, role, isoNow()) };
}

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

/**
 * Invites `email` to the workspace with `role`, returning a single-use token
 * (its hash is stored) valid for 7 days. Inviting an existing member again
 * resets them: new role, password cleared, earlier link and every session
 * revoked. Only this workspace's members are consulted: the answer is the
 * same whatever exists in other workspaces (an email may belong to several).
 * Limited per workspace, whoever asks.
 */
export async function inviteMember(
  env: Stores,
  workspaceId: string,
  email: string,
  role: MemberRole,
): Promise<InviteResult> {
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
