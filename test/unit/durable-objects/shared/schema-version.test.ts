import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  ensureSchema,
  schemaVersion,
  SchemaTooNewError,
  type SchemaStep,
} from "../../../../src/durable-objects/shared/schema-version";

// Any SQLite-backed object's storage will do: the steps below use tables of their own.
const storageOf = <T>(name: string, fn: (storage: DurableObjectStorage) => T): Promise<T> =>
  runInDurableObject(env.THROTTLE.get(env.THROTTLE.idFromName(`schema-version:${name}`)), (_, state) =>
    fn(state.storage),
  );

const tables = (sql: SqlStorage): string[] =>
  sql
    .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'sv_%' ORDER BY name")
    .toArray()
    .map((r) => r.name);

const steps: SchemaStep[] = [
  { version: 1, description: "the first layout", up: (sql) => sql.exec("CREATE TABLE IF NOT EXISTS sv_a (x INTEGER)") },
  {
    version: 2,
    description: "a second table, filled from the first",
    up: (sql) => {
      sql.exec("CREATE TABLE sv_b (x INTEGER)");
      sql.exec("INSERT INTO sv_b (x) SELECT x * 10 FROM sv_a");
    },
  },
];

describe("ensureSchema (numbered steps inside an object)", () => {
  it("a new object runs every step and records the last version", async () => {
    await storageOf("fresh", (storage) => {
      expect(schemaVersion(storage.sql)).toBe(0);
      expect(ensureSchema(storage, steps)).toEqual([1, 2]);
      expect(schemaVersion(storage.sql)).toBe(2);
      expect(tables(storage.sql)).toEqual(["sv_a", "sv_b"]);
      // Woken again: nothing runs.
      expect(ensureSchema(storage, steps)).toEqual([]);
    });
  });

  it("storage at an older version runs only the steps above it, keeping its data", async () => {
    await storageOf("older", (storage) => {
      ensureSchema(storage, steps.slice(0, 1));
      storage.sql.exec("INSERT INTO sv_a (x) VALUES (1), (2)");
      expect(ensureSchema(storage, steps)).toEqual([2]);
      expect(
        storage.sql
          .exec<{ x: number }>("SELECT x FROM sv_b ORDER BY x")
          .toArray()
          .map((r) => r.x),
      ).toEqual([10, 20]);
    });
  });

  it("a step that fails leaves the storage at the previous version, with none of the step's changes", async () => {
    await storageOf("failing", (storage) => {
      const failing: SchemaStep = {
        version: 2,
        description: "fails half-way",
        up: (sql) => {
          sql.exec("CREATE TABLE sv_b (x INTEGER)");
          throw new Error("crash in the middle of a step");
        },
      };
      expect(() => ensureSchema(storage, [steps[0]!, failing])).toThrow("crash in the middle of a step");
      expect(schemaVersion(storage.sql)).toBe(1);
      expect(tables(storage.sql)).toEqual(["sv_a"]);
      // The next start (fixed code) goes on from version 1.
      expect(ensureSchema(storage, steps)).toEqual([2]);
    });
  });

  it("refuses storage newer than the code (a rolled-back deploy), and misnumbered steps", async () => {
    await storageOf("newer", (storage) => {
      ensureSchema(storage, steps);
      expect(() => ensureSchema(storage, steps.slice(0, 1))).toThrow(SchemaTooNewError);
      expect(() => ensureSchema(storage, [steps[1]!])).toThrow(/numbered 1, 2, 3/);
    });
  });
});
