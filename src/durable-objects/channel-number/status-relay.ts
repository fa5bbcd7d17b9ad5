import { log } from "../../lib/log";
import { workspaceStub } from "../stubs";
import type { StatusUpdate } from "../workspace/contract";

const FLUSH_BATCH = 200;
/** A change the workspace keeps saying it does not know (its record was purged) is dropped after this. */
const GIVE_UP_AFTER_MS = 60 * 60_000;

/**
 * Changes owed to the workspace's authoritative record, written in the same
 * transaction as the outbox change they describe and delivered at least once
 * (the workspace applies each idempotently). Bound: rows live seconds; a
 * workspace that stays unreachable for an hour holds at most 2/s × 3600 rows.
 */
export function createStatusRelayTable(sql: SqlStorage): void {
  sql.exec("CREATE TABLE IF NOT EXISTS status_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, workspace_id TEXT NOT NULL, body TEXT NOT NULL)");
}

export function owe(sql: SqlStorage, workspaceId: string, update: StatusUpdate): void {
  sql.exec("INSERT INTO status_outbox (workspace_id, body) VALUES (?, ?)", workspaceId, JSON.stringify(update));
}

export const hasOwed = (sql: SqlStorage): boolean => sql.exec("SELECT 1 FROM status_outbox LIMIT 1").toArray().length > 0;

/** Delivers owed changes to their workspaces, one call per workspace and batch. Throws if a workspace is unreachable. */
export async function deliverOwed(env: Env, sql: SqlStorage, at: number): Promise<void> {
  for (;;) {
    const pending = sql
      .exec<{ seq: number; workspace_id: string; body: string }>("SELECT seq, workspace_id, body FROM status_outbox ORDER BY seq LIMIT ?", FLUSH_BATCH)
      .toArray();
    if (pending.length === 0) return;
    const byWorkspace = new Map<string, { seq: number; update: StatusUpdate }[]>();
    for (const p of pending) {
      const list = byWorkspace.get(p.workspace_id) ?? [];
      list.push({ seq: p.seq, update: JSON.parse(p.body) as StatusUpdate });
      byWorkspace.set(p.workspace_id, list);
    }
    let progress = false;
    for (const [workspaceId, items] of byWorkspace) {
      const results = await workspaceStub(env, workspaceId).applyStatuses(items.map((i) => i.update));
      items.forEach((item, i) => {
        // A change the workspace does not know yet stays owed: its record may not be committed yet.
        if (results[i]?.known || item.update.at < at - GIVE_UP_AFTER_MS) {
          if (!results[i]?.known) log("warn", "status for a message its workspace does not know; dropped", { jobId: item.update.jobId });
          sql.exec("DELETE FROM status_outbox WHERE seq = ?", item.seq);
          progress = true;
        }
      });
    }
    // Only changes the workspace does not know yet are left: back off (the scheduler's step back-off) and ask again.
    if (!progress) throw new Error("owed status changes for messages the workspace has not recorded yet");
  }
}
