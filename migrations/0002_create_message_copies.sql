-- Copies of message records for listings, the dashboard and analytics. The
-- authoritative record lives in the workspace Durable Object; these rows are
-- upserted in batches by the message-copies queue consumer.
CREATE TABLE messages (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  channel_number_id TEXT NOT NULL,
  recipient TEXT NOT NULL,
  type TEXT NOT NULL,
  body TEXT NOT NULL,
  status TEXT NOT NULL,
  upstream_message_id TEXT,
  error_code TEXT,
  error_message TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  delivered_at TEXT,
  read_at TEXT,
  -- Monotonic per message: a late copy never overwrites a newer one.
  version INTEGER NOT NULL
);
CREATE INDEX messages_by_workspace ON messages (workspace_id, created_at, id);
CREATE INDEX messages_by_upstream_id ON messages (upstream_message_id) WHERE upstream_message_id IS NOT NULL;
