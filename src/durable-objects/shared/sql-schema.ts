/**
 * Durable Object storage outlives deploys, so object schemas only ever grow:
 * tables are created with IF NOT EXISTS, and a column added after a table's
 * first release is added here to storage created before it.
 */
/** Adds the column if the table lacks it; true when it was added. */
export function ensureColumn(sql: SqlStorage, table: string, column: string, declaration: string): boolean {
  const exists = sql
    .exec<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`)
    .toArray()
    .some((c) => c.name === column);
  if (exists) return false;
  sql.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${declaration}`);
  return true;
}
