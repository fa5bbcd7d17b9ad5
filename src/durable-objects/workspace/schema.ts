import type { Schema } from "../shared/schema-version";
import { createMetaTable } from "../shared/meta";

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
  ],
  // Everything else is created when first written.
  fresh: () => undefined,
};
