-- Customer events and every delivery attempt now live in each workspace's
-- Durable Object (its event log, kept 7 days): one row per event and per
-- attempt cannot fit in one shared D1 database at design load.
DROP TABLE webhook_deliveries;
DROP TABLE webhook_events;
