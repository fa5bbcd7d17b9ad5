-- What the operator says about a live number (issue 22, number health), kept on its row so that
-- the Numbers page and GET /channel-numbers/{id} ask the operator at most hourly. Each column is
-- short text (bounded in src/domain/operator-account.ts); sandbox numbers leave them NULL except waba_id.
ALTER TABLE channel_numbers ADD COLUMN waba_id TEXT;
ALTER TABLE channel_numbers ADD COLUMN verified_name TEXT;
ALTER TABLE channel_numbers ADD COLUMN quality_rating TEXT;
ALTER TABLE channel_numbers ADD COLUMN messaging_limit_tier TEXT;
-- When the operator was last asked (successfully or not): the hourly refresh keys on it.
ALTER TABLE channel_numbers ADD COLUMN operator_checked_at TEXT;
-- The operator's last refusal of a refresh, as "HTTP 401, code 190: <message>", NULL once a refresh succeeds.
ALTER TABLE channel_numbers ADD COLUMN last_operator_error TEXT;
