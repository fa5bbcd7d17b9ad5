import type { SchemaStep } from "../shared/schema-version";
import { createMetaTable } from "../shared/meta";
import { createDailyCountsTable, migrateMonthlyUsage } from "./daily-counts";
import { createEventLogTable } from "./event-log";
import { createHistoryTables } from "./history-tiering";
import { createIdempotencyKeysTable } from "./idempotency-keys";
import { createMessagesTable } from "./messages";

/**
 * The workspace object's schema, step by step (see shared/schema-version.ts).
 * Never edit a step once deployed; add the next one.
 */
export const WORKSPACE_SCHEMA: readonly SchemaStep[] = [
  {
    version: 1,
    description:
      "every table, column and index up to the first versioned release; older storage is brought up to it (columns added, indexes replaced, monthly usage turned into daily counts, send_times dropped)",
    up: (sql) => {
      createMetaTable(sql);
      createIdempotencyKeysTable(sql);
      createMessagesTable(sql);
      createEventLogTable(sql);
      createDailyCountsTable(sql);
      createHistoryTables(sql);
      migrateMonthlyUsage(sql);
      sql.exec("DROP TABLE IF EXISTS send_times");
    },
  },
];
