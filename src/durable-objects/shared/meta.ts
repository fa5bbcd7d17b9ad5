/**
 * A small key/value table for an object's own bookkeeping (its name, cursors,
 * pacing state). Bound: a handful of rows per object.
 */
export function createMetaTable(sql: SqlStorage): void {
  sql.exec("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
}

export function getMeta(sql: SqlStorage, key: string): string | undefined {
  return sql.exec<{ v: string }>("SELECT v FROM meta WHERE k = ?", key).toArray()[0]?.v;
}

export function setMeta(sql: SqlStorage, key: string, value: string): void {
  sql.exec("INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v", key, value);
}
