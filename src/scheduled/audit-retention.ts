import { AUDIT_RETENTION_DAYS, purgeAudit } from "../features/audit/store";
import type { ScheduledJob } from "./job";

const BATCH = 1_000;
// ~50,000 entries a day at design load arrive (5 a workspace); an hourly run deleting up to 10,000 keeps up with 240,000 a day.
const MAX_BATCHES = 10;

/** Deletes workspace audit entries older than the retention period, at most 10,000 a run. */
export const purgeOldAudit: ScheduledJob = {
  name: "audit-retention",
  async run(env, now) {
    const before = new Date(now - AUDIT_RETENTION_DAYS * 24 * 3_600_000).toISOString();
    let total = 0;
    for (let i = 0; i < MAX_BATCHES; i++) {
      const deleted = await purgeAudit(env.DB, before, BATCH);
      total += deleted;
      if (deleted < BATCH) break;
    }
    return total;
  },
};
