-- Events sent to customer webhooks (kept for replay) and every delivery attempt.
-- Written by the delivery consumer, one transaction per queue batch.
CREATE TABLE webhook_events (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  channel_number_id TEXT NOT NULL,
  type TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at TEXT NOT NULL,
  -- pending | delivered | dead
  state TEXT NOT NULL DEFAULT 'pending'
);
CREATE INDEX webhook_events_by_number ON webhook_events (channel_number_id, created_at);

CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  webhook_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  attempted_at TEXT NOT NULL,
  status_code INTEGER,
  latency_ms INTEGER,
  error TEXT,
  outcome TEXT NOT NULL CHECK (outcome IN ('delivered', 'failed', 'refused', 'dead'))
);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, attempted_at DESC, id DESC);
CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_id);
