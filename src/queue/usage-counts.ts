import type { UsageCountMessage } from "../engine/usage";
import { writeUsageCounts } from "../features/usage/store";
import { log } from "../lib/log";

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
