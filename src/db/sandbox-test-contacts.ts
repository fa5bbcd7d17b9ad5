/**
 * Test contacts of a sandbox number: recipients the sandbox sends to outside
 * the 24-hour window. Bounded like the operator's own test numbers: a handful per number.
 */
export const MAX_TEST_CONTACTS_PER_NUMBER = 10;

export interface TestContactRow {
  phone: string;
  created_at: string;
}

export async function listTestContacts(db: D1Database, channelNumberId: string): Promise<TestContactRow[]> {
  const { results } = await db
    .prepare(
      "SELECT phone, created_at FROM sandbox_test_contacts WHERE channel_number_id = ? ORDER BY created_at, phone",
    )
    .bind(channelNumberId)
    .all<TestContactRow>();
  return results;
}

export async function isTestContact(db: D1Database, channelNumberId: string, phone: string): Promise<boolean> {
  return (
    (await db
      .prepare("SELECT 1 AS ok FROM sandbox_test_contacts WHERE channel_number_id = ? AND phone = ?")
      .bind(channelNumberId, phone)
      .first("ok")) !== null
  );
}

/**
 * Adds one; the bound is checked in the same statement, so concurrent adds cannot pass it.
 * `exists` when it was already there (adding again changes nothing).
 */
export async function addTestContact(
  db: D1Database,
  channelNumberId: string,
  phone: string,
  at: string,
): Promise<"added" | "exists" | "full"> {
  const res = await db
    .prepare(
      `INSERT OR IGNORE INTO sandbox_test_contacts (channel_number_id, phone, created_at)
       SELECT ?1, ?2, ?3 WHERE (SELECT COUNT(*) FROM sandbox_test_contacts WHERE channel_number_id = ?1) < ?4`,
    )
    .bind(channelNumberId, phone, at, MAX_TEST_CONTACTS_PER_NUMBER)
    .run();
  if (res.meta.changes > 0) return "added";
  return (await isTestContact(db, channelNumberId, phone)) ? "exists" : "full";
}

export async function removeTestContact(db: D1Database, channelNumberId: string, phone: string): Promise<boolean> {
  const res = await db
    .prepare("DELETE FROM sandbox_test_contacts WHERE channel_number_id = ? AND phone = ?")
    .bind(channelNumberId, phone)
    .run();
  return res.meta.changes > 0;
}
