import type { Role } from "../../lib/roles";

export interface SessionRow {
  token_hash: string;
  member_id: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
}

/** A session with the member and workspace it acts for, read in one query per dashboard request. */
export interface SessionWithMember extends SessionRow {
  workspace_id: string;
  email: string;
  role: Role;
  workspace_name: string;
}

const PURGE_BATCH = 50;

export function insertSessionStatement(db: D1Database, row: SessionRow): D1PreparedStatement {
  return db
    .prepare(
      "INSERT INTO dashboard_sessions (token_hash, member_id, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?)",
    )
    .bind(row.token_hash, row.member_id, row.created_at, row.last_seen_at, row.expires_at);
}

/** Deletes up to PURGE_BATCH sessions past their absolute expiry (idle ones go at the latest then). */
export function purgeExpiredSessionsStatement(db: D1Database, at: string): D1PreparedStatement {
  return db
    .prepare(
      `DELETE FROM dashboard_sessions WHERE token_hash IN
         (SELECT token_hash FROM dashboard_sessions WHERE expires_at <= ? ORDER BY expires_at LIMIT ${PURGE_BATCH})`,
    )
    .bind(at);
}

export async function findSession(db: D1Database, tokenHash: string): Promise<SessionWithMember | null> {
  return db
    .prepare(
      `SELECT s.*, m.workspace_id, m.email, m.role, w.name AS workspace_name
         FROM dashboard_sessions s
         JOIN members m ON m.id = s.member_id
         JOIN workspaces w ON w.id = m.workspace_id
        WHERE s.token_hash = ?`,
    )
    .bind(tokenHash)
    .first<SessionWithMember>();
}

export async function touchSession(db: D1Database, tokenHash: string, at: string): Promise<void> {
  await db.prepare("UPDATE dashboard_sessions SET last_seen_at = ? WHERE token_hash = ?").bind(at, tokenHash).run();
}

export async function deleteSession(db: D1Database, tokenHash: string): Promise<void> {
  await db.prepare("DELETE FROM dashboard_sessions WHERE token_hash = ?").bind(tokenHash).run();
}

export function deleteMemberSessionsStatement(db: D1Database, memberId: string): D1PreparedStatement {
  return db.prepare("DELETE FROM dashboard_sessions WHERE member_id = ?").bind(memberId);
}

/**
 * Ends every session of the workspace's member with this email once it holds
 * the invitation `invitationHash` (a re-invited member starts over). Run after
 * the invitation's upsert in one batch: a refused upsert ends no session.
 */
export function deleteSessionsOfInvitedStatement(
  db: D1Database,
  workspaceId: string,
  email: string,
  invitationHash: string,
): D1PreparedStatement {
  return db
    .prepare(
      "DELETE FROM dashboard_sessions WHERE member_id IN (SELECT id FROM members WHERE email = ? AND workspace_id = ? AND invitation_hash = ?)",
    )
    .bind(email, workspaceId, invitationHash);
}
