-- Membership is per workspace: one email address may belong to several
-- workspaces (a row, a role, a password and an invitation per workspace), and
-- nothing a workspace does depends on rows of another one. The UNIQUE (email)
-- of 0020 becomes UNIQUE (workspace_id, email). SQLite cannot drop a
-- constraint, so the table is rebuilt. dashboard_sessions references it, so
-- sessions are dropped first and re-created empty: every member signs in once
-- more after this migration (sessions are short-lived; nothing else is lost).
-- Bounds unchanged: ~300 bytes a member row, at most 50 per workspace.
DROP TABLE dashboard_sessions;

CREATE TABLE members_per_workspace (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  -- Lower-cased. Unique within the workspace only.
  email TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('owner', 'developer', 'viewer')),
  -- argon2id PHC string (parameters included); NULL until the member sets one. Per membership.
  password_hash TEXT,
  -- SHA-256 (hex) of the single-use invitation token, and when it stops working.
  invitation_hash TEXT UNIQUE,
  invitation_expires_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (workspace_id, email)
);
INSERT INTO members_per_workspace (id, workspace_id, email, role, password_hash, invitation_hash, invitation_expires_at, created_at, updated_at)
  SELECT id, workspace_id, email, role, password_hash, invitation_hash, invitation_expires_at, created_at, updated_at FROM members;
DROP TABLE members;
ALTER TABLE members_per_workspace RENAME TO members;
CREATE INDEX members_by_workspace ON members (workspace_id, created_at, id);
-- Sign-in finds an address's memberships.
CREATE INDEX members_by_email ON members (email, created_at);

-- As in 0020 (bounds there): signed-in browsers, one row per sign-in, at most 7 days.
CREATE TABLE dashboard_sessions (
  token_hash TEXT PRIMARY KEY,
  member_id TEXT NOT NULL REFERENCES members(id),
  created_at TEXT NOT NULL,
  last_seen_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX dashboard_sessions_by_member ON dashboard_sessions (member_id);
CREATE INDEX dashboard_sessions_by_expiry ON dashboard_sessions (expires_at);
