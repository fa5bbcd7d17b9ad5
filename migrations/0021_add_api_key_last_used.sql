-- When a key last authenticated a request, coarse: written at most once per
-- key per 10 minutes (src/domain/api-key-last-used.ts), never per request.
ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;
