import { log } from "../../lib/log";
import { workspaceStub } from "../stubs";
import type { StatusUpdate } from "../workspace/contract";
import { finishedFrom, unknownFrom, type OutboxRow } from "./outbox";

const FLUSH_BATCH = 200;
/** A change the workspace keeps saying it does not know (its record was purged) is dropped after this. */
const GIVE_UP_AFTER_MS = 60 * 60_000;
const RECOVER_BATCH = 200;

/**
 * Changes owed to the workspace's authoritative record that a direct hand-off
 * could not deliver (the workspace was unreachable, or did not know the message
 * yet), delivered at least once by the alarm (the workspace applies each
 * idempotently). Bound: rows are written only on failure and live seconds; a
 * workspace that stays unreachable for an hour holds at most 2/s × 3600 rows.
 */
export function createStatusRelayTable(sql: SqlStorage): void {
  sql.exec(
    "CREATE TABLE IF NOT EXISTS status_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, workspace_id TEXT NOT NULL, body TEXT NOT NULL)",
  );
}

export function owe(sql: SqlStorage, workspaceId: string, update: StatusUpdate): void {
  sql.exec("INSERT INTO status_outbox (workspace_id, body) VALUES (?, ?)", workspaceId, JSON.stringify(update));
}

export const hasOwed = (sql: SqlStorage): boolean =>
  sql.exec("SELECT 1 FROM status_outbox LIMIT 1").toArray().length > 0;

/** Delivers owed changes to their workspaces, one call per workspace and batch. Throws if a workspace is unreachable. */
export async function deliverOwed(env: Env, sql: SqlStorage, at: number): Promise<void> {
  for (;;) {
    const pending = sql
      .exec<{ seq: number; workspace_id: string; body: string }>(
        "SELECT seq, workspace_id, body FROM status_outbox ORDER BY seq LIMIT ?",
        FLUSH_BATCH,
      )
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
          if (!results[i]?.known)
            log("warn", "status for a message its workspace does not know; dropped", { jobId: item.update.jobId });
          sql.exec("DELETE FROM status_outbox WHERE seq = ?", item.seq);
          progress = true;
        }
      });
    }
    // Only changes the workspace does not know yet are left: back off (the scheduler's step back-off) and ask again.
    if (!progress) throw new Error("owed status changes for messages the workspace has not recorded yet");
  }
}

/** The change an outbox entry's state owes its workspace (what `hand` was given when the state was written). */
export function owedBy(row: OutboxRow): StatusUpdate | null {
  if (row.state === "unknown")
    return { jobId: row.job_id, at: row.unknown_since ?? row.updated_at, outcomeUnknown: true };
  if (row.state !== "sent" && row.state !== "failed") return null;
  const update: StatusUpdate = { jobId: row.job_id, at: row.updated_at, status: row.state };
  if (row.upstream_message_id) update.upstreamMessageId = row.upstream_message_id;
  if (row.state === "failed" && row.error) update.error = JSON.parse(row.error) as StatusUpdate["error"];
  return update;
}

/**
 * Hands the changes of outbox states to the workspace right after their commit, without a row of
 * their own. The state itself, in the outbox, is the durable record of the change: an entry that
 * became sent/failed (the `outbox_finished` index, by `updated_at`) or unknown (`outbox_unknown`,
 * by `unknown_since`) at or after the checkpoint may not have reached the workspace yet, and a
 * restart hands all of them again (recovery). The checkpoint is the time before which every change
 * was acknowledged: the oldest change still in flight, or the present when none is. It is written
 * with the pace's `meta` row, which every call writes anyway (no row of its own).
 *
 * A hand-off that fails, or that the workspace does not know yet, becomes a `status_outbox` row
 * (retried by the alarm): rows are written only when the direct call does not succeed.
 */
export class StatusRelay {
  private readonly inFlight = new Map<number, number>();
  private queue: { id: number; workspaceId: string; update: StatusUpdate }[] = [];
  private readonly running = new Set<Promise<void>>();
  private nextId = 0;
  /** Set from a restart until its recovery is done: the checkpoint cannot pass what it has not handed again yet. */
  private recoverFrom: number | null = null;

  constructor(
    private readonly env: Env,
    private readonly storage: DurableObjectStorage,
    private readonly owedLater: () => void,
  ) {}

  /**
   * Call in the same synchronous step as the commit that wrote the change (`at`: the time the
   * outbox keeps for it, its `updated_at` or `unknown_since`), so that the checkpoint never passes it.
   */
  hand(workspaceId: string, update: StatusUpdate, at: number): void {
    const id = this.nextId++;
    this.inFlight.set(id, at);
    this.queue.push({ id, workspaceId, update });
    if (this.queue.length > 1) return;
    // Changes handed in the same step go in one call per workspace.
    const run = Promise.resolve().then(() => this.send());
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
  }

  /** Every change before this time has reached the workspace (or a relay row). */
  checkpoint(at: number): number {
    let oldest = Math.min(at, this.recoverFrom ?? at);
    for (const t of this.inFlight.values()) oldest = Math.min(oldest, t);
    return oldest;
  }

  /** A restart: changes written at `from` or later (the persisted checkpoint) may never have been handed. */
  startRecovery(from: number): void {
    this.recoverFrom = from;
  }

  get recovering(): boolean {
    return this.recoverFrom !== null;
  }

  /**
   * Hands again every change the outbox holds from the checkpoint on, a page at a time through the
   * finished and unknown indexes (the workspace applies each idempotently). Returns whether there was any.
   */
  async recover(sql: SqlStorage): Promise<boolean> {
    const from = this.recoverFrom;
    if (from === null) return false;
    let found = false;
    for (const [page, timeOf] of [
      [finishedFrom, (r: OutboxRow) => r.updated_at],
      [unknownFrom, (r: OutboxRow) => r.unknown_since ?? r.updated_at],
    ] as const) {
      let cursor = { at: from, seq: -1 };
      for (;;) {
        const rows = page(sql, cursor.at, cursor.seq, RECOVER_BATCH);
        for (const row of rows) {
          const update = owedBy(row);
          if (!update) continue;
          this.hand(row.workspace_id, update, from);
          found = true;
        }
        await this.idle();
        if (rows.length < RECOVER_BATCH) break;
        const last = rows[rows.length - 1]!;
        cursor = { at: timeOf(last), seq: last.seq };
      }
    }
    this.recoverFrom = null;
    return found;
  }

  /** Waits until every change handed so far is acknowledged or owed. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private async send(): Promise<void> {
    const items = this.queue;
    this.queue = [];
    const byWorkspace = new Map<string, typeof items>();
    for (const item of items) byWorkspace.set(item.workspaceId, [...(byWorkspace.get(item.workspaceId) ?? []), item]);
    await Promise.all(
      [...byWorkspace].map(async ([workspaceId, list]) => {
        let owed = list;
        try {
          const results = await workspaceStub(this.env, workspaceId).applyStatuses(list.map((i) => i.update));
          owed = list.filter((_, i) => !results[i]?.known);
        } catch (err) {
          log("warn", "status hand-off failed; relayed by the alarm", { error: String(err), changes: list.length });
        }
        if (owed.length > 0) {
          const sql = this.storage.sql;
          // If this write fails too, the changes stay in flight: the checkpoint never passes them.
          this.storage.transactionSync(() => {
            for (const item of owed) owe(sql, workspaceId, item.update);
          });
          this.owedLater();
        }
        // Only now may the checkpoint pass them: acknowledged, or in a relay row.
        for (const item of list) this.inFlight.delete(item.id);
      }),
    );
  }
}
