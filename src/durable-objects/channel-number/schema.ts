import type { SchemaStep } from "../shared/schema-version";
import { createMetaTable } from "../shared/meta";
import { createContactsTable } from "./contacts";
import { createOutboxTable } from "./outbox";
import { readPace, writePace } from "./drain";
import { now } from "../../lib/clock";
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
      // Entries an earlier release left mid-call are found through its `outbox_sending` index,
      // which this drops: they join the pace's list of entries in flight, which the constructor
      // marks unknown (never called again). That release relayed every change through a row, so
      // nothing before now needs handing to the workspace again.
      const inFlight = createOutboxTable(sql);
      if (inFlight.length > 0) {
        const pace = readPace(sql);
        writePace(sql, pace.calls, pace.relayAfter ?? now(), [...new Set([...pace.sending, ...inFlight])]);
      }
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
