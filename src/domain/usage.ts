import { countConnected } from "../db/channel-numbers";
import { getWorkspaceWithLimits, type WorkspaceWithLimits } from "../db/workspaces";
import { workspaceStub } from "../durable-objects/stubs";

export interface CurrentUsage {
  workspace: WorkspaceWithLimits;
  period: { start: string; end: string };
  messages: { used: number; limit: number; remaining: number };
  numbers: { used: number; limit: number };
}

/** Plan usage of the current period (GET /usage and the dashboard's overview); null for an unknown workspace. */
export async function currentUsage(env: Env, workspaceId: string): Promise<CurrentUsage | null> {
  const [workspace, numbers, usage] = await Promise.all([
    getWorkspaceWithLimits(env.DB, workspaceId),
    countConnected(env.DB, workspaceId),
    workspaceStub(env, workspaceId).usage(),
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
  };
}
