-- Control-plane records: written by the admin API, read (through short-lived
-- caches) by the public API.

CREATE TABLE plans (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  monthly_message_quota INTEGER NOT NULL CHECK (monthly_message_quota >= 0),
  max_numbers INTEGER NOT NULL CHECK (max_numbers >= 0)
);

INSERT INTO plans (id, name, monthly_message_quota, max_numbers) VALUES
  ('free', 'Free', 1000, 1),
  ('pro', 'Pro', 100000, 10),
  ('scale', 'Scale', 2000000, 100);

CREATE TABLE workspaces (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  plan_id TEXT NOT NULL REFERENCES plans(id),
  -- NULL: the plan's quota applies.
  monthly_message_quota INTEGER CHECK (monthly_message_quota IS NULL OR monthly_message_quota >= 0),
  created_at TEXT NOT NULL
);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  name TEXT,
  -- SHA-256 (hex) of the full key; the key itself is never stored.
  key_hash TEXT NOT NULL UNIQUE,
  last_four TEXT NOT NULL,
  created_at TEXT NOT NULL,
  revoked_at TEXT
);
CREATE INDEX api_keys_by_workspace ON api_keys (workspace_id, created_at);

CREATE TABLE channel_numbers (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  display_phone_number TEXT NOT NULL,
  upstream_type TEXT NOT NULL CHECK (upstream_type IN ('sandbox', 'cloud')),
  -- The operator's phone_number_id (cloud only): routes its webhooks to us.
  upstream_phone_number_id TEXT,
  -- AES-GCM sealed JSON of the operator credentials (cloud only).
  upstream_credentials TEXT,
  status TEXT NOT NULL DEFAULT 'connected' CHECK (status IN ('connected', 'disconnected')),
  created_at TEXT NOT NULL,
  disconnected_at TEXT
);
CREATE INDEX channel_numbers_by_workspace ON channel_numbers (workspace_id, created_at, id);
CREATE UNIQUE INDEX channel_numbers_by_upstream_id ON channel_numbers (upstream_phone_number_id)
  WHERE upstream_phone_number_id IS NOT NULL AND status = 'connected';

CREATE TABLE webhooks (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id),
  channel_number_id TEXT NOT NULL UNIQUE REFERENCES channel_numbers(id),
  url TEXT NOT NULL,
  -- AES-GCM sealed signing secret: needed in clear to sign, so not hashed.
  sealed_secret TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
  failing_since TEXT,
  disabled_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX webhooks_by_workspace ON webhooks (workspace_id, created_at, id);
