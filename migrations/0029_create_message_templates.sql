-- Message templates of the operator's business accounts (issue 24, API v2), synced from
-- GET /{version}/{waba-id}/message_templates (src/domain/template-sync.ts). One row per
-- (business account, name, language): the operator's own key of a template.
-- Bound: `components` is our normalized spec (body text with its placeholders, header, footer,
-- buttons), at most 8 KB (a larger one is skipped and reported as the sync's error); ~1 KB
-- typical, ~1.3 KB per row with its key. At most 6,000 rows per account (the operator's own
-- maximum for a verified business; 250 otherwise): the sync stores no more. Rows of an account
-- that the operator no longer lists are deleted at the end of each complete pass, and when a
-- template's status webhook finds it gone. Sandbox numbers have none here (built into the code).
CREATE TABLE message_templates (
  waba_id TEXT NOT NULL,
  name TEXT NOT NULL,
  language TEXT NOT NULL,
  category TEXT NOT NULL,
  status TEXT NOT NULL,
  parameter_format TEXT NOT NULL,
  components TEXT NOT NULL,
  synced_at TEXT NOT NULL,
  PRIMARY KEY (waba_id, name, language)
) WITHOUT ROWID;

-- One row per business account (~300 B): the last complete sync, the last failure (kept until
-- a pass completes; the templates above stay as last synced), the operator's paging cursor of a
-- pass in progress (resumed by the next run: bounded work per run) and a request for a prompt run.
-- Deleted with nothing: one row per account ever connected (≤ the number of live numbers).
CREATE TABLE template_sync_state (
  waba_id TEXT PRIMARY KEY NOT NULL,
  last_success_at TEXT,
  last_error TEXT,
  last_error_at TEXT,
  cursor TEXT,
  pass_started_at TEXT,
  requested_at TEXT
) WITHOUT ROWID;

-- A business account's live numbers, found without a scan: the sync's token, the hourly list of
-- accounts due (an index-only read of live numbers with an account) and the account-level
-- webhooks (bans, restrictions, template updates). ~60 B per live number; sandbox numbers have no
-- account and no entry.
CREATE INDEX channel_numbers_by_waba ON channel_numbers (waba_id) WHERE waba_id IS NOT NULL;
