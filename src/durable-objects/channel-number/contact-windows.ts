import type { ContactWindow } from "./contract";
import type { NumberStorage } from "./number-storage";

/** The operator only delivers free-form text within 24 hours of the contact's last message. */
export const CUSTOMER_SERVICE_WINDOW_MS = 24 * 60 * 60_000;
const KEEP_CONTACTS_MS = 30 * 24 * 60 * 60_000;
const PURGE_BATCH = 1_000;
/** An alias learnt from inbound messages is written again at most once a day (it lives 30 days from its last write). */
const ALIAS_REFRESH_MS = 24 * 60 * 60_000;
/** Identity changes followed in a row (a user who changed number twice): bounded, so that a cycle ends. */
const MAX_MOVES = 4;

/**
 * Who last wrote to this number, and when: the customer-service window. A contact is its phone
 * number, or its business-scoped user id when the operator withholds the number
 * (messages/recipient.ts).
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
  createAliasesByWaIdIndex(sql);
}

/**
 * A failure reported without our jobId names the operator's id of the recipient: the reverse lookup
 * (recipientsKnownAs) must not scan the aliases. One index row per alias, written only when an alias
 * is (rare: the operator's id differs from the number sent to, refreshed at most daily).
 */
export function createAliasesByWaIdIndex(sql: SqlStorage): void {
  sql.exec("CREATE INDEX IF NOT EXISTS recipient_aliases_by_wa_id ON recipient_aliases (wa_id)");
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

/**
 * A user who wrote with both a phone number and a user id: a send to the user id finds the window
 * of the phone number (the contact's key). Written only when new, changed, or a day old, so that
 * the user's every message does not write it again.
 */
export function noteUserId(storage: NumberStorage, userId: string, phone: string, at: number): void {
  if (userId === phone) return;
  const sql = contactsOf(storage);
  const known = sql
    .exec<{ wa_id: string; updated_at: number }>(
      "SELECT wa_id, updated_at FROM recipient_aliases WHERE recipient = ?",
      userId,
    )
    .toArray()[0];
  if (known && known.wa_id === phone && known.updated_at > at - ALIAS_REFRESH_MS) return;
  noteAlias(storage, userId, phone, at);
}

/**
 * A user's identity changes (the operator's `system` messages): a phone number changed for
 * another, a user id for another. Kept apart from recipient_aliases: an alias is another name of
 * the same reachable contact, and a send keeps going to what the customer wrote; a moved id no
 * longer reaches the user, so a send to it goes to the id it moved to (`currentIdOf`).
 * Bound: one row per change (~120 B with its age-index entry; users rarely change number), purged
 * 30 days after the change.
 * Created when the first change arrives.
 */
function movesOf(storage: NumberStorage): SqlStorage {
  const sql = contactsOf(storage);
  if (!storage.hasTable("identity_moves")) {
    sql.exec(
      "CREATE TABLE IF NOT EXISTS identity_moves (old_id TEXT PRIMARY KEY, new_id TEXT NOT NULL, moved_at INTEGER NOT NULL) WITHOUT ROWID",
    );
    sql.exec("CREATE INDEX IF NOT EXISTS identity_moves_by_age ON identity_moves (moved_at)");
  }
  return sql;
}

/** Remembers that `oldId` became `newId` at `at` (a later report of an older change does not undo a newer one). */
export function noteMove(storage: NumberStorage, oldId: string, newId: string, at: number): void {
  if (oldId === newId) return;
  movesOf(storage).exec(
    `INSERT INTO identity_moves (old_id, new_id, moved_at) VALUES (?, ?, ?)
     ON CONFLICT (old_id) DO UPDATE SET new_id = excluded.new_id, moved_at = excluded.moved_at
     WHERE excluded.moved_at >= identity_moves.moved_at`,
    oldId,
    newId,
    at,
  );
}

const movedTo = (storage: NumberStorage, id: string): string | undefined =>
  storage.hasTable("identity_moves")
    ? storage.sql.exec<{ new_id: string }>("SELECT new_id FROM identity_moves WHERE old_id = ?", id).toArray()[0]
        ?.new_id
    : undefined;

/** The ids `id` went by since (itself first, then each id it moved to, at most MAX_MOVES). */
function idsSince(storage: NumberStorage, id: string): string[] {
  const ids = [id];
  for (let next = movedTo(storage, id); next !== undefined && ids.length <= MAX_MOVES && !ids.includes(next);) {
    ids.push(next);
    next = movedTo(storage, next);
  }
  return ids;
}

/** Where a send to `id` goes: the id the user moved to last (itself when it never moved). */
export const currentIdOf = (storage: NumberStorage, id: string): string => idsSince(storage, id).at(-1)!;

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

/**
 * The window with `phone` (a phone number or a user id), matched directly, through the operator's
 * id for it, or through the ids it moved to: the latest message of any of them.
 */
export function contactWindow(storage: NumberStorage, phone: string, at: number): ContactWindow {
  if (!storage.hasTable("contacts")) return { phone, lastInboundAt: null, windowExpiresAt: null, windowOpen: false };
  const sql = storage.sql;
  const lookup = (p: string) =>
    sql.exec<{ last_inbound_at: number }>("SELECT last_inbound_at FROM contacts WHERE phone = ?", p).toArray()[0]
      ?.last_inbound_at;
  let last: number | undefined;
  for (const id of idsSince(storage, phone)) {
    const alias = aliasOf(sql, id);
    for (const t of [lookup(id), alias === undefined ? undefined : lookup(alias)])
      if (t !== undefined && (last === undefined || t > last)) last = t;
  }
  const row = last === undefined ? undefined : { last_inbound_at: last };
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
  const moved = storage.hasTable("identity_moves")
    ? sql.exec<{ at: number | null }>("SELECT MIN(moved_at) AS at FROM identity_moves").one().at
    : null;
  const times = [contact, alias, moved].filter((t): t is number => t !== null);
  return times.length === 0 ? null : Math.min(...times) + KEEP_CONTACTS_MS;
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
  if (storage.hasTable("identity_moves"))
    sql.exec(
      "DELETE FROM identity_moves WHERE old_id IN (SELECT old_id FROM identity_moves WHERE moved_at < ? ORDER BY moved_at LIMIT ?)",
      at - KEEP_CONTACTS_MS,
      PURGE_BATCH,
    );
}
