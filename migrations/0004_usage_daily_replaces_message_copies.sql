-- Daily counts per workspace, number and day (UTC), for the operator's
-- analytics. They replace the per-message copies, which grew with every send:
-- D1 is shared by all tenants and holds per-day aggregates only.
-- Bound: ~80 B per row; one row per active number and day: at design load
-- (10,000 workspaces, ~3 numbers each) ≤ 30,000 rows/day, kept 400 days by the
-- operator's retention job: ≤ 12 M rows, ~1 GB.
CREATE TABLE usage_daily (
  workspace_id TEXT NOT NULL,
  day TEXT NOT NULL,
  channel_number_id TEXT NOT NULL,
  accepted INTEGER NOT NULL DEFAULT 0,
  sent INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  received INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, day, channel_number_id)
);
CREATE INDEX usage_daily_by_day ON usage_daily (day);

DROP TABLE messages;
