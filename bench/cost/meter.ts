import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { splitStatements } from "./statements";
import type { Usage } from "./usage";
import worker from "../../src/index";

/**
 * Counts what Cloudflare bills, at the edges of our code, without changing it:
 * the runtime's own prototypes (SqlStorage, DurableObjectStorage, the Durable
 * Object namespace, queue producers, D1, R2) and the Worker's handlers are
 * wrapped for the length of a cost run. Every Durable Object runs in the test
 * isolate (@cloudflare/vitest-plugin), so one wrap sees every object.
 */

export type ObjectClass = "Workspace" | "ChannelNumber" | "History" | "Throttle" | "unknown";
export type { Usage };

const emptyUsage = (): Usage => ({
  workerRequests: {},
  doRequests: {},
  alarms: {},
  sql: {},
  sqlByStatement: {},
  setAlarm: {},
  queues: {},
  d1: { read: 0, written: 0 },
  r2: { classA: 0, classB: 0 },
  outbound: {},
});
const bump = (rec: Record<string, number>, key: string, n = 1) => (rec[key] = (rec[key] ?? 0) + n);

type AnyFn = (...args: unknown[]) => unknown;
type Cursor = { rowsRead: number; rowsWritten: number };
/** Any class's namespace (their generic parameters differ). */
type Namespace = { idFromName(name: string): DurableObjectId };
type Patchable = Record<string | symbol, unknown>;

/** One cost run's counters; `harvest()` closes the current step and returns its usage. */
export class Meter {
  private usage = emptyUsage();
  /** SQL cursors and setAlarm() calls, attributed to a class at harvest time (once the object's tables tell it). */
  private pending: Array<{ sql: object; statement: string; cursor: Cursor }> = [];
  private pendingSetAlarms: object[] = [];
  private readonly classOfSql = new WeakMap<object, ObjectClass>();
  private readonly restores: (() => void)[] = [];
  /** While false (the harness inspecting objects), nothing is counted. */
  counting = true;
  /** Objects seen through a namespace, for the alarm driver: key → raw stub factory. */
  readonly objects = new Map<string, { cls: ObjectClass; stub: () => DurableObjectStub }>();
  private inFlightConsumers = 0;
  private queueOutstanding = 0;
  private originalGet: AnyFn = () => null;

  async install(): Promise<void> {
    this.originalGet = (Object.getPrototypeOf(env.WORKSPACE) as Patchable)["get"] as AnyFn;
    // Every object's SqlStorage and DurableObjectStorage share a prototype: one probe object finds them.
    const probe = this.rawStub(env.THROTTLE, env.THROTTLE.idFromName("cost-meter-probe"));
    const [sqlProto, storageProto] = await runInDurableObject(probe, (_, state) => [
      Object.getPrototypeOf(state.storage.sql) as Patchable,
      Object.getPrototypeOf(state.storage) as Patchable,
    ]);
    this.patchSql(sqlProto!, storageProto!);
    this.patchNamespaces();
    this.patchQueues();
    this.patchHandlers();
    this.patchD1();
    this.patchR2();
  }

  uninstall(): void {
    for (const restore of this.restores.reverse()) restore();
    this.restores.length = 0;
  }

  /** Counts an outbound request (the network mock calls it). */
  outbound(kind: string): void {
    if (this.counting) bump(this.usage.outbound, kind);
  }

  /** Counts an alarm the driver ran. */
  alarm(cls: ObjectClass): void {
    bump(this.usage.alarms, cls);
  }

  /** Closes the current step: reads the row counters of its SQL cursors and returns everything counted since the last harvest. */
  async harvest(): Promise<Usage> {
    for (const p of this.pending) {
      const cls = this.classOfSql.get(p.sql) ?? "unknown";
      const rows = (this.usage.sql[cls] ??= { read: 0, written: 0 });
      const s = (this.usage.sqlByStatement[`${cls}: ${p.statement}`] ??= { read: 0, written: 0, calls: 0 });
      rows.read += p.cursor.rowsRead;
      rows.written += p.cursor.rowsWritten;
      s.read += p.cursor.rowsRead;
      s.written += p.cursor.rowsWritten;
      s.calls++;
    }
    for (const sql of this.pendingSetAlarms) bump(this.usage.setAlarm, this.classOfSql.get(sql) ?? "unknown");
    [this.pending, this.pendingSetAlarms] = [[], []];
    const done = this.usage;
    this.usage = emptyUsage();
    return done;
  }

  /** Whether every queued message was consumed and no consumer is running. */
  queuesIdle(): boolean {
    return this.queueOutstanding <= 0 && this.inFlightConsumers === 0;
  }

  /** A stub that is not counted (for the harness's own inspection). */
  rawStub(ns: Namespace, id: DurableObjectId): DurableObjectStub {
    return this.originalGet.call(ns, id) as DurableObjectStub;
  }

  private patch(target: Patchable, name: string, wrap: (original: AnyFn) => AnyFn): void {
    const original = target[name] as AnyFn;
    target[name] = wrap(original);
    this.restores.push(() => (target[name] = original));
  }

  /** Wraps `target[name]` so that `see` runs first, with the call's `this` and arguments. */
  private before(target: Patchable, name: string, see: (self: unknown, args: unknown[]) => void): void {
    this.patch(
      target,
      name,
      (original) =>
        function (this: unknown, ...args: unknown[]) {
          see(this, args);
          return original.apply(this, args);
        },
    );
  }

  private patchSql(sqlProto: Patchable, storageProto: Patchable): void {
    const meter = this;
    this.patch(
      sqlProto,
      "exec",
      (original) =>
        function (this: object, ...args: unknown[]) {
          // A string of several statements reports the rows of its last one only: run them one by
          // one (same order, same effect; such strings carry no bindings) so that each is counted.
          const parts = args.length === 1 ? splitStatements(String(args[0])) : [String(args[0])];
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
    this.before(storageProto, "setAlarm", (storage) => {
      if (this.counting) this.pendingSetAlarms.push((storage as DurableObjectStorage).sql);
    });
  }

  private patchNamespaces(): void {
    const bindings: [Namespace, ObjectClass][] = [
      [env.WORKSPACE, "Workspace"],
      [env.CHANNEL_NUMBER, "ChannelNumber"],
      [env.HISTORY, "History"],
      [env.THROTTLE, "Throttle"],
    ];
    const probe = "cost-meter-class-probe";
    const signatures = new Map(bindings.map(([ns, cls]) => [ns.idFromName(probe).toString(), cls]));
    const meter = this;
    this.patch(
      Object.getPrototypeOf(env.WORKSPACE) as Patchable,
      "get",
      (original) =>
        function (this: Namespace, ...args: unknown[]) {
          const stub = original.apply(this, args) as DurableObjectStub;
          const [ns, id] = [this, args[0] as DurableObjectId];
          const cls = signatures.get(ns.idFromName(probe).toString()) ?? "unknown";
          meter.objects.set(`${cls}:${id.toString()}`, { cls, stub: () => meter.rawStub(ns, id) });
          return new Proxy(stub, {
            get(target, prop) {
              const value = Reflect.get(target, prop, target) as unknown;
              if (typeof prop !== "string" || prop === "then" || typeof value !== "function") return value;
              return (...callArgs: unknown[]) => {
                if (meter.counting) bump(meter.usage.doRequests, `${cls}.${prop}`);
                return Reflect.apply(value as AnyFn, target, callArgs);
              };
            },
          });
        },
    );
  }

  private queue(name: string) {
    return (this.usage.queues[name] ??= { writes: 0, reads: 0, deletes: 0 });
  }

  private patchQueues(): void {
    const proto = Object.getPrototypeOf(env.WEBHOOK_QUEUE) as Patchable;
    const record = (body: unknown) => {
      // ~100 B of metadata per message (pricing page); one write per 64 KB.
      const bytes = new TextEncoder().encode(JSON.stringify(body)).length + 100;
      if (this.counting) this.queue(queueOfBody(body)).writes += Math.ceil(bytes / 64_000);
      this.queueOutstanding++;
    };
    this.before(proto, "send", (_, [body]) => record(body));
    this.before(proto, "sendBatch", (_, [messages]) => {
      for (const m of messages as Iterable<{ body: unknown }>) record(m.body);
    });
  }

  /** The Worker's queue consumer (reads, acknowledgements) and fetch handler (inbound requests). */
  private patchHandlers(): void {
    const handler = worker as unknown as Patchable;
    const meter = this;
    this.patch(
      handler,
      "queue",
      (original) =>
        async function (this: unknown, ...args: unknown[]) {
          const batch = args[0] as MessageBatch<unknown>;
          meter.inFlightConsumers++;
          const retried = new Set<string>();
          for (const m of batch.messages) {
            const retry = m.retry.bind(m);
            (m as { retry: typeof m.retry }).retry = (opts) => {
              retried.add(m.id);
              return retry(opts);
            };
          }
          const retryAll = batch.retryAll.bind(batch);
          (batch as { retryAll: typeof batch.retryAll }).retryAll = (opts) => {
            for (const m of batch.messages) retried.add(m.id);
            return retryAll(opts);
          };
          try {
            return await original.apply(this, args);
          } finally {
            meter.inFlightConsumers--;
            if (meter.counting) {
              bump(meter.usage.workerRequests, `queue:${batch.queue}`);
              const q = meter.queue(batch.queue);
              q.reads += batch.messages.length;
              q.deletes += batch.messages.length - retried.size;
            }
            meter.queueOutstanding -= batch.messages.length - retried.size;
          }
        },
    );
    this.before(handler, "fetch", (_, [request]) => {
      const req = request as Request;
      if (this.counting) bump(this.usage.workerRequests, `fetch:${routeKind(new URL(req.url).pathname, req.method)}`);
    });
  }

  private patchD1(): void {
    const stmtProto = Object.getPrototypeOf(env.DB.prepare("SELECT 1")) as Patchable;
    const add = (results: D1Result[]) => {
      for (const { meta } of this.counting ? results : []) {
        this.usage.d1.read += meta?.rows_read ?? 0;
        this.usage.d1.written += meta?.rows_written ?? 0;
      }
    };
    const counted = (original: AnyFn) =>
      async function (this: unknown, ...args: unknown[]) {
        const result = (await original.apply(this, args)) as D1Result | D1Result[];
        add([result].flat());
        return result;
      };
    this.patch(stmtProto, "all", counted);
    this.patch(stmtProto, "run", counted);
    this.patch(Object.getPrototypeOf(env.DB) as Patchable, "batch", counted);
    const all = stmtProto["all"] as (this: D1PreparedStatement) => Promise<D1Result<Record<string, unknown>>>;
    // first() hides its meta: the same query through all() (D1 adds no LIMIT to first(), so rows read are equal).
    this.patch(
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
      if (typeof proto[name] === "function")
        this.before(proto, name, () => {
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

function queueOfBody(body: unknown): string {
  if (body && typeof body === "object") {
    if ("event" in body || "events" in body) return "webhook-deliveries";
    if ("accepted" in body && "day" in body) return "usage-counts";
  }
  return "upstream-events";
}

function routeKind(path: string, method: string): string {
  if (path === "/api/v1/messages" && method === "POST") return "send";
  if (path.startsWith("/upstream/")) return "operator-webhook";
  return `${method} ${path.replace(/[0-9a-f-]{20,}/g, ":id")}`;
}
