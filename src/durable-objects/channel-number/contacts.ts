import type { ContactWindow } from "./contract";
import type { NumberStorage } from "./number-storage";

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
    -- The operator's own id for a recipient when it differs from the number the customer sent to
    -- (contacts[].wa_id of a send: e.g. Brazilian and Mexican prefixes). Inbound messages come from that id.
    -- Bound: one row per such recipient (~60 B), purged with the contacts (30 days without a send).
    CREATE TABLE IF NOT EXISTS recipient_aliases (recipient TEXT PRIMARY KEY, wa_id TEXT NOT NULL, updated_at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS recipient_aliases_by_age ON recipient_aliases (updated_at);
  `);
}

const contactsOf = (storage: NumberStorage): SqlStorage => {
  const sql = storage.ensure();
  if (!storage.hasTable("contacts")) createContactsTable(sql);
  return sql;
};

/** Remembers that the operator knows `recipient` as `waId`. */
export function noteAlias(storage: NumberStorage, recipient: string, waId: string, at: number): void {
  if (recipient === waId) return;
  const sql = contactsOf(storage);
  sql.exec(
    "INSERT INTO recipient_aliases (recipient, wa_id, updated_at) VALUES (?, ?, ?) ON CONFLICT (recipient) DO UPDATE SET wa_id = excluded.wa_id, updated_at = excluded.updated_at",
    recipient,
    waId,
    at,
  );
}

const aliasOf = (sql: SqlStorage, recipient: string): string | undefined =>
  sql.exec<{ wa_id: string }>("SELECT wa_id FROM recipient_aliases WHERE recipient = ?", recipient).toArray()[0]?.wa_id;

/** The recipients the operator knows as `waId` (its `recipient_id` in a status): a reverse lookup, rare (reports without our jobId). */
export function recipientsKnownAs(storage: NumberStorage, waId: string): string[] {
  if (!storage.hasTable("recipient_aliases")) return [];
  return storage.sql
    .exec<{ recipient: string }>("SELECT recipient FROM recipient_aliases WHERE wa_id = ? LIMIT 10", waId)
    .toArray()
    .map((r) => r.recipient);
}

export function noteInbound(storage: NumberStorage, phone: string, at: number): void {
  contactsOf(storage).exec(
    `INSERT INTO contacts (phone, last_inbound_at) VALUES (?, ?)
     ON CONFLICT (phone) DO UPDATE SET last_inbound_at = MAX(last_inbound_at, excluded.last_inbound_at)`,
    phone,
    at,
  );
}

/** The window with `phone`, matched directly or through the operator's id for it. */
export function contactWindow(storage: NumberStorage, phone: string, at: number): ContactWindow {
  if (!storage.hasTable("contacts")) return { phone, lastInboundAt: null, windowExpiresAt: null, windowOpen: false };
  const sql = storage.sql;
  const lookup = (p: string) =>
    sql.exec<{ last_inbound_at: number }>("SELECT last_inbound_at FROM contacts WHERE phone = ?", p).toArray()[0];
  const alias = aliasOf(sql, phone);
  const row = lookup(phone) ?? (alias ? lookup(alias) : undefined);
  const expires = row ? row.last_inbound_at + CUSTOMER_SERVICE_WINDOW_MS : null;
  return {
    phone,
    lastInboundAt: row ? new Date(row.last_inbound_at).toISOString() : null,
    windowExpiresAt: expires === null ? null : new Date(expires).toISOString(),
    windowOpen: expires !== null && expires > at,
  };
}

export const nextContactExpiry = (storage: NumberStorage): number | null => {
  if (!storage.hasTable("contacts")) return null;
  const sql = storage.sql;
  const contact = sql.exec<{ at: number | null }>("SELECT MIN(last_inbound_at) AS at FROM contacts").one().at;
  const alias = sql.exec<{ at: number | null }>("SELECT MIN(updated_at) AS at FROM recipient_aliases").one().at;
  const at = contact === null ? alias : alias === null ? contact : Math.min(contact, alias);
  return at === null ? null : at + KEEP_CONTACTS_MS;
};

export function purgeSilentContacts(storage: NumberStorage, at: number): void {
  if (!storage.hasTable("contacts")) return;
  const sql = storage.sql;
  sql.exec(
    "DELETE FROM contacts WHERE phone IN (SELECT phone FROM contacts WHERE last_inbound_at < ? ORDER BY last_inbound_at LIMIT ?)",
    at - KEEP_CONTACTS_MS,
    PURGE_BATCH,
  );
  sql.exec(
    "DELETE FROM recipient_aliases WHERE recipient IN (SELECT recipient FROM recipient_aliases WHERE updated_at < ? ORDER BY updated_at LIMIT ?)",
    at - KEEP_CONTACTS_MS,
    PURGE_BATCH,
  );
}
