-- The API version a webhook was configured through (`POST /api/v1/webhooks` or `/api/v2/webhooks`):
-- the version whose event shapes it receives (v2's status events say `delivered` and `read`; v1's
-- keep their four statuses). Written by every configuration (a replacement takes the version it
-- was made through), read with the webhook by each delivery; webhooks made before it are v1's.
-- Bound: one small integer per webhook (~2 bytes on a ~400-byte row; one webhook per number, kept
-- while the number is).
ALTER TABLE webhooks ADD COLUMN api_version INTEGER NOT NULL DEFAULT 1 CHECK (api_version IN (1, 2));
