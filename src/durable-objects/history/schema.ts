import type { Schema } from "../shared/schema-version";
import { createMetaTable } from "../shared/meta";

/** The `chunks` table: a day's records, a few hundred per row, in key order (history.ts). */
const createChunksTable = (sql: SqlStorage): void => {
  sql.exec(
    "CREATE TABLE IF NOT EXISTS chunks (lo TEXT PRIMARY KEY, hi TEXT NOT NULL, rows TEXT NOT NULL) WITHOUT ROWID",
  );
};

/** A history shard's schema, step by step (see shared/schema-version.ts). Never edit a step once deployed; add the next one. */
export const HISTORY_SCHEMA: Schema = {
  steps: [
    {
      version: 1,
      description: "the baseline: meta and chunks (a day's records, a few hundred per row)",
      up: (sql) => {
        createMetaTable(sql);
        createChunksTable(sql);
      },
    },
  ],
  fresh: createChunksTable,
};
