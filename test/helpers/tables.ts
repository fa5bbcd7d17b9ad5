/** The tables of an object's storage, by name: what its code made (not SQLite's own, nor the runtime's `_cf_…`). */
export const tableNamesOf = (sql: SqlStorage): string[] =>
  sql
    .exec<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .toArray()
    .map((r) => r.name);
