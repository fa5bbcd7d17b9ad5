-- The customer-readable audit trail: every state-changing action on a
-- workspace (API, dashboard, operator), who did it (a member, an API key or the
-- admin token), on what, when, from which address, under which request id.
-- Secrets never enter it (no keys, signing secrets, links, passwords, full
-- webhook URLs or message contents: `detail` holds names, roles, hosts, ids).
--
-- Bound: ~250 bytes a row. Per workspace at most AUDIT_MAX_ROWS_PER_WORKSPACE
-- = 2,000 rows: every insert deletes, in the same batch, what fell below the
-- workspace's newest 2,000 (by `seq`, the workspace's own counter: one indexed
-- range delete). Rows older than 90 days are purged every hour by
-- src/scheduled/audit-retention.ts (indexed by `at`, LIMITed batches).
-- Design load (10,000 workspaces, ~5 actions a workspace a day): 50,000 rows a
-- day, 4.5 M rows kept (~1.1 GB); the ceiling, every workspace at its cap, is
-- 20 M rows (~5 GB), which the 10 GB database holds beside the other tables.
CREATE TABLE audit_log (
  workspace_id TEXT NOT NULL,
  -- 1, 2, 3 … per workspace: the page's cursor and the per-workspace cap.
  seq INTEGER NOT NULL,
  at TEXT NOT NULL,
  actor_type TEXT NOT NULL CHECK (actor_type IN ('member', 'api_key', 'admin')),
  -- The member id, API key id, or admin token fingerprint.
  actor_id TEXT NOT NULL,
  -- How the actor read at the time (a member's email, a key's name and last four), kept after it is gone.
  actor_label TEXT,
  action TEXT NOT NULL,
  target_type TEXT NOT NULL,
  target_id TEXT,
  detail TEXT,
  client_address TEXT,
  request_id TEXT NOT NULL,
  PRIMARY KEY (workspace_id, seq)
) WITHOUT ROWID;
CREATE INDEX audit_log_by_time ON audit_log (at);
