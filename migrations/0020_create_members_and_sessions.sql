-- Dashboard members and their sign-in sessions.

-- One row per person with access to a workspace's dashboard. An email address
-- belongs to one workspace (sign-in is by email). The invitation link lives on
-- the row: one outstanding link per member, so invitations need no table of
-- their own. ~300 bytes a row; rows are added by invitations (a few per
-- workspace, at most MAX_MEMBERS_PER_WORKSPACE = 50 per workspace: 10,000
-- workspaces make at most 500,000 rows, ~150 MB, usually far fewer) and
-- deleted when a member is removed.
CREATE TABLE members (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  -- Lower-cased.
  email TEXT NOT NULL UNIQUE,
  role TEXT NOT NULL CHECK (role IN ('owner', 'developer', 'viewer')),
  -- argon2id PHC string (parameters included); NULL until the member sets one.
  password_hash TEXT,
  -- SHA-256 (hex) of the single-use invitation token, and when it stops working.
  invitation_hash TEXT UNIQUE,
  invitation_expires_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX members_by_workspace ON members (workspace_id, created_at, id);

-- Signed-in browsers. ~250 bytes a row; one row per sign-in (design load: say
-- 10,000 workspaces x 5 sign-ins a day = 50,000 rows a day), each living at
-- most 7 days (absolute expiry): ~350,000 rows, ~90 MB at most. Deleted at
-- sign-out, password change and member removal; expired rows are purged
-- (indexed, LIMITed) by every sign-in.
CREATE TABLE dashboard_sessions (
  -- SHA-256 (hex) of the cookie's token; the token itself is never stored.
  token_hash TEXT PRIMARY KEY,
  member_id TEXT NOT NULL REFERENCES members(id),
  created_at TEXT NOT NULL,
  -- Bumped at most every few minutes (not on every request): idle expiry is 12 h after it.
  last_seen_at TEXT NOT NULL,
  -- Absolute expiry: created_at + 7 days.
  expires_at TEXT NOT NULL
);
CREATE INDEX dashboard_sessions_by_member ON dashboard_sessions (member_id);
CREATE INDEX dashboard_sessions_by_expiry ON dashboard_sessions (expires_at);
