export interface AdminAuditRow {
  id: string;
  at: string;
  /** `admin-token:<id>`: which admin credential made the call (its fingerprint, never the token). */
  actor: string;
  method: string;
  route: string;
  path: string;
  status: number;
  request_id: string;
  client_address: string | null;
}

/** How long admin calls are kept. */
export const ADMIN_AUDIT_RETENTION_DAYS = 90;

export async function insertAdminAudit(db: D1Database, row: AdminAuditRow): Promise<void> {
  await db
    .prepare(
      `INSERT INTO admin_audit_log (id, at, actor, method, route, path, status, request_id, client_address)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(row.id, row.at, row.actor, row.method, row.route, row.path, row.status, row.request_id, row.client_address)
    .run();
}

/** Deletes up to `limit` of the oldest rows older than `before`; returns how many went. */
export async function purgeAdminAudit(db: D1Database, before: string, limit: number): Promise<number> {
  const result = await db
    .prepare(
      "DELETE FROM admin_audit_log WHERE id IN (SELECT id FROM admin_audit_log WHERE at < ? ORDER BY at LIMIT ?)",
    )
    .bind(before, limit)
    .run();
  return result.meta.changes;
}
