import { now } from "../../../lib/clock";
import { log } from "../../../lib/log";
import { workspaceStub } from "../../stubs";
import type { StatusUpdate } from "../../workspace/contract";
import type { HandOff } from "../hand-off";
import type { NumberStorage } from "../number-storage";
import type { WorkQueue } from "../work-queue";
import {
  finishedLegacyEntriesSince,
  owedBy,
  owedLegacyChanges,
  queuedLegacyEntries,
  readPace,
  sendingLegacyEntries,
  unknownLegacyEntries,
  type OutboxRow,
} from "./outbox-v1";

const BATCH = 200;

/**
 * A number object of the release before day tables kept an outbox: one row per message, its state
 * moved by its drain. At the upgrade it may still owe its workspace changes (a relay row not
 * delivered, states written since its relay's checkpoint), hold calls that were in flight (their
 * outcome is unknown: never called again), and list messages still to call. This hands all of that
 * over once, in order, before the drain takes anything: the changes and the unknown outcomes to the
 * workspace's records (each applied idempotently), the messages still to call to the queue (their
 * claims then go through the records like any other). Then it drops the earlier tables.
 */
export class LegacyHandover {
  private done: boolean;

  constructor(
    private readonly env: Env,
    private readonly storage: NumberStorage,
    private readonly queue: WorkQueue,
    private readonly handOff: HandOff,
  ) {
    this.done = !storage.hasTable("outbox") && !storage.hasTable("status_outbox");
    // The messages still to call join the queue at once, so that nothing is claimed twice meanwhile.
    if (!this.done) this.enqueueLegacy();
  }

  /** Whether something of the earlier release is still to hand over (the drain waits for it). */
  pending(): boolean {
    return !this.done;
  }

  async run(): Promise<void> {
    if (this.done) return;
    const sql = this.storage.sql;
    const pace = readPace(sql);
    // 1. Changes the earlier relay had not delivered, as it would have delivered them.
    if (this.storage.hasTable("status_outbox")) {
      for (;;) {
        const owed = owedLegacyChanges(sql, BATCH);
        if (owed.length === 0) break;
        for (const [workspaceId, items] of Map.groupBy(owed, (o) => o.workspace_id)) {
          await workspaceStub(this.env, workspaceId).applyStatuses(
            items.map((i) => JSON.parse(i.body) as StatusUpdate),
          );
        }
        for (const o of owed) sql.exec("DELETE FROM status_outbox WHERE seq = ?", o.seq);
      }
      sql.exec("DROP TABLE status_outbox");
    }
    if (this.storage.hasTable("outbox")) {
      // 2. States written since the relay's checkpoint may not have reached the workspace.
      const since = pace.relayAfter ?? now();
      let after = -1;
      for (;;) {
        const rows = finishedLegacyEntriesSince(sql, since, after, BATCH);
        if (rows.length === 0) break;
        await this.apply(rows.map((r) => ({ workspaceId: r.workspace_id, update: owedBy(r) })));
        after = rows[rows.length - 1]!.seq;
      }
      // 3. Calls in flight at the upgrade, and outcomes already unknown: unknown on the record (never called again).
      const t = now();
      const inFlight = sendingLegacyEntries(sql, pace.sending);
      const unknown = unknownLegacyEntries(sql, 100_000);
      await this.apply([
        ...inFlight.map((r) => ({
          workspaceId: r.workspace_id,
          update: { jobId: r.job_id, at: t, outcomeUnknown: true } as StatusUpdate,
        })),
        ...unknown.map((r) => ({ workspaceId: r.workspace_id, update: owedBy(r) })),
      ]);
      // The messages still to call are in the queue already (their records, of the earlier layout,
      // have no claim answered yet: the next claim is theirs, numbered after the earlier attempts).
      sql.exec("DROP TABLE outbox");
    }
    sql.exec("DELETE FROM meta WHERE k = 'recent_calls'");
    this.done = true;
    log("info", "the earlier release's outbox was handed over", {});
  }

  private async apply(items: { workspaceId: string; update: StatusUpdate | null }[]): Promise<void> {
    const real = items.filter((i): i is { workspaceId: string; update: StatusUpdate } => i.update !== null);
    for (const [workspaceId, list] of Map.groupBy(real, (i) => i.workspaceId)) {
      for (let i = 0; i < list.length; i += BATCH) {
        await workspaceStub(this.env, workspaceId).applyStatuses(list.slice(i, i + BATCH).map((l) => l.update));
      }
    }
  }

  /** The earlier outbox's messages still to call, in the queue (their attempts as that release counted them: a retry goes on). */
  private enqueueLegacy(): void {
    if (!this.storage.hasTable("outbox")) return;
    const rows: OutboxRow[] = queuedLegacyEntries(this.storage.sql, 1_000_000);
    for (const r of rows) {
      if (this.handOff.holds(r.job_id)) continue;
      this.queue.add({
        jobId: r.job_id,
        workspaceId: r.workspace_id,
        recipient: r.recipient,
        acceptedAt: r.accepted_at,
        attempts: r.attempts,
        nextAttemptAt: r.next_attempt_at,
        firstAttemptAt: r.first_attempt_at ?? undefined,
        state: "queued",
        legacy: true,
      });
    }
  }
}
