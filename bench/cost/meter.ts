import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { splitStatements } from "./statements";
import type { Rows, Usage } from "./usage";
import worker from "../../src/index";

/**
 * Counts what Cloudflare bills, at the edges of our code, without changing it:
 * the runtime's own prototypes (SqlStorage, DurableObjectStorage, the Durable
 * Object namespace, queue producers, D1, R2) and the Worker's handlers are
 * wrapped for the length of a cost run. Every Durable Object runs in the test
 * isolate (@cloudflare/vitest-plugin), so one wrap sees every object.
 */

export type ObjectClass = "Workspace" | "ChannelNumber" | "History" | "Throttle" | "unknown";

export type { Rows, Usage };

export const emptyUsage = (): Usage => ({
  workerRequests: {},
  doRequests: {},
  alarms: {},
  sql: {},
  sqlByStatement: {},
  setAlarm: {},
  storageCalls: {},
  queues: {},
  d1: { read: 0, written: 0, queries: 0 },
  r2: { classA: 0, classB: 0, free: 0, bytesPut: 0 },
  outbound: {},
});

const bump = (rec: Record<string, number>, key: string, n = 1) => {
  rec[key] = (rec[key] ?? 0) + n;
};

interface PendingCursor {
  sql: object;
  statement: string;
  cursor: { rowsRead: number; rowsWritten: number };
}

type AnyFn = (...args: unknown[]) => unknown;
/** Any class's namespace (their generic parameters differ). */
type Namespace = { idFromName(name: string): DurableObjectId };
type Patchable = Record<string | symbol, unknown>;

/** One cost run's counters; `harvest()` closes the current step and returns its usage. */
export class Meter {
  private usage = emptyUsage();
  private pending: PendingCursor[] = [];
  private readonly classOfSql = new WeakMap<object, ObjectClass>();
  private readonly restores: (() => void)[] = [];
  /** While false (the harness inspecting objects), nothing is counted. */
  counting = true;
  /** While true (the driver reading alarms), getAlarm() is not counted; everything running meanwhile still is. */
  inspecting = false;
  /** Objects seen through a namespace, for the alarm driver: key → raw stub factory. */
  readonly objects = new Map<string, { cls: ObjectClass; stub: () => DurableObjectStub }>();
  private inFlightConsumers = 0;
  private queueOutstanding = 0;

  async install(): Promise<void> {
    this.originalGet = (Object.getPrototypeOf(env.WORKSPACE) as Patchable)["get"] as AnyFn;
    this.patchSql();
    this.patchStorage();
    await Promise.all([this.sqlProtoReady, this.storageProtoReady]);
    this.patchNamespaces();
    this.patchQueues();
    this.patchConsumer();
    this.patchFetch();
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
      rows.read += p.cursor.rowsRead;
      rows.written += p.cursor.rowsWritten;
      const key = `${cls}: ${p.statement}`;
      const s = (this.usage.sqlByStatement[key] ??= { read: 0, written: 0, calls: 0 });
      s.read += p.cursor.rowsRead;
      s.written += p.cursor.rowsWritten;
      s.calls++;
    }
    this.pending = [];
    for (const sql of this.pendingSetAlarms) bump(this.usage.setAlarm, this.classOfSql.get(sql) ?? "unknown");
    this.pendingSetAlarms = [];
    const done = this.usage;
    this.usage = emptyUsage();
    return done;
  }

  /** Resolves when every queued message was consumed and no consumer is running. */
  queuesIdle(): boolean {
    return this.queueOutstanding <= 0 && this.inFlightConsumers === 0;
  }

  /** A stub that is not counted (for the harness's own inspection). */
  rawStub(ns: Namespace, id: DurableObjectId): DurableObjectStub {
    return (this.originalGet as (this: Namespace, id: DurableObjectId) => DurableObjectStub).call(ns, id);
  }

  private originalGet: AnyFn | null = null;

  private patch(target: Patchable, name: string, wrap: (original: AnyFn) => AnyFn): void {
    const original = target[name] as AnyFn;
    target[name] = wrap(original);
    this.restores.push(() => {
      target[name] = original;
    });
  }

  private patchSql(): void {
    // Any object's SqlStorage: every instance shares this prototype.
    const probe = this.rawStub(env.THROTTLE, env.THROTTLE.idFromName("cost-meter-probe"));
    this.sqlProtoReady = runInDurableObject(
      probe,
      (_, state) => Object.getPrototypeOf(state.storage.sql) as Patchable,
    ).then((p) => {
      const meter = this;
      this.patch(
        p,
        "exec",
        (original) =>
          function (this: object, ...args: unknown[]) {
            // A string of several statements reports the rows of its last one only: run them one by
            // one (same order, same effect; such strings carry no bindings) so that each is counted.
            const parts = args.length === 1 ? splitStatements(String(args[0])) : [String(args[0])];
            let cursor: PendingCursor["cursor"] | null = null;
            for (const part of parts) {
              cursor = original.apply(this, parts.length === 1 ? args : [part]) as PendingCursor["cursor"];
              const statement = statementKey(part);
              if (!meter.classOfSql.has(this)) {
                const cls = classOfStatement(statement);
                if (cls) meter.classOfSql.set(this, cls);
              }
              if (meter.counting) meter.pending.push({ sql: this, statement, cursor });
            }
            return cursor ?? original.apply(this, args);
          },
      );
    });
  }

  private sqlProtoReady: Promise<void> = Promise.resolve();

  private storageProtoReady: Promise<void> = Promise.resolve();
  /** setAlarm calls, attributed to a class at harvest time (once the object's tables tell it). */
  private pendingSetAlarms: object[] = [];

  private patchStorage(): void {
    const probe = this.rawStub(env.THROTTLE, env.THROTTLE.idFromName("cost-meter-probe"));
    this.storageProtoReady = runInDurableObject(
      probe,
      (_, state) => Object.getPrototypeOf(state.storage) as Patchable,
    ).then((p) => {
      const meter = this;
      for (const name of ["setAlarm", "getAlarm", "deleteAlarm", "deleteAll", "get", "put", "delete", "list"]) {
        if (typeof p[name] !== "function") continue;
        this.patch(
          p,
          name,
          (original) =>
            function (this: DurableObjectStorage, ...args: unknown[]) {
              if (meter.counting && !(meter.inspecting && name === "getAlarm")) {
                const sql = this.sql as object;
                const cls = meter.classOfSql.get(sql) ?? "unknown";
                if (name === "setAlarm") meter.pendingSetAlarms.push(sql);
                else bump(meter.usage.storageCalls, `${cls}.${name}`);
              }
              return original.apply(this, args);
            },
        );
      }
    });
  }

  private patchNamespaces(): void {
    const proto = Object.getPrototypeOf(env.WORKSPACE) as Patchable;
    const bindings: [Namespace, ObjectClass][] = [
      [env.WORKSPACE, "Workspace"],
      [env.CHANNEL_NUMBER, "ChannelNumber"],
      [env.HISTORY, "History"],
      [env.THROTTLE, "Throttle"],
    ];
    const probeName = "cost-meter-class-probe";
    const signatures = new Map(bindings.map(([ns, cls]) => [ns.idFromName(probeName).toString(), cls]));
    const classOf = (ns: Namespace): ObjectClass => signatures.get(ns.idFromName(probeName).toString()) ?? "unknown";
    const meter = this;
    this.patch(
      proto,
      "get",
      (original) =>
        function (this: Namespace, ...args: unknown[]) {
          const stub = original.apply(this, args) as DurableObjectStub;
          const ns = this;
          const id = args[0] as DurableObjectId;
          const cls = classOf(ns);
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

  private patchQueues(): void {
    const proto = Object.getPrototypeOf(env.WEBHOOK_QUEUE) as Patchable;
    const meter = this;
    const record = (body: unknown) => {
      const name = queueOfBody(body);
      const bytes = new TextEncoder().encode(JSON.stringify(body)).length + 100; // ~100 B of metadata per message (pricing page)
      const q = meter.queue(name);
      q.messages++;
      q.bytes += bytes;
      q.writes += Math.ceil(bytes / 64_000);
      meter.queueOutstanding++;
    };
    this.patch(
      proto,
      "send",
      (original) =>
        function (this: Queue, ...args: unknown[]) {
          if (meter.counting) record(args[0]);
          else meter.queueOutstanding++;
          return original.apply(this, args);
        },
    );
    this.patch(
      proto,
      "sendBatch",
      (original) =>
        function (this: Queue, ...args: unknown[]) {
          const messages = args[0] as Iterable<{ body: unknown }>;
          for (const m of messages) {
            if (meter.counting) record(m.body);
            else meter.queueOutstanding++;
          }
          return original.apply(this, args);
        },
    );
  }

  private queue(name: string) {
    return (this.usage.queues[name] ??= { writes: 0, reads: 0, deletes: 0, retries: 0, messages: 0, bytes: 0 });
  }

  private patchConsumer(): void {
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
            return await (original as (...a: unknown[]) => Promise<unknown>).apply(this, args);
          } finally {
            meter.inFlightConsumers--;
            if (meter.counting) {
              bump(meter.usage.workerRequests, `queue:${batch.queue}`);
              const q = meter.queue(batch.queue);
              q.reads += batch.messages.length;
              q.deletes += batch.messages.length - retried.size;
              q.retries += retried.size;
            }
            meter.queueOutstanding -= batch.messages.length - retried.size;
          }
        },
    );
  }

  private patchFetch(): void {
    const handler = worker as unknown as Patchable;
    const meter = this;
    this.patch(
      handler,
      "fetch",
      (original) =>
        function (this: unknown, ...args: unknown[]) {
          const req = args[0] as Request;
          if (meter.counting)
            bump(meter.usage.workerRequests, `fetch:${routeKind(new URL(req.url).pathname, req.method)}`);
          return original.apply(this, args);
        },
    );
  }

  private patchD1(): void {
    const db = env.DB as unknown as Patchable;
    const dbProto = Object.getPrototypeOf(db) as Patchable;
    const stmtProto = Object.getPrototypeOf(env.DB.prepare("SELECT 1")) as Patchable;
    const meter = this;
    const add = (meta: { rows_read?: number; rows_written?: number } | undefined) => {
      if (!meter.counting || !meta) return;
      meter.usage.d1.queries++;
      meter.usage.d1.read += meta.rows_read ?? 0;
      meter.usage.d1.written += meta.rows_written ?? 0;
    };
    for (const name of ["all", "run"]) {
      this.patch(
        stmtProto,
        name,
        (original) =>
          async function (this: D1PreparedStatement, ...args: unknown[]) {
            const result = (await original.apply(this, args)) as D1Result;
            add(result.meta);
            return result;
          },
      );
    }
    const all = stmtProto["all"] as (this: D1PreparedStatement) => Promise<D1Result<Record<string, unknown>>>;
    // first() hides its meta: the same query through all() (D1 adds no LIMIT to first(), so rows read are equal).
    this.patch(
      stmtProto,
      "first",
      () =>
        async function (this: D1PreparedStatement, ...args: unknown[]) {
          const result = await all.call(this);
          const row = result.results[0] ?? null;
          const column = args[0];
          if (typeof column !== "string") return row;
          if (row === null) return null;
          if (!(column in row)) throw new Error(`D1_COLUMN_NOTFOUND: Column not found (${column})`);
          return row[column];
        },
    );
    this.patch(
      dbProto,
      "batch",
      (original) =>
        async function (this: D1Database, ...args: unknown[]) {
          const results = (await original.apply(this, args)) as D1Result[];
          for (const r of results) add(r.meta);
          return results;
        },
    );
  }

  private patchR2(): void {
    const proto = Object.getPrototypeOf(env.ARCHIVE) as Patchable;
    const meter = this;
    const classOf: Record<string, "classA" | "classB" | "free"> = {
      put: "classA",
      list: "classA",
      createMultipartUpload: "classA",
      get: "classB",
      head: "classB",
      delete: "free",
    };
    for (const [name, cls] of Object.entries(classOf)) {
      if (typeof proto[name] !== "function") continue;
      this.patch(
        proto,
        name,
        (original) =>
          function (this: R2Bucket, ...args: unknown[]) {
            if (meter.counting) {
              meter.usage.r2[cls]++;
              if (name === "put") {
                const body = args[1];
                meter.usage.r2.bytesPut +=
                  typeof body === "string" ? body.length : body instanceof ArrayBuffer ? body.byteLength : 0;
              }
            }
            return original.apply(this, args);
          },
      );
    }
  }
}

const statementKey = (sql: string): string => sql.replace(/\s+/g, " ").trim().slice(0, 110);

/** Each class creates its own first table before anything else (see the constructors): the first one seen names the class. */
function classOfStatement(statement: string): ObjectClass | null {
  // A number that only sends creates no table: it is known by the look it takes at its own tables.
  if (statement.includes("name IN ('meta', 'contacts', 'sandbox_reports'")) return "ChannelNumber";
  const created = /CREATE TABLE IF NOT EXISTS (\w+)/.exec(statement)?.[1];
  if (created && /^[md]_\d+$/.test(created)) return "Workspace";
  switch (created) {
    case "chunks":
      return "History";
    case "idempotency_keys":
      return "Workspace";
    case "outbox":
      return "ChannelNumber";
    case "messages":
      return "History";
    case "buckets":
      return "Throttle";
    default:
      return null;
  }
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
