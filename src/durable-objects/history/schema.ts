import type { Schema } from "../shared/schema-version";
import { createMetaTable } from "../shared/meta";
import { createMessagesTable } from "../workspace/legacy/messages-v1";

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
      description: "meta and the day's message records, with the list indexes, up to the first versioned release",
      up: (sql) => {
        createMetaTable(sql);
        createMessagesTable(sql);
      },
    },
    {
      version: 2,
      description:
        "chunks: records moved since are kept a few hundred per row; the records already here stay in `messages`",
      up: createChunksTable,
    },
  ],
  fresh: createChunksTable,
};
