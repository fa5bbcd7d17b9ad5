import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  ensureSchema,
  isEmptyStorage,
  schemaVersion,
  SchemaTooNewError,
  type Schema,
  type SchemaStep,
} from "../../../../src/durable-objects/shared/schema-version";
import { tableNamesOf } from "../../../helpers/tables";

// Any SQLite-backed object's storage will do: the steps below use tables of their own (`sv_…`).
// A history shard's constructor creates nothing in an empty object, so each test starts from
// storage with no table at all (a shard of its own, by name), as a new object does.
const storageOf = <T>(name: string, fn: (storage: DurableObjectStorage) => T): Promise<T> =>
  runInDurableObject(
    env.HISTORY.get(env.HISTORY.idFromName(`schema-version:${name}:${crypto.randomUUID()}`)),
    (_, state) => fn(state.storage),
  );

const metaVersion = (sql: SqlStorage): string | undefined =>
  sql.exec<{ v: string }>("SELECT v FROM meta WHERE k = 'schema_version'").toArray()[0]?.v;

const values = (sql: SqlStorage, table: string): number[] =>
  sql
    .exec<{ x: number }>(`SELECT x FROM ${table} ORDER BY x`)
    .toArray()
    .map((r) => r.x);

/** Records which steps ran (a step that must not run fails the test by being listed). */
const ladder = () => {
  const ran: number[] = [];
  const steps: SchemaStep[] = [
    {
      version: 1,
      description: "the first layout",
      up: (sql) => {
        ran.push(1);
        sql.exec("CREATE TABLE IF NOT EXISTS sv_a (x INTEGER)");
      },
    },
    {
      version: 2,
      description: "a second table, filled from the first",
      up: (sql) => {
        ran.push(2);
        sql.exec("CREATE TABLE sv_b (x INTEGER)");
        sql.exec("INSERT INTO sv_b (x) SELECT x * 10 FROM sv_a");
      },
    },
    {
      version: 3,
      description: "the first table goes",
      up: (sql) => {
        ran.push(3);
        sql.exec("DROP TABLE sv_a");
      },
    },
  ];
  // The latest layout at once: only what version 3 has (sv_b), none of what the steps made and removed.
  const schema: Schema = { steps, fresh: (sql) => sql.exec("CREATE TABLE sv_b (x INTEGER)") };
  return { ran, steps, schema };
};

describe("ensureSchema (numbered steps inside an object)", () => {
  it("a new object runs `fresh`, not the steps, and keeps its version in meta", async () => {
    await storageOf("fresh", (storage) => {
      const { ran, schema } = ladder();
      expect(isEmptyStorage(storage.sql)).toBe(true);
      expect(schemaVersion(storage.sql)).toBe(0);
      expect(ensureSchema(storage, schema)).toEqual([3]);
      expect(ran).toEqual([]);
      // The latest layout and the meta table, which holds the version.
      expect(tableNamesOf(storage.sql)).toEqual(["meta", "sv_b"]);
      expect(metaVersion(storage.sql)).toBe("3");
      expect(schemaVersion(storage.sql)).toBe(3);
      // Woken again: nothing runs.
      expect(ensureSchema(storage, schema)).toEqual([]);
      expect(ran).toEqual([]);
    });
  });

  it("storage at version 1 climbs the ladder from there, in place, keeping its data", async () => {
    await storageOf("at-one", (storage) => {
      const sql = storage.sql;
      const { ran, steps, schema } = ladder();
      // Created by a release whose ladder ended at step 1, then written to.
      ensureSchema(storage, { steps: steps.slice(0, 1), fresh: (s) => s.exec("CREATE TABLE sv_a (x INTEGER)") });
      sql.exec("INSERT INTO sv_a (x) VALUES (1), (2)");
      expect(schemaVersion(sql)).toBe(1);

      expect(ensureSchema(storage, schema)).toEqual([2, 3]);
      expect(ran).toEqual([2, 3]);
      expect(values(sql, "sv_b")).toEqual([10, 20]);
      expect(tableNamesOf(sql)).toEqual(["meta", "sv_b"]);
      expect(metaVersion(sql)).toBe("3");
      expect(ensureSchema(storage, schema)).toEqual([]);
    });
  });

  it("tables written without a version run every step, and keep the version in meta", async () => {
    await storageOf("no-version", (storage) => {
      const sql = storage.sql;
      sql.exec("CREATE TABLE sv_a (x INTEGER)");
      sql.exec("INSERT INTO sv_a (x) VALUES (3)");
      expect(isEmptyStorage(sql)).toBe(false);
      expect(schemaVersion(sql)).toBe(0);
      const { ran, schema } = ladder();
      expect(ensureSchema(storage, schema)).toEqual([1, 2, 3]);
      expect(ran).toEqual([1, 2, 3]);
      expect(values(sql, "sv_b")).toEqual([30]);
      expect(tableNamesOf(sql)).toEqual(["meta", "sv_b"]);
      expect(schemaVersion(sql)).toBe(3);
    });
  });

  it("storage of a later release, its version in meta, runs only the steps above it", async () => {
    await storageOf("meta-version", (storage) => {
      const sql = storage.sql;
      const { ran, steps, schema } = ladder();
      // Created new by a release that knew steps 1 and 2.
      ensureSchema(storage, { steps: steps.slice(0, 2), fresh: (s) => s.exec("CREATE TABLE sv_a (x INTEGER)") });
      expect(metaVersion(sql)).toBe("2");
      expect(ran).toEqual([]);
      expect(ensureSchema(storage, schema)).toEqual([3]);
      expect(ran).toEqual([3]);
      expect(metaVersion(sql)).toBe("3");
      expect(tableNamesOf(sql)).toEqual(["meta"]);
    });
  });

  it("a step that fails leaves the storage at the previous version, with none of the step's changes", async () => {
    await storageOf("failing", (storage) => {
      const sql = storage.sql;
      const { steps, schema } = ladder();
      sql.exec("CREATE TABLE sv_a (x INTEGER)");
      sql.exec("INSERT INTO sv_a (x) VALUES (4)");
      const failing: SchemaStep = {
        version: 2,
        description: "fails half-way",
        up: (s) => {
          s.exec("CREATE TABLE sv_b (x INTEGER)");
          s.exec("INSERT INTO sv_b (x) VALUES (99)");
          throw new Error("crash in the middle of a step");
        },
      };
      expect(() => ensureSchema(storage, { steps: [steps[0]!, failing, steps[2]!], fresh: schema.fresh })).toThrow(
        "crash in the middle of a step",
      );
      // Step 1 committed (its version with it); step 2 left nothing; step 3 never ran.
      expect(schemaVersion(sql)).toBe(1);
      expect(tableNamesOf(sql)).toEqual(["meta", "sv_a"]);
      expect(values(sql, "sv_a")).toEqual([4]);
      // The next start (fixed code) goes on from version 1.
      expect(ensureSchema(storage, schema)).toEqual([2, 3]);
      expect(values(sql, "sv_b")).toEqual([40]);
    });
  });

  it("a failing `fresh` leaves the object empty: the next start creates it again", async () => {
    await storageOf("failing-fresh", (storage) => {
      const { steps, schema } = ladder();
      const broken: Schema = {
        steps,
        fresh: (sql) => {
          sql.exec("CREATE TABLE sv_b (x INTEGER)");
          throw new Error("crash while creating");
        },
      };
      expect(() => ensureSchema(storage, broken)).toThrow("crash while creating");
      expect(isEmptyStorage(storage.sql)).toBe(true);
      expect(ensureSchema(storage, schema)).toEqual([3]);
      expect(tableNamesOf(storage.sql)).toEqual(["meta", "sv_b"]);
    });
  });

  it("refuses storage newer than the code (a rolled-back deploy), and misnumbered steps", async () => {
    const { steps, schema } = ladder();
    const older: Schema = { steps: steps.slice(0, 2), fresh: schema.fresh };
    await storageOf("newer-meta", (storage) => {
      ensureSchema(storage, schema);
      expect(() => ensureSchema(storage, older)).toThrow(SchemaTooNewError);
      // Nothing was changed by the refusal.
      expect(metaVersion(storage.sql)).toBe("3");
    });
    await storageOf("newer-row", (storage) => {
      storage.sql.exec("CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
      storage.sql.exec("INSERT INTO meta (k, v) VALUES ('schema_version', '7')");
      expect(() => ensureSchema(storage, schema)).toThrow(/schema version 7, this code knows up to 3/);
    });
    await storageOf("misnumbered", (storage) => {
      expect(() => ensureSchema(storage, { steps: [steps[1]!], fresh: schema.fresh })).toThrow(/numbered 1, 2, 3/);
      expect(isEmptyStorage(storage.sql)).toBe(true);
    });
  });
});
