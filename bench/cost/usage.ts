// What a cost run counts per step: written by the meter (meter.ts, in workerd), read by the renderer (render.ts, in Node).

export interface Rows {
  read: number;
  written: number;
}

export interface Usage {
  /** Inbound Worker invocations: `fetch:<route kind>`, `queue:<queue>`. */
  workerRequests: Record<string, number>;
  /** Durable Object requests (each RPC call is one billed request): `<Class>.<method>`. */
  doRequests: Record<string, number>;
  /** Alarm invocations per class (billed as Durable Object requests). */
  alarms: Record<string, number>;
  /** SQLite rows per class, from `SqlStorageCursor.rowsRead/rowsWritten`. */
  sql: Record<string, Rows>;
  /** The same rows per class and statement (whitespace collapsed, first 110 characters). */
  sqlByStatement: Record<string, Rows & { calls: number }>;
  /** `setAlarm()` calls per class: each is billed as one row written. */
  setAlarm: Record<string, number>;
  /** Queue operations per queue: writes (per 64 KB chunk), reads (deliveries), deletes (acknowledged messages). */
  queues: Record<string, { writes: number; reads: number; deletes: number }>;
  d1: Rows;
  r2: { classA: number; classB: number };
  /** Outbound requests the Worker made (not billed as requests): operator calls, webhook deliveries, DNS lookups. */
  outbound: Record<string, number>;
}
