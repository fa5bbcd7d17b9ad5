import { ensureSchema } from "../shared/schema-version";
import { CHANNEL_NUMBER_SCHEMA } from "./schema";

/**
 * The number object's storage is created only when something has to be kept: a pause or a
 * throttle, the contacts of its inbound messages, the sandbox's scheduled reports. A number that
 * only sends keeps nothing (its queue is a view of its workspace's records): no table, no row.
 * Storage of an earlier layout is brought up to date at start-up (schema.ts).
 */
export class NumberStorage {
  private ready: boolean;

  constructor(private readonly storage: DurableObjectStorage) {
    this.ready = hasNumberTables(storage.sql);
    if (this.ready) ensureSchema(storage, CHANNEL_NUMBER_SCHEMA);
  }

  get sql(): SqlStorage {
    return this.storage.sql;
  }

  /** Whether any table exists (a reader of an empty object answers without asking SQLite). */
  get exists(): boolean {
    return this.ready;
  }

  /** Creates the schema (its latest layout) before the first write. */
  ensure(): SqlStorage {
    if (!this.ready) {
      ensureSchema(this.storage, CHANNEL_NUMBER_SCHEMA);
      this.ready = true;
    }
    return this.storage.sql;
  }

  hasTable(name: string): boolean {
    return (
      this.ready &&
      this.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name).toArray().length > 0
    );
  }

  /** Forgets its tables (the object deleted its storage). */
  reset(): void {
    this.ready = hasNumberTables(this.storage.sql);
  }
}

/** Whether the object holds any of the tables a number creates. */
const hasNumberTables = (sql: SqlStorage): boolean =>
  sql
    .exec(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name IN ('meta', 'contacts', 'sandbox_reports') LIMIT 1",
    )
    .toArray().length > 0;
