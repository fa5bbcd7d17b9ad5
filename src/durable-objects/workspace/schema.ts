import type { Schema } from "../shared/schema-version";
import { createMetaTable, setMeta } from "../shared/meta";
import { now } from "../../lib/clock";
import { ensureColumn } from "../shared/sql-schema";
import { DayLedger, type DayState } from "./day-ledger";
import { createDailyCountsTable, legacyDailyCounts, migrateMonthlyUsage } from "./legacy/daily-counts-v1";
import { createEventLogTable } from "./legacy/event-log-v1";
import { createHistoryTables, legacyArchivedDays, legacyHistoryDays } from "./legacy/history-v1";
import { createIdempotencyKeysTable } from "./legacy/idempotency-keys-v1";
import { createMessagesTable } from "./legacy/messages-v1";

const hasTable = (sql: SqlStorage, name: string): boolean =>
  sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name).toArray().length > 0;

/**
 * The workspace object's schema, step by step (see shared/schema-version.ts).
 * Never edit a step once deployed; add the next one.
 */
export const WORKSPACE_SCHEMA: Schema = {
  steps: [
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
    {
      version: 2,
      description:
        "day tables: new records go to m_<day>; the day ledger (meta day:<n>) takes the daily counts, history days and archived days, whose tables are dropped; " +
        "the records already here keep their table (with the claim's attempts/answered columns), read and moved as before until none is left",
      up: (sql) => {
        const ledger = new DayLedger(sql);
        const days = new Map<number, DayState>();
        const state = (day: number): DayState => days.get(day) ?? (days.set(day, {}), days.get(day)!);
        if (hasTable(sql, "daily_counts"))
          for (const [day, counts] of legacyDailyCounts(sql)) state(day).counts = counts;
        if (hasTable(sql, "history_days"))
          for (const h of legacyHistoryDays(sql)) state(h.day).legacyHistory = { records: h.messages };
        if (hasTable(sql, "archived_days")) {
          for (const a of legacyArchivedDays(sql))
            state(a.day).archived = { messages: a.messages, parts: a.parts, at: a.archived_at };
        }
        for (const [day, s] of days) ledger.set(day, s);
        sql.exec("DROP TABLE IF EXISTS daily_counts");
        sql.exec("DROP TABLE IF EXISTS history_days");
        sql.exec("DROP TABLE IF EXISTS archived_days");
        // The earlier layout's keys, events and delivery log are read until they expire, then dropped (legacy-tier.ts).
        setMeta(sql, "upgraded_at", String(now()));
        if (hasTable(sql, "messages")) {
          // The claim's compare-and-set (work.ts) on records accepted before the upgrade: every
          // one starts with no claim answered; the number's own list tells which were in flight.
          ensureColumn(sql, "messages", "attempts", "INTEGER NOT NULL DEFAULT 0");
          ensureColumn(sql, "messages", "answered", "INTEGER NOT NULL DEFAULT 0");
          // A retry's answer sets it (status.ts answerOf): without the column, the answer of a
          // temporary error for one of these records failed to commit, and the message ended
          // "claimed before" (outcome unknown) instead of being retried.
          ensureColumn(sql, "messages", "next_attempt_at", "INTEGER");
        }
      },
    },
  ],
  // Day tables and the delivery log are created when first written.
  fresh: () => undefined,
};
