-- Inbound media (images, audio, video, documents, stickers) is copied to R2 on receipt so that it
-- outlives the operator's 7 days, and deleted with its day when the plan's history window ends.
-- Each plan bounds the copies: an item larger than media_max_item_bytes, or one that would take
-- the workspace's copies of that UTC day past media_daily_bytes, is not copied (its record says so).
-- The operator's own limits: images 5 MB, audio and video 16 MB, documents 100 MB.
ALTER TABLE plans ADD COLUMN media_max_item_bytes INTEGER NOT NULL DEFAULT 16777216 CHECK (media_max_item_bytes >= 0);
ALTER TABLE plans ADD COLUMN media_daily_bytes INTEGER NOT NULL DEFAULT 2147483648 CHECK (media_daily_bytes >= 0);
-- free: 5 MiB per item, 100 MiB a day; pro: 16 MiB, 2 GiB; scale: 100 MiB, 20 GiB.
UPDATE plans SET media_max_item_bytes = 5242880, media_daily_bytes = 104857600 WHERE id = 'free';
UPDATE plans SET media_max_item_bytes = 16777216, media_daily_bytes = 2147483648 WHERE id = 'pro';
UPDATE plans SET media_max_item_bytes = 104857600, media_daily_bytes = 21474836480 WHERE id = 'scale';
