/**
 * Durable Object storage outlives deploys, so object schemas only ever grow:
 * tables are created with IF NOT EXISTS, and a column added after a table's
 * first release is added here to storage created before it.
 */
export function ensureColumn(sql: SqlStorage, table: string, column: string, declaration: string): void {
  const exists = sql
    .exec<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`)
    .toArray()
    .some((c) => c.name === column);
  if (!exists) sql.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${declaration}`);
}
