import type { UsageCountMessage } from "../engine/usage";
import { log } from "../lib/log";

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

export async function consumeUsageCounts(batch: MessageBatch<UsageCountMessage>, env: Env): Promise<void> {
  try {
    await writeUsageCounts(
      env.DB,
      batch.messages.map((m) => m.body),
    );
    batch.ackAll();
  } catch (err) {
    // The whole batch is one transaction: nothing was written, so all of it comes back.
    log("warn", "usage counts not written; retrying the batch", { error: String(err) });
    batch.retryAll({ delaySeconds: 5 });
  }
}
