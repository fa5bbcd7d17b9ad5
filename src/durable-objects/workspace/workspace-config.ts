import { getWorkspaceWithLimits } from "../../db/workspaces";
import { listAllNumbers } from "../../db/channel-numbers";
import { now } from "../../lib/clock";
import type { MediaCaps } from "../../messages/inbound-media";

/** What the workspace object needs from D1 to admit a send, cached for a few seconds. */
export interface WorkspaceConfig {
  quota: number;
  historyDays: number;
  /** The plan's bounds on inbound media copies (media-copies.ts). */
  media: MediaCaps;
  connectedNumbers: Set<string>;
  loadedAt: number;
}

// Bounds how long a disconnected number or a changed quota can lag behind D1 in
// an object that was not told directly (admin calls tell it at once).
export const CONFIG_TTL_MS = 5_000;

export async function loadWorkspaceConfig(db: D1Database, workspaceId: string): Promise<WorkspaceConfig | null> {
  const [workspace, numbers] = await Promise.all([
    getWorkspaceWithLimits(db, workspaceId),
    listAllNumbers(db, workspaceId),
  ]);
  if (!workspace) return null;
  return {
    quota: workspace.effective_quota,
    historyDays: workspace.message_history_days,
    media: { maxItemBytes: workspace.media_max_item_bytes, dailyBytes: workspace.media_daily_bytes },
    connectedNumbers: new Set(numbers.filter((n) => n.status === "connected").map((n) => n.id)),
    loadedAt: now(),
  };
}

export const isFresh = (config: WorkspaceConfig | null): config is WorkspaceConfig =>
  config !== null && now() - config.loadedAt < CONFIG_TTL_MS;
