/**
 * The schema of an object's SQLite storage, by number. Storage outlives
 * deploys, so each object class keeps one ordered list of numbered steps
 * (its `schema.ts`) and a one-row table with the version its storage is at;
 * at start-up the steps above that version run, each in one transaction with
 * the new version number, so a crash mid-upgrade leaves the storage at the
 * last step that committed and the next start goes on from there.
 *
 * Step 1 of every class is the storage as it was before versions existed: it
 * brings any older layout up to it (CREATE … IF NOT EXISTS, columns added
 * when missing) and is what a new object runs too. Later steps change that
 * layout; they are never edited once deployed, only added.
 *
 * Cost: a woken object reads one row; a new object writes the version row
 * once per step batch. Model: cloudflare/agents `_ensureSchema`.
 */
export interface SchemaStep {
  readonly version: number;
  /** What the step changes, for the log and for the next engineer. */
  readonly description: string;
  up(sql: SqlStorage): void;
}

/** Bound: one row, ever. */
const VERSION_TABLE =
  "CREATE TABLE IF NOT EXISTS schema_version (only INTEGER PRIMARY KEY CHECK (only = 1), version INTEGER NOT NULL)";

export class SchemaTooNewError extends Error {
  constructor(stored: number, known: number) {
    super(
      `storage is at schema version ${stored}, this code knows up to ${known}: refusing to run an older build on newer storage`,
    );
  }
}

/** The version the storage is at: 0 for storage from before versions (or an empty object). */
export function schemaVersion(sql: SqlStorage): number {
  const table = sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").toArray();
  if (table.length === 0) return 0;
  return sql.exec<{ version: number }>("SELECT version FROM schema_version WHERE only = 1").toArray()[0]?.version ?? 0;
}

/**
 * Brings the storage to the last step's version; returns the versions it ran.
 * Call it in the constructor, inside `blockConcurrencyWhile` or before any
 * other statement: nothing may read the tables before they are current.
 */
export function ensureSchema(storage: DurableObjectStorage, steps: readonly SchemaStep[]): number[] {
  assertOrdered(steps);
  const latest = steps[steps.length - 1]?.version ?? 0;
  const sql = storage.sql;
  const current = schemaVersion(sql);
  if (current > latest) throw new SchemaTooNewError(current, latest);
  const ran: number[] = [];
  for (const step of steps) {
    if (step.version <= current) continue;
    storage.transactionSync(() => {
      step.up(sql);
      sql.exec(VERSION_TABLE);
      sql.exec(
        "INSERT INTO schema_version (only, version) VALUES (1, ?) ON CONFLICT (only) DO UPDATE SET version = excluded.version",
        step.version,
      );
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
