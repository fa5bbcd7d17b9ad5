import type { Schema } from "../shared/schema-version";
import { createMetaTable } from "../shared/meta";

/** The channel-number object's schema, step by step (see shared/schema-version.ts). Never edit a step once deployed; add the next one. */
export const CHANNEL_NUMBER_SCHEMA: Schema = {
  steps: [
    {
      version: 1,
      description:
        "the baseline: meta; contacts (with recipient_aliases) and sandbox reports are created when first written, with their indexes",
      up: createMetaTable,
    },
  ],
  // Contacts and sandbox reports are created when first written (a number that only sends keeps nothing).
  fresh: () => undefined,
};
