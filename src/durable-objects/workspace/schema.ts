import type { Schema } from "../shared/schema-version";
import { createMetaTable } from "../shared/meta";
import { ensureColumn } from "../shared/sql-schema";
import { createOwedEventsTable } from "./event-publisher";
import { createSinceIndex, hasUnknownsTable } from "./unknown-outcomes";
import { now } from "../../lib/clock";
import { tallySlotTables } from "./counts";

/**
 * The workspace object's schema, step by step (see shared/schema-version.ts).
 * Never edit a step once deployed; add the next one.
 */
export const WORKSPACE_SCHEMA: Schema = {
  steps: [
    {
      version: 1,
      description:
        "the baseline: meta (with the day ledger's rows); slot tables, the delivery log's day tables, moved keys and the unknown outcomes are created when first written",
      up: createMetaTable,
    },
    {
      version: 2,
      description:
        "unknown outcomes expire in the order they became unknown: an index of `unknowns` by `since` (the table is created with it from now on)",
      up: (sql) => {
        if (hasUnknownsTable(sql)) createSinceIndex(sql);
      },
    },
    {
      version: 3,
      description:
        "slot tallies and late indexes: a slot's counts kept in a meta row (`tally:<slot>`, counts.ts) that every change to a record it covers rewrites, written here for the slot tables already big enough to need one; a new slot table gets its secondary indexes at INDEX_MIN_RECORDS records (day-tables.ts), the tables here keep theirs. A build before this step would change records without their tallies and name indexes a small table lacks",
      up: (sql) => tallySlotTables(sql, now()),
    },
    {
      version: 4,
      description:
        "each record keeps the order of its changes (`changes`, one letter each, written in the change's UPDATE; records without it " +
        "are ordered by their times once, as before); the owed list (`owed_events`) keeps the obligation to announce a committed change",
      up: (sql) => {
        createOwedEventsTable(sql);
        const slotTables = sql
          .exec<{ name: string }>(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'm\\_%' ESCAPE '\\'",
          )
          .toArray()
          .map((r) => r.name)
          .filter((name) => /^m_\d+$/.test(name));
        // A column added without a default rewrites no row: a record gets its value with its next change.
        for (const t of slotTables) ensureColumn(sql, t, "changes", "TEXT");
      },
    },
  ],
  // The owed list at once (every change writes it); everything else is created when first written.
  fresh: (sql) => createOwedEventsTable(sql),
};
