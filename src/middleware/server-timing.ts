import { createMiddleware } from "hono/factory";
import { config } from "../config";
import type { AppEnv } from "../context";

/**
 * Opt-in measurement (SERVER_TIMING = "true"; "false" in wrangler.toml), which
 * the tests that pin a request's D1 statements turn on: counts the D1 statements this request runs in the Worker and
 * reports them, with the Worker's own time, as
 * `Server-Timing: d1;desc="D1 statements";dur=<count>, total;dur=<ms>`.
 * The count is carried in `dur` because Server-Timing has no other numeric field.
 *
 * Only the Worker's own use of `c.env.DB` is counted: statements that Durable
 * Objects or queue consumers run are not (they have their own env). Off, the
 * middleware does nothing but one string comparison.
 */
export const serverTiming = createMiddleware<AppEnv>(async (c, next) => {
  if (!config(c.env).serverTiming) return next();
  const started = Date.now();
  const counter = { statements: 0 };
  // A per-request copy of the bindings: the shared env object is never modified.
  c.env = { ...c.env, DB: countingD1(c.env.DB, counter) };
  await next();
  // Error responses built by onError are new Response objects; this runs after them too.
  c.res.headers.set(
    "Server-Timing",
    `d1;desc="D1 statements";dur=${counter.statements}, total;dur=${Date.now() - started}`,
  );
});

interface Counter {
  statements: number;
}

const EXECUTES = new Set<PropertyKey>(["first", "run", "all", "raw"]);

/** Wraps a prepared statement: `bind` keeps the wrapper, each execution counts one statement. */
function countingStatement(
  stmt: D1PreparedStatement,
  counter: Counter,
  originals: WeakMap<object, D1PreparedStatement>,
): D1PreparedStatement {
  const wrapper = new Proxy(stmt, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "bind") {
        return (...args: unknown[]) =>
          countingStatement(
            (value as (...a: unknown[]) => D1PreparedStatement).apply(target, args),
            counter,
            originals,
          );
      }
      if (EXECUTES.has(prop)) {
        return (...args: unknown[]) => {
          counter.statements++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
  originals.set(wrapper, stmt);
  return wrapper;
}

/** Wraps a D1 database (or a session of one): prepare, batch and exec are counted. */
function countingD1<T extends D1Database | D1DatabaseSession>(
  db: T,
  counter: Counter,
  originals = new WeakMap<object, D1PreparedStatement>(),
): T {
  return new Proxy(db, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      const fn = value as (...a: unknown[]) => unknown;
      switch (prop) {
        case "prepare":
          return (query: string) =>
            countingStatement(fn.call(target, query) as D1PreparedStatement, counter, originals);
        case "batch":
          return (statements: D1PreparedStatement[]) => {
            counter.statements += statements.length;
            // The runtime accepts its own statement objects only.
            return fn.call(
              target,
              statements.map((s) => originals.get(s) ?? s),
            );
          };
        case "exec":
          return async (query: string) => {
            const result = (await fn.call(target, query)) as D1ExecResult;
            counter.statements += result.count;
            return result;
          };
        case "withSession":
          return (...args: unknown[]) => countingD1(fn.apply(target, args) as D1DatabaseSession, counter, originals);
        default:
          return fn.bind(target);
      }
    },
  });
}
