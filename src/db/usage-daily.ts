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
