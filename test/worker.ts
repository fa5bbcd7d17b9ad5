// The Worker as the test suite runs it: production's handlers and objects, with the Durable Object
// classes subclassed to add what only tests read (their state, for assertions). Production's
// classes carry no RPC that only tests call (vitest.config.ts makes this file the Worker's main;
// the class names are production's, so wrangler.toml's bindings and migrations apply unchanged).
import { WorkspaceDurableObject as Workspace } from "../src/durable-objects/workspace/workspace";
import { ChannelNumberDurableObject as ChannelNumber } from "../src/durable-objects/channel-number/channel-number";
import type { MessageRow } from "../src/durable-objects/workspace/record";
import type { Entry } from "../src/durable-objects/channel-number/work-queue";
import { MessageHistoryDurableObject as History } from "../src/durable-objects/history/history";
import { schemaVersion } from "../src/durable-objects/shared/schema-version";
import { setMeta } from "../src/durable-objects/shared/meta";
import { now } from "../src/lib/clock";

export { default, ThrottleDurableObject } from "../src/index";

/** The tables of an object's storage, by name (what a layout leaves behind). */
const tablesOf = (sql: SqlStorage): string[] =>
  sql
    .exec<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .toArray()
    .map((r) => r.name);

export class WorkspaceDurableObject extends Workspace {
  /** Capacity used right now: committed sends in the 60-second window and this month. */
  async admissionState(at: number = now()): Promise<{ windowUsed: number; monthUsed: number }> {
    return this.admission.state(at);
  }

  /** The stored record of a message in this object (a slot table or the earlier layout's), as is. */
  async storedRecord(id: string): Promise<MessageRow | null> {
    const at = this.tiers().locate(id);
    return at.tier === "slot" || at.tier === "legacy" ? at.row : null;
  }

  /** When the object's alarm is set for, or null (what its steps asked for). */
  async alarmAt(): Promise<number | null> {
    return this.ctx.storage.getAlarm();
  }

  /** The tables of the object, by name (what a layout leaves behind). */
  async tableNames(): Promise<string[]> {
    return this.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .toArray()
      .map((r) => r.name);
  }

  /** The schema version its storage is at. */
  async schemaVersion(): Promise<number> {
    return schemaVersion(this.sql);
  }

  /**
   * The operator's budget for this workspace's storage (meta `hot_bytes_budget`): above it, old
   * days move to history. Read by the alarm's steps: an alarm is armed if none is (it re-arms itself).
   */
  async setHotBytesBudget(bytes: number): Promise<void> {
    setMeta(this.sql, "hot_bytes_budget", String(bytes));
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(now());
  }

  /** What the object knows of one UTC day besides its records (its day-ledger row), as stored. */
  async dayState(day: number): Promise<Record<string, unknown>> {
    return this.tiers().ledger.get(day) as Record<string, unknown>;
  }
}

export class ChannelNumberDurableObject extends ChannelNumber {
  /** The number's queue, oldest first: what it still has to call. */
  async queued(): Promise<Pick<Entry, "jobId" | "recipient" | "attempts" | "state" | "nextAttemptAt">[]> {
    return this.queue
      .entries()
      .sort((a, b) => (a.jobId < b.jobId ? -1 : 1))
      .map(({ jobId, recipient, attempts, state, nextAttemptAt }) => ({
        jobId,
        recipient,
        attempts,
        state,
        nextAttemptAt,
      }));
  }

  /** Start times of the latest operator calls. */
  async recentCalls(): Promise<number[]> {
    return this.drain.recentCalls();
  }

  /** The tables of the object, by name (a number that only sends keeps none). */
  async tableNames(): Promise<string[]> {
    return this.storage.exists
      ? this.storage.sql
          .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
          .toArray()
          .map((r) => r.name)
      : [];
  }

  /** The schema version its storage is at (0: no storage). */
  async schemaVersion(): Promise<number> {
    return this.storage.exists ? schemaVersion(this.storage.sql) : 0;
  }
}

export class MessageHistoryDurableObject extends History {
  /** The tables of the shard, by name (none until something is moved to it, none once dropped). */
  async tableNames(): Promise<string[]> {
    return tablesOf(this.ctx.storage.sql);
  }

  /**
   * Records and bytes held. An empty shard reads no row for it (the cost bench wakes an empty shard
   * with this call and counts what that costs).
   */
  async size(): Promise<{ messages: number; bytes: number }> {
    if (!this.hasTables) return { messages: 0, bytes: this.sql.databaseSize };
    let messages = 0;
    for (const c of this.sql.exec<{ rows: string }>("SELECT rows FROM chunks").toArray())
      messages += (JSON.parse(c.rows) as unknown[]).length;
    if (this.hasLegacy) messages += this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM messages").one().n;
    return { messages, bytes: this.sql.databaseSize };
  }

  /** The schema version its storage is at (0: no storage). */
  async schemaVersion(): Promise<number> {
    return schemaVersion(this.ctx.storage.sql);
  }
}
