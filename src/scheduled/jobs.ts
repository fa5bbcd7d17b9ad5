import { errorText, log } from "../lib/log";
import { purgeOldAdminAudit } from "./admin-audit-retention";
import type { ScheduledJob } from "./job";
import { purgeOldUsageDaily } from "./usage-daily-retention";
import { purgeOldAudit } from "./audit-retention";
import { syncDueTemplates } from "./template-sync";
import { clearDisconnectedTokens } from "./sealed-token-retention";
import { mediaRetention } from "./media-retention";

export type { ScheduledJob };

/** Every job of the cron trigger (wrangler.toml `[triggers] crons`). Add new retention jobs here. */
export const SCHEDULED_JOBS: readonly ScheduledJob[] = [
  purgeOldAdminAudit,
  purgeOldUsageDaily,
  purgeOldAudit,
  syncDueTemplates,
  clearDisconnectedTokens,
  mediaRetention,
];

export interface JobOutcome {
  name: string;
  ok: boolean;
  handled: number;
}

/** Runs every job; one job's failure is logged and never stops the others. */
export async function runScheduledJobs(
  env: Env,
  now: number,
  jobs: readonly ScheduledJob[] = SCHEDULED_JOBS,
): Promise<JobOutcome[]> {
  const outcomes: JobOutcome[] = [];
  for (const job of jobs) {
    try {
      const handled = await job.run(env, now);
      outcomes.push({ name: job.name, ok: true, handled });
      log("info", "scheduled job done", { job: job.name, handled });
    } catch (err) {
      outcomes.push({ name: job.name, ok: false, handled: 0 });
      log("error", "scheduled job failed", { job: job.name, detail: errorText(err) });
    }
  }
  return outcomes;
}
