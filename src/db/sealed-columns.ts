import type { SealPurpose } from "../lib/secret-box";

/** Every column that holds a sealed secret, with the purpose it is sealed for (bound to the row's `id`). */
export const SEALED_COLUMNS = [
  {
    name: "upstreamCredentials",
    table: "channel_numbers",
    column: "upstream_credentials",
    purpose: "upstream-credentials",
  },
  { name: "webhookSecrets", table: "webhooks", column: "sealed_secret", purpose: "webhook-secret" },
] as const satisfies readonly { name: string; table: string; column: string; purpose: SealPurpose }[];

export type SealedColumn = (typeof SEALED_COLUMNS)[number];

/** Rows whose value is not sealed under `currentPrefix` (older format or key), a page at a time. */
export async function staleSealedRows(
  db: D1Database,
  col: SealedColumn,
  currentPrefix: string,
  limit: number,
): Promise<{ id: string; value: string }[]> {
  const { results } = await db
    .prepare(
      `SELECT id, ${col.column} AS value FROM ${col.table} WHERE ${col.column} IS NOT NULL AND ${col.column} NOT LIKE ? ORDER BY id LIMIT ?`,
    )
    .bind(`${currentPrefix}%`, limit)
    .all<{ id: string; value: string }>();
  return results;
}

export async function countStaleSealed(db: D1Database, col: SealedColumn, currentPrefix: string): Promise<number> {
  const row = await db
    .prepare(`SELECT COUNT(*) AS n FROM ${col.table} WHERE ${col.column} IS NOT NULL AND ${col.column} NOT LIKE ?`)
    .bind(`${currentPrefix}%`)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

/** Compare-and-set: replaces the value only if it is still the one that was re-sealed. */
export async function replaceSealed(
  db: D1Database,
  col: SealedColumn,
  id: string,
  old: string,
  next: string,
): Promise<boolean> {
  const result = await db
    .prepare(`UPDATE ${col.table} SET ${col.column} = ? WHERE id = ? AND ${col.column} = ?`)
    .bind(next, id, old)
    .run();
  return result.meta.changes === 1;
}
