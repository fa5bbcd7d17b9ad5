export type AuditActorType = "member" | "api_key" | "admin";

export interface AuditRow {
  workspace_id: string;
  seq: number;
  at: string;
  actor_type: AuditActorType;
  actor_id: string;
  actor_label: string | null;
  action: string;
  target_type: string;
  target_id: string | null;
  detail: string | null;
  client_address: string | null;
  request_id: string;
}

/**
 * How long entries are kept, and how many of each action a workspace keeps at most (the oldest of
 * that action go first): a flood of one action (test contacts, test events, sign-ins) never pushes
 * out the entries of another (a number connected, a key created). At most
 * AUDIT_MAX_ROWS_PER_ACTION × the number of actions per workspace (migrations/0032).
 */
export const AUDIT_RETENTION_DAYS = 90;
export const AUDIT_MAX_ROWS_PER_ACTION = 50;

/**
 * Appends an entry with the workspace's next `seq`, and trims the workspace's entries of the same
 * action to the newest `maxRows`, in one batch.
 */
export async function appendAudit(
  db: D1Database,
  row: Omit<AuditRow, "seq">,
  maxRows = AUDIT_MAX_ROWS_PER_ACTION,
): Promise<void> {
  await db.batch([
    db
      .prepare(
        `INSERT INTO audit_log (workspace_id, seq, at, actor_type, actor_id, actor_label, action, target_type, target_id, detail, client_address, request_id)
         VALUES (?1, COALESCE((SELECT MAX(seq) FROM audit_log WHERE workspace_id = ?1), 0) + 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)`,
      )
      .bind(
        row.workspace_id,
        row.at,
        row.actor_type,
        row.actor_id,
        row.actor_label,
        row.action,
        row.target_type,
        row.target_id,
        row.detail,
        row.client_address,
        row.request_id,
      ),
    // The entry just past the newest `maxRows` of this action (none while there are fewer) and every older one.
    db
      .prepare(
        `DELETE FROM audit_log WHERE workspace_id = ?1 AND action = ?2 AND seq <= (
           SELECT seq FROM audit_log WHERE workspace_id = ?1 AND action = ?2 ORDER BY seq DESC LIMIT 1 OFFSET ?3)`,
      )
      .bind(row.workspace_id, row.action, maxRows),
  ]);
}

export interface AuditFilter {
  action?: string;
  actorType?: AuditActorType;
  /** Entries before this seq (the next page). */
  beforeSeq?: number;
  limit: number;
}

/** The workspace's entries, newest first. */
export async function listAudit(db: D1Database, workspaceId: string, f: AuditFilter): Promise<AuditRow[]> {
  const { results } = await db
    .prepare(
      `SELECT * FROM audit_log
        WHERE workspace_id = ?1 AND (?2 IS NULL OR seq < ?2) AND (?3 IS NULL OR action = ?3) AND (?4 IS NULL OR actor_type = ?4)
        ORDER BY seq DESC LIMIT ?5`,
    )
    .bind(workspaceId, f.beforeSeq ?? null, f.action ?? null, f.actorType ?? null, f.limit)
    .all<AuditRow>();
  return results;
}

/** Deletes up to `limit` of the oldest entries older than `before` (any workspace); returns how many went. */
export async function purgeAudit(db: D1Database, before: string, limit: number): Promise<number> {
  const result = await db
    .prepare(
      `DELETE FROM audit_log WHERE (workspace_id, seq) IN
         (SELECT workspace_id, seq FROM audit_log WHERE at < ? ORDER BY at LIMIT ?)`,
    )
    .bind(before, limit)
    .run();
  return result.meta.changes;
}
