// The Worker as the test suite runs it: production's handlers and objects, with the Durable Object
// classes subclassed to add what only tests read (their state, for assertions). Production's
// classes carry no RPC that only tests call (vitest.config.ts makes this file the Worker's main;
// the class names are production's, so wrangler.toml's bindings and migrations apply unchanged).
import { WorkspaceDurableObject as Workspace } from "../src/durable-objects/workspace/workspace";
import { ChannelNumberDurableObject as ChannelNumber } from "../src/durable-objects/channel-number/channel-number";
import type { MessageRow } from "../src/messages/record";
import type { Entry } from "../src/durable-objects/channel-number/work-queue";
import { MessageHistoryDurableObject as History } from "../src/durable-objects/history/history";
import { ThrottleDurableObject as Throttle } from "../src/durable-objects/throttle";
import { schemaVersion } from "../src/durable-objects/shared/schema-version";
import { getMeta, setMeta } from "../src/durable-objects/shared/meta";
import { createSlotTable, slotOf, slotTable } from "../src/durable-objects/workspace/day-tables";
import { now } from "../src/lib/clock";
import { tableNamesOf } from "./helpers/tables";

export { default } from "../src/index";

export class WorkspaceDurableObject extends Workspace {
  /** Capacity used right now: committed sends in the 60-second window and this month. */
  async admissionState(at: number = now()): Promise<{ windowUsed: number; monthUsed: number }> {
    return this.admission.state(at);
  }

  /** Sends this object has taken in and not yet answered (a fault test strikes while one is under way). */
  async sendsUnderWay(): Promise<number> {
    return (this.admission as unknown as { inFlight: Map<string, unknown> }).inFlight.size;
  }

  /** The stored record of a message in this object (its slot table), as is. */
  async storedRecord(id: string): Promise<MessageRow | null> {
    const at = this.tiers().locate(id);
    return at.tier === "slot" ? at.row : null;
  }

  /** The messages whose events are owed (committed, not yet on the queue), in the order they were listed. */
  async owedEvents(): Promise<{ id: string; from_change: number }[]> {
    return this.sql
      .exec<{ id: string; from_change: number }>("SELECT id, from_change FROM owed_events ORDER BY seq")
      .toArray();
  }

  /** The most events the publisher held in memory at once since the object started. */
  async publisherPeakHeld(): Promise<number> {
    return this.publisher.peakHeld();
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

  /** Sets the object's alarm (now, by default): a test runs whatever steps it would run. */
  async armAlarm(at: number = now()): Promise<void> {
    await this.ctx.storage.setAlarm(at);
  }

  /** The object's storage size now, and the operator's budget it is held to (NaN: none set). */
  async sizeAndBudget(): Promise<{ size: number; budget: number }> {
    return { size: this.sql.databaseSize, budget: Number(getMeta(this.sql, "hot_bytes_budget") ?? Number.NaN) };
  }

  /** The outcome of every attempt in the delivery log, table by table, row by row. */
  async deliveryLogOutcomes(): Promise<string[]> {
    return this.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'd\\_%' ESCAPE '\\'")
      .toArray()
      .flatMap(({ name }) =>
        this.sql
          .exec<{ attempts: string }>(`SELECT attempts FROM ${name}`)
          .toArray()
          .flatMap((r) => JSON.parse(r.attempts) as { o: string }[]),
      )
      .map((a) => a.o);
  }

  /**
   * Writes a record into the slot table of its time straight to storage, behind the running
   * instance's back (as a write of another instance that reached a table late leaves it): the
   * object learns of the table when it starts again.
   */
  async writeRecordToStorage(
    r: Pick<
      MessageRow,
      "id" | "direction" | "channel_number_id" | "recipient" | "type" | "body" | "status" | "created_at" | "updated_at"
    >,
  ): Promise<void> {
    const slot = slotOf(r.created_at);
    createSlotTable(this.sql, slot);
    this.sql.exec(
      `INSERT INTO ${slotTable(slot)} (id, direction, channel_number_id, recipient, type, body, status, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      r.id,
      r.direction,
      r.channel_number_id,
      r.recipient,
      r.type,
      r.body,
      r.status,
      r.created_at,
      r.updated_at,
    );
  }

  /**
   * Makes writes to `table` fail as a full disk or an I/O error would: every insert, or the
   * updates that set `status` to `toStatus`. Reads still work. Until `repairWrites()`.
   */
  async failWrites(table: string, fault: { inserts: true } | { updatesTo: string }): Promise<void> {
    const when = "inserts" in fault ? "BEFORE INSERT" : "BEFORE UPDATE";
    const only = "updatesTo" in fault ? ` WHEN NEW.status = '${fault.updatesTo}'` : "";
    this.sql.exec(
      `CREATE TRIGGER write_fault ${when} ON ${table}${only} BEGIN SELECT RAISE(ABORT, 'disk I/O error (injected)'); END`,
    );
  }

  /** Ends the fault of `failWrites()`. */
  async repairWrites(): Promise<void> {
    this.sql.exec("DROP TRIGGER write_fault");
  }
}

export class ChannelNumberDurableObject extends ChannelNumber {
  private alarmRuns = 0;

  override async alarm(): Promise<void> {
    this.alarmRuns++;
    await super.alarm();
  }

  /** How many times this instance's alarm ran. */
  async alarmRunCount(): Promise<number> {
    return this.alarmRuns;
  }

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

  /** When the object's alarm is set for, or null. */
  async alarmAt(): Promise<number | null> {
    return this.ctx.storage.getAlarm();
  }

  /** Sets the object's alarm (now, by default). */
  async armAlarm(at: number = now()): Promise<void> {
    await this.ctx.storage.setAlarm(at);
  }

  /** Removes the object's alarm (as an alarm lost to the runtime would be). */
  async clearAlarm(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
  }

  /**
   * Leaves a table of another layout under a name the number uses (`name`, one column): storage
   * the number's steps cannot read.
   */
  async plantUnreadableTable(name: string): Promise<void> {
    this.ctx.storage.sql.exec(`CREATE TABLE ${name} (id TEXT)`);
  }
}

export class MessageHistoryDurableObject extends History {
  /** The tables of the shard, by name (none until something is moved to it, none once dropped). */
  async tableNames(): Promise<string[]> {
    return tableNamesOf(this.ctx.storage.sql);
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
    return { messages, bytes: this.sql.databaseSize };
  }

  /** The schema version its storage is at (0: no storage). */
  async schemaVersion(): Promise<number> {
    return schemaVersion(this.ctx.storage.sql);
  }
}

export class ThrottleDurableObject extends Throttle {
  /** The tables of the scope's object, by name (none once its cleanup deleted its storage). */
  async tableNames(): Promise<string[]> {
    return tableNamesOf(this.ctx.storage.sql);
  }
}
