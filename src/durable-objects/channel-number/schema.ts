import type { Schema } from "../shared/schema-version";
import { createMetaTable } from "../shared/meta";
import { now } from "../../lib/clock";
import { createAliasesByWaIdIndex, createContactsTable } from "./contacts";
import { createSandboxReportsTable } from "./sandbox-reports";
import { createOutboxTable, createStatusRelayTable, readPace, writePace } from "./legacy/outbox-v1";

/** The channel-number object's schema, step by step (see shared/schema-version.ts). Never edit a step once deployed; add the next one. */
export const CHANNEL_NUMBER_SCHEMA: Schema = {
  steps: [
    {
      version: 1,
      description:
        "every table, column and index up to the first versioned release; older storage is brought up to it (columns added, heads marked, indexes replaced, send_times and inbound dropped)",
      up: (sql) => {
        createMetaTable(sql);
        // Entries an earlier release left mid-call are found through its `outbox_sending` index,
        // which this drops: they join the pace's list of entries in flight (marked unknown, never
        // called again). That release relayed every change through a row, so nothing before now
        // needs handing to the workspace again.
        const inFlight = createOutboxTable(sql);
        if (inFlight.length > 0) {
          const pace = readPace(sql);
          writePace(sql, pace.calls, pace.relayAfter ?? now(), [...new Set([...pace.sending, ...inFlight])]);
        }
        createStatusRelayTable(sql);
        createContactsTable(sql);
        createSandboxReportsTable(sql);
        sql.exec(
          "CREATE TABLE IF NOT EXISTS pair_pace (recipient TEXT PRIMARY KEY, tat INTEGER NOT NULL) WITHOUT ROWID",
        );
        sql.exec("DROP INDEX IF EXISTS pair_pace_by_tat");
        // Replaced by the outbox itself (window) and by the workspace object (inbound messages).
        sql.exec("DROP TABLE IF EXISTS send_times");
        sql.exec("DROP TABLE IF EXISTS inbound");
      },
    },
    {
      version: 2,
      description:
        "no row per message: the queue is a view of the workspace's records; the pair pace is kept in memory (pair_pace dropped); " +
        "the outbox and the relay table stay until legacy-handover.ts has handed over what they owe, then are dropped",
      up: (sql) => {
        sql.exec("DROP TABLE IF EXISTS pair_pace");
      },
    },
    {
      version: 3,
      description:
        "recipient_aliases indexed by the operator's id (failures reported without our jobId are matched through it)",
      up: (sql) => {
        const aliases = sql
          .exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'recipient_aliases'")
          .toArray();
        if (aliases.length > 0) createAliasesByWaIdIndex(sql);
      },
    },
  ],
  // Contacts and sandbox reports are created when first written (a number that only sends keeps nothing).
  fresh: () => undefined,
};
