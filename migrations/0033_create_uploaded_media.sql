-- Files a workspace uploaded to its media store (POST /api/v2/media), to send by id. The bytes are
-- in R2 (uploads/{workspace}/{id}, src/messages/uploaded-media.ts); this row is written once they are
-- stored, so a file exists when its row does.
-- Bound: ~300 B per row (ids, type, hash, a file name of at most 240 characters). Uploads are
-- limited per workspace (ABUSE_LIMITS.mediaChange: 60 a minute); at design load ~10,000 a day in
-- all, so ~300,000 rows (~90 MB) with the retention below. Retention: 30 days after the upload (the
-- operator keeps an uploaded file as long), then the hourly job (src/scheduled/media-retention.ts)
-- deletes the bytes and the row through the index on expires_at; DELETE /api/v2/media/{id} earlier.
CREATE TABLE uploaded_media (
  id TEXT PRIMARY KEY NOT NULL,
  workspace_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  content_type TEXT NOT NULL,
  size INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  filename TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID;

-- A workspace's files in upload order (ids are UUIDv7), for GET /api/v2/media's keyset pages.
CREATE INDEX uploaded_media_by_workspace ON uploaded_media (workspace_id, id);
-- The retention job's scan: the files expired, oldest first, LIMITed.
CREATE INDEX uploaded_media_by_expiry ON uploaded_media (expires_at);

-- The operator's media id of an uploaded file for one number (its media ids belong to the number
-- that uploaded them): a retried or a later send of the same file reuses it while the operator
-- keeps it (30 days from that upload), so the file is uploaded to the operator once per number.
-- Bound: ~150 B per row; at most one per file and number that sent it (a handful per file):
-- deleted with its file (DELETE and the retention job).
CREATE TABLE uploaded_media_operator_ids (
  media_id TEXT NOT NULL,
  channel_number_id TEXT NOT NULL,
  operator_media_id TEXT NOT NULL,
  uploaded_at INTEGER NOT NULL,
  PRIMARY KEY (media_id, channel_number_id)
) WITHOUT ROWID;
