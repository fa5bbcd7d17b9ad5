import type { Schema } from "../shared/schema-version";
import { createMetaTable } from "../shared/meta";
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
  ],
  // Everything else is created when first written.
  fresh: () => undefined,
};
