import type { Cursor } from "../lib/pagination";

export interface WebhookRow {
  id: string;
  workspace_id: string;
  channel_number_id: string;
  url: string;
  sealed_secret: string;
  status: "enabled" | "disabled";
  failing_since: string | null;
  disabled_at: string | null;
  created_at: string;
  updated_at: string;
}

export async function listWebhooks(db: D1Database, workspaceId: string, limit: number, after?: Cursor): Promise<WebhookRow[]> {
  const stmt = after
    ? db
        .prepare("SELECT * FROM webhooks WHERE workspace_id = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?")
        .bind(workspaceId, after.sortKey, after.id, limit)
    : db.prepare("SELECT * FROM webhooks WHERE workspace_id = ? ORDER BY created_at, id LIMIT ?").bind(workspaceId, limit);
  return (await stmt.all<WebhookRow>()).results;
}
