import type { SchemaStep } from "../shared/schema-version";
import { createMetaTable } from "../shared/meta";
import { createContactsTable } from "./contacts";
import { createOutboxTable } from "./outbox";
import { createPairPaceTable } from "./pair-pace";
import { createSandboxReportsTable } from "./sandbox-reports";
import { createStatusRelayTable } from "./status-relay";

/** The channel-number object's schema, step by step (see shared/schema-version.ts). Never edit a step once deployed; add the next one. */
export const CHANNEL_NUMBER_SCHEMA: readonly SchemaStep[] = [
  {
    version: 1,
    description:
      "every table, column and index up to the first versioned release; older storage is brought up to it (columns added, heads marked, indexes replaced, send_times and inbound dropped)",
    up: (sql) => {
      createMetaTable(sql);
      createOutboxTable(sql);
      createStatusRelayTable(sql);
      createContactsTable(sql);
      createSandboxReportsTable(sql);
      createPairPaceTable(sql);
      // Replaced by the outbox itself (window) and by the workspace object (inbound messages).
      sql.exec("DROP TABLE IF EXISTS send_times");
      sql.exec("DROP TABLE IF EXISTS inbound");
    },
  },
];
