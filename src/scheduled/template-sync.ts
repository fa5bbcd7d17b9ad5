import { accountsDue } from "../features/templates/store";
import { syncAccount, TEMPLATE_SYNC_INTERVAL_MS } from "../features/templates/sync";
import { errorText, log } from "../lib/log";
import type { ScheduledJob } from "./job";

/**
 * Operator pages fetched per run, all accounts together (each page up to 100 templates, one
 * subrequest): a run does bounded work, and a pass of a large account resumes from its stored
 * cursor at the next run. 6,000 templates take 60 pages: two runs.
 */
export const TEMPLATE_PAGE_BUDGET_PER_RUN = 40;
const ACCOUNTS_PER_RUN = 40;

/**
 * Syncs the templates of business accounts that are due: a pass in progress or a prompt run
 * asked for first, then those not synced for an hour, stalest first. One account's failure is
 * recorded on it and never stops the others.
 */
export const syncDueTemplates: ScheduledJob = {
  name: "template-sync",
  async run(env, now) {
    const due = await accountsDue(env.DB, new Date(now - TEMPLATE_SYNC_INTERVAL_MS).toISOString(), ACCOUNTS_PER_RUN);
    let pages = 0;
    for (const wabaId of due) {
      if (pages >= TEMPLATE_PAGE_BUDGET_PER_RUN) break;
      try {
        pages += (await syncAccount(env, wabaId, TEMPLATE_PAGE_BUDGET_PER_RUN - pages)).pages;
      } catch (err) {
        log("warn", "template sync of an account failed", { wabaId, detail: errorText(err) });
      }
    }
    return pages;
  },
};
