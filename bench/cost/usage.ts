// What a cost run counts, each a billed unit the price table reads: written by meter.ts (workerd), read by render.ts (Node).
export interface Usage {
  /** Inbound Worker invocations: fetch requests and queue consumer batches. */
  workerRequests: number;
  /** Durable Object requests: RPC calls on a stub, and alarm runs. */
  doRequests: number;
  alarms: number;
  /** SQLite rows by `<object class>: <statement>` (whitespace collapsed, first 110 characters), from the cursors. */
  sql: Record<string, { read: number; written: number; calls: number }>;
  /** `setAlarm()` calls: each is billed as one row written. */
  setAlarm: number;
  /** Queue operations: a write per 64 KB sent, a read per message delivered, a delete per message acknowledged. */
  queueOps: number;
  d1: { read: number; written: number };
  r2: { classA: number; classB: number };
}
