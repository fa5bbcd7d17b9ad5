/**
 * The schema of an object's SQLite storage, by number. Storage outlives
 * deploys, so each object class keeps one ordered list of numbered steps
 * (its `schema.ts`) and one row with the version its storage is at; at
 * start-up the steps above that version run, each in one transaction with
 * the new version number, so a crash mid-upgrade leaves the storage at the
 * last step that committed and the next start goes on from there.
 *
 * A new object (no table at all) does not replay the steps: it creates the
 * latest layout at once (`fresh`), which costs what that layout costs and
 * nothing for the layouts it never had. Step 1 of every class is its baseline:
 * the layout of the first deployed release (the slot-table layout); nothing
 * older exists. Later steps change that layout; they are never edited once
 * deployed, only added.
 *
 * Where the version is kept: the `schema_version` row of `meta` (one row, in
 * a table every object has).
 *
 * Cost: a woken object reads one row; a new object writes its tables and
 * the version row. Model: cloudflare/agents `_ensureSchema`.
 */
export interface SchemaStep {
  readonly version: number;
  /** What the step changes, for the log and for the next engineer. */
  readonly description: string;
  up(sql: SqlStorage): void;
}

export interface Schema {
  /** The steps, numbered 1, 2, 3 … in order. */
  readonly steps: readonly SchemaStep[];
  /** Creates the latest layout in an empty object (the `meta` table exists already). */
  fresh(sql: SqlStorage): void;
}

const META_TABLE = "CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID";

export class SchemaTooNewError extends Error {
  constructor(stored: number, known: number) {
    super(
      `storage is at schema version ${stored}, this code knows up to ${known}: refusing to run an older build on newer storage`,
    );
  }
}

const hasTable = (sql: SqlStorage, name: string): boolean =>
  sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name).toArray().length > 0;

/** The version the storage is at: 0 for an empty object (or tables written without a version). */
export function schemaVersion(sql: SqlStorage): number {
  if (!hasTable(sql, "meta")) return 0;
  const v = sql.exec<{ v: string }>("SELECT v FROM meta WHERE k = 'schema_version'").toArray()[0]?.v;
  return v === undefined ? 0 : Number(v);
}

/** Whether the object has no table at all (never written, or deleted whole). */
export const isEmptyStorage = (sql: SqlStorage): boolean =>
  sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").toArray().length === 0;

function writeVersion(sql: SqlStorage, version: number): void {
  sql.exec(
    "INSERT INTO meta (k, v) VALUES ('schema_version', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
    String(version),
  );
}

/**
 * Brings the storage to the last step's version; returns the versions it ran (`[latest]` for a
 * new object). Call it in the constructor, inside `blockConcurrencyWhile` or before any other
 * statement: nothing may read the tables before they are current.
 */
export function ensureSchema(storage: DurableObjectStorage, schema: Schema): number[] {
  const { steps } = schema;
  assertOrdered(steps);
  const latest = steps[steps.length - 1]?.version ?? 0;
  const sql = storage.sql;
  if (isEmptyStorage(sql)) {
    storage.transactionSync(() => {
      sql.exec(META_TABLE);
      schema.fresh(sql);
      writeVersion(sql, latest);
    });
    return [latest];
  }
  const current = schemaVersion(sql);
  if (current > latest) throw new SchemaTooNewError(current, latest);
  // Tables written without a version (none of this code's making) run every step, the version kept in meta.
  if (current === 0) sql.exec(META_TABLE);
  const ran: number[] = [];
  for (const step of steps) {
    if (step.version <= current) continue;
    storage.transactionSync(() => {
      step.up(sql);
      writeVersion(sql, step.version);
    });
    ran.push(step.version);
  }
  return ran;
}

function assertOrdered(steps: readonly SchemaStep[]): void {
  steps.forEach((s, i) => {
    if (s.version !== i + 1)
      throw new Error(`schema steps must be numbered 1, 2, 3 … in order; step ${i + 1} says ${s.version}`);
  });
}
