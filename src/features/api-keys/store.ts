import type { KeyRole } from "../../lib/roles";

export interface ApiKeyRow {
  id: string;
  workspace_id: string;
  name: string | null;
  key_hash: string;
  last_four: string;
  /** Fixed at creation: what the key may do. */
  role: KeyRole;
  created_at: string;
  revoked_at: string | null;
  /** Coarse: written at most once per key per 10 minutes (record-use.ts). */
  last_used_at: string | null;
}

export async function insertApiKey(db: D1Database, row: ApiKeyRow): Promise<void> {
  await db
    .prepare(
      "INSERT INTO api_keys (id, workspace_id, name, key_hash, last_four, role, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
    )
    .bind(row.id, row.workspace_id, row.name, row.key_hash, row.last_four, row.role, row.created_at)
    .run();
}

export async function findActiveKeyByHash(db: D1Database, keyHash: string): Promise<ApiKeyRow | null> {
  return db
    .prepare("SELECT * FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL")
    .bind(keyHash)
    .first<ApiKeyRow>();
}

/** One key of the workspace (revoked or not); a foreign id reads as missing. */
export async function getKey(db: D1Database, workspaceId: string, keyId: string): Promise<ApiKeyRow | null> {
  return db
    .prepare("SELECT * FROM api_keys WHERE id = ? AND workspace_id = ?")
    .bind(keyId, workspaceId)
    .first<ApiKeyRow>();
}

export async function listKeys(db: D1Database, workspaceId: string): Promise<ApiKeyRow[]> {
  const { results } = await db
    .prepare("SELECT * FROM api_keys WHERE workspace_id = ? ORDER BY created_at, id")
    .bind(workspaceId)
    .all<ApiKeyRow>();
  return results;
}

/**
 * Marks the key revoked; returns its hash so caches can drop it, or null if
 * unknown (or, when `workspaceId` is given, a key of another workspace).
 */
export async function revokeKey(
  db: D1Database,
  keyId: string,
  at: string,
  workspaceId: string | null = null,
): Promise<{ key_hash: string; workspace_id: string } | null> {
  return db
    .prepare(
      "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?1) WHERE id = ?2 AND (?3 IS NULL OR workspace_id = ?3) RETURNING key_hash, workspace_id",
    )
    .bind(at, keyId, workspaceId)
    .first<{ key_hash: string; workspace_id: string }>();
}

/** Records a use, unless one at or after `notBefore` is already recorded (then nothing is written). */
export async function recordKeyUse(db: D1Database, keyId: string, at: string, notBefore: string): Promise<void> {
  await db
    .prepare("UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)")
    .bind(at, keyId, notBefore)
    .run();
}
