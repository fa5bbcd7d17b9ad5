import { countConnected } from "../../db/channel-numbers";
import { getWorkspaceWithLimits, type WorkspaceWithLimits } from "../../db/workspaces";
import { dailyUsage, messageUsage, type DailyUsage } from "../../engine/usage";
import { monthPeriod, now } from "../../lib/clock";
import { DAY_MS } from "../../lib/job-id";

export interface CurrentUsage {
  workspace: WorkspaceWithLimits;
  period: { start: string; end: string };
  messages: { used: number; limit: number; remaining: number };
  numbers: { used: number; limit: number };
  /** One entry per UTC day of the previous and the current period, up to today. */
  daily: DailyUsage[];
}

/** Plan usage of the current period (GET /usage and the dashboard's overview); null for an unknown workspace. */
export async function currentUsage(env: Env, workspaceId: string): Promise<CurrentUsage | null> {
  const usage = await messageUsage(env, workspaceId);
  const previousStart = Date.parse(monthPeriod(Date.parse(usage.period.start) - 1).start);
  const tomorrow = (Math.floor(now() / DAY_MS) + 1) * DAY_MS;
  const [workspace, numbers, daily] = await Promise.all([
    getWorkspaceWithLimits(env.DB, workspaceId),
    countConnected(env.DB, workspaceId),
    dailyUsage(env, workspaceId, previousStart, Math.min(tomorrow, Date.parse(usage.period.end))),
  ]);
  if (!workspace) return null;
  return {
    workspace,
    period: usage.period,
    messages: {
      used: usage.messagesUsed,
      limit: workspace.effective_quota,
      remaining: Math.max(0, workspace.effective_quota - usage.messagesUsed),
    },
    numbers: { used: numbers, limit: workspace.max_numbers },
    daily,
  };
}
