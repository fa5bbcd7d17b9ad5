-- Whether the operator still honours a live number's token (src/domain/number-binding.ts). Set
-- to when the operator first refused it (HTTP 401 or code 190) on any call made with it: the
-- hourly check, a send, a media lookup, a template sync; NULL while no refusal was seen, and
-- again once an owner replaces the token. While set, inbound messages are recorded without their
-- content, and a caller who proves control of the number with the operator may take it over.
-- Bound: an ISO time (24 B) per number, written at most once per refusal (control plane).
ALTER TABLE channel_numbers ADD COLUMN unverified_since TEXT;

-- A disconnected number's sealed token is kept only while a media copy may still need it (the
-- operator keeps media 7 days): the daily job (src/scheduled/sealed-token-retention.ts) clears
-- older ones in LIMITed batches through this index, which holds only disconnected numbers that
-- still have a sealed token (~60 B each; an entry leaves when its token is cleared).
CREATE INDEX channel_numbers_sealed_after_disconnect ON channel_numbers (disconnected_at)
  WHERE status = 'disconnected' AND upstream_credentials IS NOT NULL;
