import type { SchemaStep } from "../shared/schema-version";
import { createMetaTable } from "../shared/meta";
import { createMessagesTable } from "../workspace/messages";

/** A history shard's schema, step by step (see shared/schema-version.ts). Never edit a step once deployed; add the next one. */
export const HISTORY_SCHEMA: readonly SchemaStep[] = [
  {
    version: 1,
    description: "meta and the day's message records, with the list indexes, up to the first versioned release",
    up: (sql) => {
      createMetaTable(sql);
      createMessagesTable(sql);
    },
  },
];
