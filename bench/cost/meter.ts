import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import type { Usage } from "./usage";
import worker from "../../src/index";

/**
 * Counts what Cloudflare bills, at the edges of our code, without changing it: the runtime's own
 * prototypes (SqlStorage, DurableObjectStorage, the Durable Object namespace, queue producers, D1,
 * R2) and the Worker's handlers are wrapped in the cost run's isolate (its only test file). Every
 * Durable Object runs in that isolate (@cloudflare/vitest-plugin), so one wrap sees every object.
 */

export type ObjectClass = "Workspace" | "ChannelNumber" | "History" | "Throttle" | "unknown";
export type { Usage };

const emptyUsage = (): Usage => ({
  workerRequests: 0,
  doRequests: 0,
  alarms: 0,
  sql: {},
  setAlarm: 0,
  queueOps: 0,
  d1: { read: 0, written: 0 },
  r2: { classA: 0, classB: 0 },
});

type AnyFn = (...args: unknown[]) => unknown;
type Cursor = { rowsRead: number; rowsWritten: number };
/** Any class's namespace (their generic parameters differ). */
type Namespace = { idFromName(name: string): DurableObjectId };
type Patchable = Record<string | symbol, unknown>;

/** Replaces `target[name]` by `wrap` of it. */
function patch(target: object, name: string, wrap: (original: AnyFn) => AnyFn): void {
  (target as Patchable)[name] = wrap((target as Patchable)[name] as AnyFn);
}

/** Wraps `target[name]` so that `see` runs first, with the call's `this` and arguments. */
function before(target: object, name: string, see: (self: unknown, args: unknown[]) => void): void {
  patch(
    target,
    name,
    (original) =>
      function (this: unknown, ...args: unknown[]) {
        see(this, args);
        return original.apply(this, args);
      },
  );
}

/**
 * A multi-statement string's statements. A `;` inside a quote or comment would split it wrong and fail
 * the run (a syntax error), never miscount: none of ours has one.
 */
const statementsOf = (sql: string) => sql.split(";").filter((s) => s.replace(/--.*$/gm, "").trim() !== "");

/** One cost run's counters; `harvest()` returns what was counted since the last one. */
export class Meter {
  private usage = emptyUsage();
  /** SQL cursors, read at harvest (once run) and attributed then to a class (once the object's tables tell it). */
  private pending: Array<{ sql: object; statement: string; cursor: Cursor }> = [];
  private readonly classOfSql = new WeakMap<object, ObjectClass>();
  /** While false (the harness inspecting objects), nothing is counted. */
  counting = true;
  /** Objects seen through a namespace, for the alarm driver: key → raw stub factory. */
  readonly objects = new Map<string, { cls: ObjectClass; stub: () => DurableObjectStub }>();
  /** Queue messages sent and not yet acknowledged, and consumers running. */
  private queued = 0;
  private consuming = 0;

  async install(): Promise<void> {
    // Every object's SqlStorage and DurableObjectStorage share a prototype: one probe object finds them.
    const probe = env.THROTTLE.get(env.THROTTLE.idFromName("cost-meter-probe"));
    const [sqlProto, storageProto] = await runInDurableObject(probe, (_, state) => [
      Object.getPrototypeOf(state.storage.sql) as object,
      Object.getPrototypeOf(state.storage) as object,
    ]);
    this.patchSql(sqlProto!);
    before(storageProto!, "setAlarm", () => this.add("setAlarm"));
    this.patchNamespaces();
    this.patchQueues();
    this.patchD1();
    this.patchR2();
  }

  /** Reads the row counters of the SQL cursors run since the last harvest, and returns everything counted since. */
  harvest(): Usage {
    for (const { sql, statement, cursor } of this.pending) {
      const key = `${this.classOfSql.get(sql) ?? "unknown"}: ${statement}`;
      const s = (this.usage.sql[key] ??= { read: 0, written: 0, calls: 0 });
      s.read += cursor.rowsRead;
      s.written += cursor.rowsWritten;
      s.calls++;
    }
    this.pending = [];
    const done = this.usage;
    this.usage = emptyUsage();
    return done;
  }

  /** Whether every queued message was consumed and no consumer is running. */
  queuesIdle(): boolean {
    return this.queued <= 0 && this.consuming === 0;
  }

  /** Counts `n` of a billed unit (the driver counts the alarms it runs). */
  add(count: "workerRequests" | "doRequests" | "alarms" | "setAlarm" | "queueOps", n = 1): void {
    if (this.counting) this.usage[count] += n;
  }

  private patchSql(sqlProto: object): void {
    const meter = this;
    patch(
      sqlProto,
      "exec",
      (original) =>
        function (this: object, ...args: unknown[]) {
          // A string of several statements reports the rows of its last one only: run them one by one
          // (same order, same effect; such strings carry no bindings) so that each is counted.
          const parts = args.length === 1 ? statementsOf(String(args[0])) : [String(args[0])];
          let cursor: Cursor | null = null;
          for (const part of parts) {
            cursor = original.apply(this, parts.length === 1 ? args : [part]) as Cursor;
            const statement = part.replace(/\s+/g, " ").trim().slice(0, 110);
            const cls = meter.classOfSql.has(this) ? null : classOfStatement(statement);
            if (cls) meter.classOfSql.set(this, cls);
            if (meter.counting) meter.pending.push({ sql: this, statement, cursor });
          }
          return cursor ?? original.apply(this, args);
        },
    );
  }

  /** Each RPC call on a stub is a billed request; the objects seen are kept for the alarm driver. */
  private patchNamespaces(): void {
    const probe = "cost-meter-class-probe";
    const bindings: [Namespace, ObjectClass][] = [
      [env.WORKSPACE, "Workspace"],
      [env.CHANNEL_NUMBER, "ChannelNumber"],
      [env.HISTORY, "History"],
      [env.THROTTLE, "Throttle"],
    ];
    const classOf = new Map(bindings.map(([ns, cls]) => [ns.idFromName(probe).toString(), cls]));
    const meter = this;
    patch(
      Object.getPrototypeOf(env.WORKSPACE) as object,
      "get",
      (original) =>
        function (this: Namespace, ...args: unknown[]) {
          const [ns, id] = [this, args[0] as DurableObjectId];
          const cls = classOf.get(ns.idFromName(probe).toString()) ?? "unknown";
          // The driver's own stubs are not counted.
          meter.objects.set(`${cls}:${id.toString()}`, { cls, stub: () => original.call(ns, id) as DurableObjectStub });
          return new Proxy(original.apply(this, args) as DurableObjectStub, {
            get(target, prop) {
              const value = Reflect.get(target, prop, target) as unknown;
              if (typeof prop !== "string" || prop === "then" || typeof value !== "function") return value;
              return (...callArgs: unknown[]) => {
                meter.add("doRequests");
                return Reflect.apply(value as AnyFn, target, callArgs);
              };
            },
          });
        },
    );
  }

  /** Queue writes (producers), reads and deletes (the Worker's consumer), and the Worker's fetch requests. */
  private patchQueues(): void {
    const sent = (body: unknown) => {
      // ~100 B of metadata per message (pricing page); one write per 64 KB.
      this.add("queueOps", Math.ceil((new TextEncoder().encode(JSON.stringify(body)).length + 100) / 64_000));
      this.queued++;
    };
    const proto = Object.getPrototypeOf(env.WEBHOOK_QUEUE) as object;
    before(proto, "send", (_, [body]) => sent(body));
    before(proto, "sendBatch", (_, [messages]) => {
      for (const m of messages as Iterable<{ body: unknown }>) sent(m.body);
    });
    const meter = this;
    patch(
      worker,
      "queue",
      (original) =>
        async function (this: unknown, ...args: unknown[]) {
          const batch = args[0] as MessageBatch<unknown>;
          // A retried message stays queued (it is delivered again); every other one is acknowledged (a delete).
          const retried = new Set<string>();
          for (const m of batch.messages) before(m, "retry", () => retried.add(m.id));
          before(batch, "retryAll", () => batch.messages.forEach((m) => retried.add(m.id)));
          meter.consuming++;
          try {
            return await original.apply(this, args);
          } finally {
            meter.consuming--;
            const acknowledged = batch.messages.length - retried.size;
            meter.add("workerRequests");
            meter.add("queueOps", batch.messages.length + acknowledged);
            meter.queued -= acknowledged;
          }
        },
    );
    before(worker, "fetch", () => this.add("workerRequests"));
  }

  private patchD1(): void {
    const meter = this;
    const stmtProto = Object.getPrototypeOf(env.DB.prepare("SELECT 1")) as Patchable;
    const counted = (original: AnyFn) =>
      async function (this: unknown, ...args: unknown[]) {
        const result = (await original.apply(this, args)) as D1Result | D1Result[];
        for (const { meta } of meter.counting ? [result].flat() : []) {
          meter.usage.d1.read += meta?.rows_read ?? 0;
          meter.usage.d1.written += meta?.rows_written ?? 0;
        }
        return result;
      };
    patch(stmtProto, "all", counted);
    patch(stmtProto, "run", counted);
    patch(Object.getPrototypeOf(env.DB) as object, "batch", counted);
    const all = stmtProto["all"] as (this: D1PreparedStatement) => Promise<D1Result<Record<string, unknown>>>;
    // first() hides its meta: the same query through all() (D1 adds no LIMIT to first(), so rows read are equal).
    patch(
      stmtProto,
      "first",
      () =>
        async function (this: D1PreparedStatement, column?: unknown) {
          const row = (await all.call(this)).results[0] ?? null;
          if (typeof column !== "string" || row === null) return row;
          if (!(column in row)) throw new Error(`D1_COLUMN_NOTFOUND: Column not found (${column})`);
          return row[column];
        },
    );
  }

  private patchR2(): void {
    const proto = Object.getPrototypeOf(env.ARCHIVE) as Patchable;
    const classOf = { put: "classA", list: "classA", createMultipartUpload: "classA", get: "classB", head: "classB" };
    for (const [name, cls] of Object.entries(classOf) as Array<[string, "classA" | "classB"]>)
      before(proto, name, () => {
        if (this.counting) this.usage.r2[cls]++;
      });
  }
}

/** Each class creates its own first table before anything else (see the constructors): the first one seen names the class. */
function classOfStatement(statement: string): ObjectClass | null {
  // A number that only sends creates no table: it is known by the look it takes at its own tables.
  if (statement.includes("name IN ('meta', 'contacts', 'sandbox_reports'")) return "ChannelNumber";
  const created = /CREATE TABLE IF NOT EXISTS (\w+)/.exec(statement)?.[1] ?? "";
  if (/^[md]_\d+$/.test(created)) return "Workspace";
  return created === "chunks" ? "History" : created === "buckets" ? "Throttle" : null;
}
