import type { ContactWindow } from "./contract";

/** The operator only delivers free-form text within 24 hours of the contact's last message. */
export const CUSTOMER_SERVICE_WINDOW_MS = 24 * 60 * 60_000;
const KEEP_CONTACTS_MS = 30 * 24 * 60 * 60_000;
const PURGE_BATCH = 1_000;

/**
 * Who last wrote to this number, and when: the customer-service window.
 * Bound: one row per contact (~60 B); contacts silent for 30 days are purged
 * in batches (index on last_inbound_at).
 */
export function createContactsTable(sql: SqlStorage): void {
  sql.exec(`
    CREATE TABLE IF NOT EXISTS contacts (phone TEXT PRIMARY KEY, last_inbound_at INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS contacts_by_last_inbound ON contacts (last_inbound_at);
  `);
}

export function noteInbound(sql: SqlStorage, phone: string, at: number): void {
  sql.exec(
    `INSERT INTO contacts (phone, last_inbound_at) VALUES (?, ?)
     ON CONFLICT (phone) DO UPDATE SET last_inbound_at = MAX(last_inbound_at, excluded.last_inbound_at)`,
    phone,
    at,
  );
}

export function contactWindow(sql: SqlStorage, phone: string, at: number): ContactWindow {
  const row = sql.exec<{ last_inbound_at: number }>("SELECT last_inbound_at FROM contacts WHERE phone = ?", phone).toArray()[0];
  const expires = row ? row.last_inbound_at + CUSTOMER_SERVICE_WINDOW_MS : null;
  return {
    phone,
    lastInboundAt: row ? new Date(row.last_inbound_at).toISOString() : null,
    windowExpiresAt: expires === null ? null : new Date(expires).toISOString(),
    windowOpen: expires !== null && expires > at,
  };
}

export const nextContactExpiry = (sql: SqlStorage): number | null => {
  const at = sql.exec<{ at: number | null }>("SELECT MIN(last_inbound_at) AS at FROM contacts").one().at;
  return at === null ? null : at + KEEP_CONTACTS_MS;
};

export function purgeSilentContacts(sql: SqlStorage, at: number): void {
  sql.exec(
    "DELETE FROM contacts WHERE phone IN (SELECT phone FROM contacts WHERE last_inbound_at < ? ORDER BY last_inbound_at LIMIT ?)",
    at - KEEP_CONTACTS_MS,
    PURGE_BATCH,
  );
}
