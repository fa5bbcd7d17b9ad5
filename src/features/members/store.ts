import type { Role } from "../../lib/roles";

export interface MemberRow {
  id: string;
  workspace_id: string;
  email: string;
  role: Role;
  password_hash: string | null;
  invitation_hash: string | null;
  invitation_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

/** The workspace's member with this email, if any (an email may belong to several workspaces). */
export async function findMemberByEmail(db: D1Database, workspaceId: string, email: string): Promise<MemberRow | null> {
  return db
    .prepare("SELECT * FROM members WHERE workspace_id = ? AND email = ?")
    .bind(workspaceId, email)
    .first<MemberRow>();
}

/**
 * The memberships of an email that have a password (sign-in checks each), oldest first, at most
 * `limit`. Oldest first: any workspace's owner can add a membership of any address, and one added
 * later must never push out the ones the address already had.
 */
export async function membershipsWithPassword(db: D1Database, email: string, limit: number): Promise<MemberRow[]> {
  const { results } = await db
    .prepare("SELECT * FROM members WHERE email = ? AND password_hash IS NOT NULL ORDER BY created_at, id LIMIT ?")
    .bind(email, limit)
    .all<MemberRow>();
  return results;
}

export type MemberWithWorkspace = MemberRow & { workspace_name: string };

/** Members by id, with their workspace's name (the workspace picker after sign-in). */
export async function membersWithWorkspace(db: D1Database, ids: string[]): Promise<MemberWithWorkspace[]> {
  if (ids.length === 0) return [];
  const { results } = await db
    .prepare(
      `SELECT m.*, w.name AS workspace_name FROM members m JOIN workspaces w ON w.id = m.workspace_id
        WHERE m.id IN (${ids.map(() => "?").join(", ")}) ORDER BY w.name, m.id`,
    )
    .bind(...ids)
    .all<MemberWithWorkspace>();
  return results;
}

/** A member of the workspace; a foreign id reads as missing. */
export async function getMember(db: D1Database, workspaceId: string, id: string): Promise<MemberRow | null> {
  return db.prepare("SELECT * FROM members WHERE id = ? AND workspace_id = ?").bind(id, workspaceId).first<MemberRow>();
}

export async function listMembers(db: D1Database, workspaceId: string): Promise<MemberRow[]> {
  const { results } = await db
    .prepare("SELECT * FROM members WHERE workspace_id = ? ORDER BY created_at, id")
    .bind(workspaceId)
    .all<MemberRow>();
  return results;
}

export async function countMembers(db: D1Database, workspaceId: string): Promise<number> {
  const row = await db
    .prepare("SELECT COUNT(*) AS n FROM members WHERE workspace_id = ?")
    .bind(workspaceId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

/** The member whose invitation token hashes to `hash`, if the invitation is still valid at `at`. */
export async function findMemberByInvitation(db: D1Database, hash: string, at: string): Promise<MemberRow | null> {
  return db
    .prepare("SELECT * FROM members WHERE invitation_hash = ? AND invitation_expires_at > ?")
    .bind(hash, at)
    .first<MemberRow>();
}

/**
 * Creates the member, or, for an email already in the workspace, gives it the
 * role and resets it: the password is cleared and the new invitation replaces
 * any earlier one. Returns null if the reset would take the owner role from
 * the workspace's last owner. Other workspaces' rows play no part.
 * (Sessions of a reset member are deleted by the caller, in the same batch.)
 */
export function upsertInvitedMemberStatement(
  db: D1Database,
  m: {
    id: string;
    workspaceId: string;
    email: string;
    role: Role;
    invitationHash: string;
    expiresAt: string;
    at: string;
  },
): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO members (id, workspace_id, email, role, password_hash, invitation_hash, invitation_expires_at, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?6, ?7, ?8)
       ON CONFLICT (workspace_id, email) DO UPDATE SET
         role = excluded.role, password_hash = NULL, invitation_hash = excluded.invitation_hash,
         invitation_expires_at = excluded.invitation_expires_at, updated_at = excluded.updated_at
       -- Like changeRole: never the last owner's role away.
       WHERE excluded.role = 'owner' OR members.role <> 'owner'
             OR (SELECT COUNT(*) FROM members WHERE workspace_id = ?2 AND role = 'owner') > 1
       RETURNING *`,
    )
    .bind(m.id, m.workspaceId, m.email, m.role, m.invitationHash, m.expiresAt, m.at, m.at);
}

/**
 * Uses the invitation: sets the password and spends the token, in one
 * statement, so that a link works once even when submitted twice at once.
 */
export async function redeemInvitation(
  db: D1Database,
  hash: string,
  passwordHash: string,
  at: string,
): Promise<MemberRow | null> {
  return db
    .prepare(
      `UPDATE members SET password_hash = ?, invitation_hash = NULL, invitation_expires_at = NULL, updated_at = ?
        WHERE invitation_hash = ? AND invitation_expires_at > ? RETURNING *`,
    )
    .bind(passwordHash, at, hash, at)
    .first<MemberRow>();
}

/** Replaces the password of a member whose current hash is still `expectedHash` (no lost update). */
export function setPasswordStatement(
  db: D1Database,
  memberId: string,
  expectedHash: string,
  passwordHash: string,
  at: string,
): D1PreparedStatement {
  return db
    .prepare("UPDATE members SET password_hash = ?, updated_at = ? WHERE id = ? AND password_hash = ?")
    .bind(passwordHash, at, memberId, expectedHash);
}

/**
 * Changes a member's role, unless that would leave the workspace without an
 * owner. Returns the changed row, or null (unknown member, or last owner).
 */
export async function changeRole(
  db: D1Database,
  workspaceId: string,
  memberId: string,
  role: Role,
  at: string,
): Promise<MemberRow | null> {
  return db
    .prepare(
      `UPDATE members SET role = ?1, updated_at = ?2
        WHERE id = ?3 AND workspace_id = ?4
          AND (?1 = 'owner' OR role <> 'owner'
               OR (SELECT COUNT(*) FROM members WHERE workspace_id = ?4 AND role = 'owner') > 1)
        RETURNING *`,
    )
    .bind(role, at, memberId, workspaceId)
    .first<MemberRow>();
}

/** Deletes a member (not the workspace's last owner) and its sessions; true if deleted. */
export async function deleteMember(db: D1Database, workspaceId: string, memberId: string): Promise<boolean> {
  const [, deleted] = await db.batch([
    // Sessions first: their rows reference the member.
    db
      .prepare(
        `DELETE FROM dashboard_sessions WHERE member_id = (
           SELECT id FROM members WHERE id = ?1 AND workspace_id = ?2
             AND (role <> 'owner' OR (SELECT COUNT(*) FROM members WHERE workspace_id = ?2 AND role = 'owner') > 1))`,
      )
      .bind(memberId, workspaceId),
    db
      .prepare(
        `DELETE FROM members WHERE id = ?1 AND workspace_id = ?2
           AND (role <> 'owner' OR (SELECT COUNT(*) FROM members WHERE workspace_id = ?2 AND role = 'owner') > 1)`,
      )
      .bind(memberId, workspaceId),
  ]);
  return (deleted?.meta.changes ?? 0) > 0;
}
