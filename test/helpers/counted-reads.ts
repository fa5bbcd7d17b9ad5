import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { ScheduledStep } from "../../src/durable-objects/shared/scheduler";
import type { TestClock } from "./clock";

/** Wraps an object's SQL so that the rows each statement reads are added up (SqlStorageCursor.rowsRead). */
function counting(sql: SqlStorage) {
  const totals = { read: 0 };
  const wrapped = new Proxy(sql, {
    get(target, prop) {
      if (prop !== "exec") return Reflect.get(target, prop, target);
      return (query: string, ...bindings: SqlStorageValue[]) => {
        const cursor = target.exec(query, ...bindings);
        const rows = cursor.toArray();
        totals.read += cursor.rowsRead;
        // Hands the caller what it asked for, already read.
        const iterator = rows[Symbol.iterator]();
        return {
          toArray: () => rows,
          one: () => {
            if (rows.length !== 1) throw new Error(`expected one row, got ${rows.length}`);
            return rows[0];
          },
          rowsRead: cursor.rowsRead,
          rowsWritten: cursor.rowsWritten,
          columnNames: cursor.columnNames,
          raw: () => rows.map((r) => Object.values(r as object))[Symbol.iterator](),
          next: () => iterator.next(),
          [Symbol.iterator]() {
            return this;
          },
        };
      };
    },
  });
  return { sql: wrapped, totals };
}

/**
 * A second instance of an object's class on the same storage, whose SQL counts the rows it reads:
 * its scheduled steps (what the alarm runs) are measured one by one.
 */
export interface Measured<T> {
  instance: T;
  /** Rows read by `fn` (awaited). */
  read(fn: () => unknown): Promise<number>;
  /** The steps its alarm runs. */
  steps: ScheduledStep[];
  /** The names in the object's schema (tables and indexes), read without counting. */
  schemaNames(): string[];
  /** How many rows `table` holds, read without counting. */
  rowCount(table: string): number;
}

function measured<T extends object>(
  Class: new (ctx: DurableObjectState, env: Env) => T,
  state: DurableObjectState,
): Measured<T> {
  const realSql = state.storage.sql;
  const counter = counting(realSql);
  const bind = <O extends object>(target: O, replace: Record<PropertyKey, unknown>): O =>
    new Proxy(target, {
      get(t, p) {
        if (p in replace) return replace[p];
        const v = Reflect.get(t, p, t) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
  const storage = bind(state.storage, { sql: counter.sql });
  // The base class takes the runtime's own state object only: its `storage` is shadowed instead,
  // for this instance's constructor (its modules keep what it hands them).
  const own = Object.getOwnPropertyDescriptor(state, "storage");
  Object.defineProperty(state, "storage", { value: storage, configurable: true });
  let instance: T;
  try {
    instance = new Class(state, env);
  } finally {
    if (own) Object.defineProperty(state, "storage", own);
    else delete (state as { storage?: unknown }).storage;
  }
  const steps = (instance as unknown as { scheduler: { steps: ScheduledStep[] } }).scheduler.steps;
  return {
    instance,
    steps,
    async read(fn) {
      counter.totals.read = 0;
      await fn();
      return counter.totals.read;
    },
    schemaNames: () =>
      realSql
        .exec<{ name: string }>("SELECT name FROM sqlite_master")
        .toArray()
        .map((r) => r.name),
    rowCount: (table) => realSql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n,
  };
}

/**
 * Runs `fn` inside the object behind `stub` with a measured instance of its class `Class`. The
 * real instance may then be behind what the measured one changed in storage: evict it before
 * asking it anything.
 */
export function measuring<T extends object, R>(
  stub: DurableObjectStub,
  Class: new (ctx: DurableObjectState, env: Env) => T,
  fn: (m: Measured<T>) => Promise<R>,
): Promise<R> {
  return runInDurableObject(stub, (_, state) => fn(measured(Class, state)));
}

/** Rows one step's due() and, when it ran, its run() read. */
export interface StepReads {
  step: string;
  due: number;
  run: number | null;
}

/**
 * Measures each step's due() at `at` and, when it is due by `until`, its run() (once, at its due
 * time, the clock moved there and back).
 */
export async function measureSteps(
  m: Measured<object>,
  clock: TestClock,
  at: number,
  until = at,
): Promise<StepReads[]> {
  const out: StepReads[] = [];
  for (const step of m.steps) {
    let due: number | null = null;
    const dueReads = await m.read(() => {
      due = step.due(at);
    });
    const when: number | null = due;
    let runReads: number | null = null;
    if (when !== null && when <= until) {
      clock.set(Math.max(at, when));
      runReads = await m.read(() => step.run(Math.max(at, when)));
      clock.set(at);
    }
    out.push({ step: step.name, due: dueReads, run: runReads });
  }
  return out;
}

/** Runs the move step while it has a slot to move (at the clock's time), with the rows its due() and each run() read. */
export async function moveRuns(m: Measured<object>, clock: TestClock): Promise<{ due: number; run: number }[]> {
  const step = m.steps.find((s) => s.name === "move-to-history")!;
  const out: { due: number; run: number }[] = [];
  for (let i = 0; i < 30; i++) {
    let due: number | null = null;
    const dueReads = await m.read(() => {
      due = step.due(clock.now());
    });
    if (due === null) break;
    out.push({ due: dueReads, run: await m.read(() => step.run(clock.now())) });
  }
  return out;
}
