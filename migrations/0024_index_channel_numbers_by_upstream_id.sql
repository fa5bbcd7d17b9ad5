-- Operator status reports keep arriving for a number after it is disconnected (delivered and read
-- reports, unknown outcomes settled within the operator's 7 days): they are routed by its operator
-- id to the number object, connected or not. The unique index covers connected numbers only.
-- Written only when a number is connected or disconnected (control plane).
CREATE INDEX channel_numbers_by_upstream_id_any ON channel_numbers (upstream_phone_number_id)
  WHERE upstream_phone_number_id IS NOT NULL;
