-- How many days of message records a plan keeps listable through the API;
-- older days are archived to R2 (GET /message-archives) and deleted.
ALTER TABLE plans ADD COLUMN message_history_days INTEGER NOT NULL DEFAULT 30 CHECK (message_history_days BETWEEN 3 AND 400);
UPDATE plans SET message_history_days = 7 WHERE id = 'free';
UPDATE plans SET message_history_days = 30 WHERE id IN ('pro', 'scale');
