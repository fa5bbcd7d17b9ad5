-- Every authenticated call of the admin API: who (the admin token's id), what
-- (method, route pattern, path with its ids), when, from where, and the result.
-- Bound: ~300 bytes a row. At design load the admin API sees at most ~10,000
-- calls a day (operator actions and the dashboard's administration), so ~3 MB
-- a day; rows older than 90 days are purged every hour by the scheduled job in
-- src/scheduled/admin-audit-retention.ts (indexed by time, LIMITed batches),
-- which caps the table near 900,000 rows (~270 MB). Unauthenticated calls are
-- not recorded here (they could fill the table); they get a log line.
CREATE TABLE admin_audit_log (
  id TEXT PRIMARY KEY,
  at TEXT NOT NULL,
  actor TEXT NOT NULL,
  method TEXT NOT NULL,
  route TEXT NOT NULL,
  path TEXT NOT NULL,
  status INTEGER NOT NULL,
  request_id TEXT NOT NULL,
  client_address TEXT
);
CREATE INDEX admin_audit_log_by_time ON admin_audit_log (at);
