import type { DailyUsage, Usage } from "../durable-objects/workspace/contract";
import { workspaceObject } from "./objects";

export type { DailyUsage, Usage };
export type { UsageCountMessage } from "../durable-objects/workspace/workspace";

/** The messages a workspace sent in the current period, as its quota counts them. */
export const messageUsage = (env: Env, workspaceId: string): Promise<Usage> =>
  workspaceObject(env, workspaceId).usage();

/** A workspace's counts per UTC day of [fromMs, toMs). */
export const dailyUsage = (env: Env, workspaceId: string, fromMs: number, toMs: number): Promise<DailyUsage[]> =>
  workspaceObject(env, workspaceId).usageHistory(fromMs, toMs);
