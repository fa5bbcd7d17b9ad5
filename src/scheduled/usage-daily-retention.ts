import { USAGE_DAILY_RETENTION_DAYS, purgeUsageDaily } from "../features/usage/store";
import type { ScheduledJob } from "./job";

const BATCH = 1_000;
// 30,000 rows a day at design load arrive; an hourly run deleting up to 10,000 keeps up with 240,000 a day.
const MAX_BATCHES = 10;

/** Deletes daily usage rows older than the retention period, at most 10,000 a run. */
export const purgeOldUsageDaily: ScheduledJob = {
  name: "usage-daily-retention",
  async run(env, now) {
    const beforeDay = new Date(now - USAGE_DAILY_RETENTION_DAYS * 24 * 3_600_000).toISOString().slice(0, 10);
    let total = 0;
    for (let i = 0; i < MAX_BATCHES; i++) {
      const deleted = await purgeUsageDaily(env.DB, beforeDay, BATCH);
      total += deleted;
      if (deleted < BATCH) break;
    }
    return total;
  },
};
