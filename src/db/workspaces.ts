export interface WorkspaceRow {
  id: string;
  name: string;
  plan_id: string;
  monthly_message_quota: number | null;
  created_at: string;
}

/** A workspace with its effective limits (the override, else the plan's). */
export interface WorkspaceWithLimits extends WorkspaceRow {
  plan_name: string;
  effective_quota: number;
  max_numbers: number;
  /** Days of message records the plan keeps listable (older days are archived). */
  message_history_days: number;
  /** Inbound media: the largest item copied to R2, and the bytes copied per UTC day. */
  media_max_item_bytes: number;
  media_daily_bytes: number;
}

export async function planExists(db: D1Database, planId: string): Promise<boolean> {
  return (await db.prepare("SELECT 1 FROM plans WHERE id = ?").bind(planId).first()) !== null;
}

export async function insertWorkspace(db: D1Database, row: WorkspaceRow): Promise<void> {
  await db
    .prepare("INSERT INTO workspaces (id, name, plan_id, monthly_message_quota, created_at) VALUES (?, ?, ?, ?, ?)")
    .bind(row.id, row.name, row.plan_id, row.monthly_message_quota, row.created_at)
    .run();
}

export async function getWorkspaceWithLimits(db: D1Database, id: string): Promise<WorkspaceWithLimits | null> {
  return db
    .prepare(
      `SELECT w.*, p.name AS plan_name, p.max_numbers, p.message_history_days, p.media_max_item_bytes, p.media_daily_bytes,
              COALESCE(w.monthly_message_quota, p.monthly_message_quota) AS effective_quota
         FROM workspaces w JOIN plans p ON p.id = w.plan_id
        WHERE w.id = ?`,
    )
    .bind(id)
    .first<WorkspaceWithLimits>();
}
