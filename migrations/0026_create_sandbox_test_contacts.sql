-- Recipients a customer marked as test contacts of one of its sandbox numbers: the sandbox enforces
-- the operator's 24-hour customer-service window except for them, as the operator's own test
-- numbers allow. Bound: at most 10 per number (src/db/sandbox-test-contacts.ts), so at most 10 rows
-- per connected number; read once per sandbox send, written only by the customer.
CREATE TABLE sandbox_test_contacts (
  channel_number_id TEXT NOT NULL REFERENCES channel_numbers(id),
  phone TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (channel_number_id, phone)
);
