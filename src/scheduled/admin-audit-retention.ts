import { ADMIN_AUDIT_RETENTION_DAYS, purgeAdminAudit } from "../features/audit/admin-store";
import type { ScheduledJob } from "./job";

const BATCH = 1_000;
const MAX_BATCHES = 5;

/** Deletes admin audit rows older than the retention period, at most 5,000 a run. */
export const purgeOldAdminAudit: ScheduledJob = {
  name: "admin-audit-retention",
  async run(env, now) {
    const before = new Date(now - ADMIN_AUDIT_RETENTION_DAYS * 24 * 3_600_000).toISOString();
    let total = 0;
    for (let i = 0; i < MAX_BATCHES; i++) {
      const deleted = await purgeAdminAudit(env.DB, before, BATCH);
      total += deleted;
      if (deleted < BATCH) break;
    }
    return total;
  },
};
