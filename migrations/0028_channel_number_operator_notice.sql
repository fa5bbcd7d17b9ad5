-- The operator's last webhook about a live number that this service does not apply but that must
-- not pass unseen (issue 21): a change of another field than the ones applied (e.g. `standby`, when
-- another app controls the number's conversations), or the `errors` of a `messages` change. JSON
-- {"field", "message", "upstreamCode", "at"}, at most ~500 bytes (message cut at 300 characters);
-- one per number, replaced by the next; NULL until the first.
ALTER TABLE channel_numbers ADD COLUMN last_operator_notice TEXT;
