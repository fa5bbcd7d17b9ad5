import type { UsageCountMessage } from "../../engine/usage";

/** Daily counts are kept this long (the operator's analytics; customers see the current and previous period). */
export const USAGE_DAILY_RETENTION_DAYS = 400;

/** Deletes at most `limit` daily rows older than `beforeDay` (YYYY-MM-DD), through the index on day. */
export async function purgeUsageDaily(db: D1Database, beforeDay: string, limit: number): Promise<number> {
  const result = await db
    .prepare(
      `DELETE FROM usage_daily WHERE rowid IN
         (SELECT rowid FROM usage_daily WHERE day < ? ORDER BY day LIMIT ?)`,
    )
    .bind(beforeDay, limit)
    .run();
  return result.meta.changes;
}

/**
 * Writes workspaces' daily counts into D1 for the operator, one transaction
 * per batch. Counts only grow, so keeping the larger value makes redelivered or
 * reordered messages harmless.
 */
export async function writeUsageCounts(db: D1Database, counts: UsageCountMessage[]): Promise<void> {
  if (counts.length === 0) return;
  const stmt = db.prepare(
    `INSERT INTO usage_daily (workspace_id, day, channel_number_id, accepted, sent, failed, received)
     VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (workspace_id, day, channel_number_id) DO UPDATE SET
       accepted = MAX(accepted, excluded.accepted), sent = MAX(sent, excluded.sent),
       failed = MAX(failed, excluded.failed), received = MAX(received, excluded.received)`,
  );
  await db.batch(
    counts.map((c) => stmt.bind(c.workspaceId, c.day, c.channelNumberId, c.accepted, c.sent, c.failed, c.received)),
  );
}

/** Sends accepted today (UTC) from the number: the daily counts the workspace object ships (up to a minute behind). */
export async function sendsOnDay(db: D1Database, workspaceId: string, numberId: string, day: string): Promise<number> {
  const row = await db
    .prepare("SELECT accepted FROM usage_daily WHERE workspace_id = ? AND day = ? AND channel_number_id = ?")
    .bind(workspaceId, day, numberId)
    .first<{ accepted: number }>();
  return row?.accepted ?? 0;
}
